package cmd

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type result struct {
	code     int
	out, err string
}

func run(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, IO{
		In: strings.NewReader(""), Out: &out, Err: &errb,
		Getenv: func(k string) string { return env[k] },
	})
	return result{code, out.String(), errb.String()}
}

func TestUsageErrorsExit2WithOneLine(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"bogus"},
		{"migrate", "--bogus"},
		{"migrate", "extra-arg"},
		{"migrate", "--schema", "bad name"},
		{"migrate", "--dsn", "postgres://u:hunter2@[oops"},
		{"--no-such-flag"},
	} {
		checkUsageError(t, "hunter2", args...)
	}
}

// checkUsageError runs args and checks the run ends as bad usage: exit 2, one line
// on stderr, secret not in it.
func checkUsageError(t *testing.T, secret string, args ...string) {
	t.Helper()
	r := run(t, nil, args...)
	if r.code != ExitUsage {
		t.Errorf("%v: exit %d, want 2 (stderr %q)", args, r.code, r.err)
	}
	if lines := strings.Count(strings.TrimSpace(r.err), "\n"); lines != 0 || r.err == "" {
		t.Errorf("%v: want one stderr line, got %q", args, r.err)
	}
	if strings.Contains(r.err, secret) {
		t.Errorf("%v: password echoed: %q", args, r.err)
	}
}

func TestEnvironmentSetsFlagsButFlagsWin(t *testing.T) {
	t.Parallel()
	// The env value is invalid, so using it fails with exit 2 naming the variable...
	r := run(t, map[string]string{"OUTBOXTOP_SCHEMA": "bad name", "OUTBOXTOP_DSN": "postgres://127.0.0.1:1/x"}, "migrate")
	if r.code != ExitUsage || !strings.Contains(r.err, "--schema") {
		t.Fatalf("env schema: exit %d, %q", r.code, r.err)
	}
	// ...while an explicit flag overrides it (and then fails only on the connection).
	r = run(t, map[string]string{"OUTBOXTOP_SCHEMA": "bad name", "OUTBOXTOP_DSN": "postgres://127.0.0.1:1/x"}, "migrate", "--schema", "ok")
	if r.code != ExitFailure || !strings.Contains(r.err, "127.0.0.1:1") {
		t.Fatalf("flag over env: exit %d, %q", r.code, r.err)
	}
	r = run(t, map[string]string{"OUTBOXTOP_CONNECT_TIMEOUT": "soon"}, "migrate")
	if r.code != ExitUsage || !strings.Contains(r.err, "OUTBOXTOP_CONNECT_TIMEOUT") {
		t.Fatalf("bad env duration: exit %d, %q", r.code, r.err)
	}
}

func TestMigrateUsesDatabaseURLAndIsIdempotent(t *testing.T) {
	t.Parallel()
	dsn := testenv.EmptyDB(t)
	env := map[string]string{"DATABASE_URL": dsn}
	r := run(t, env, "migrate")
	if r.code != ExitOK || !strings.Contains(r.out, "migrated from version 0") {
		t.Fatalf("first migrate: exit %d out %q err %q", r.code, r.out, r.err)
	}
	r = run(t, env, "migrate")
	if r.code != ExitOK || !strings.Contains(r.out, "up to date") {
		t.Fatalf("second migrate: exit %d out %q err %q", r.code, r.out, r.err)
	}
}

func TestUnreachableDatabaseFailsFast(t *testing.T) {
	t.Parallel()
	// A server that accepts TCP but never speaks: only the connect timeout ends this.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	start := time.Now()
	r := run(t, nil, "migrate", "--dsn", "postgres://u:pw@"+l.Addr().String()+"/x", "--connect-timeout", "1s")
	if r.code != ExitFailure {
		t.Fatalf("exit %d, want 1: %q", r.code, r.err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Fatalf("took %v", elapsed)
	}
	if strings.Count(strings.TrimSpace(r.err), "\n") != 0 || !strings.Contains(r.err, "cannot connect to PostgreSQL") || strings.Contains(r.err, "pw@") {
		t.Fatalf("stderr %q", r.err)
	}
}

func TestVersionAndHelp(t *testing.T) {
	t.Parallel()
	if r := run(t, nil, "version"); r.code != 0 || !strings.HasPrefix(r.out, "outboxtop ") {
		t.Fatalf("version: %+v", r)
	}
	if r := run(t, nil, "help"); r.code != 0 || !strings.Contains(r.out, "migrate") {
		t.Fatalf("help: %+v", r)
	}
}

// The three ways to run the relay and the console are commands, each with its
// own --help; --headless and --no-relay stay as their old names.
func TestRelayConsoleAndWatchAreCommands(t *testing.T) {
	t.Parallel()
	help := func(args ...string) string {
		t.Helper()
		r := run(t, nil, append(args, "--help-all")...)
		if r.code != ExitOK {
			t.Fatalf("%v --help: exit %d, %s", args, r.code, r.err)
		}
		return r.out + r.err
	}
	relay, watch, console := help("relay"), help("watch"), help("console")
	for _, c := range []struct {
		what, text  string
		has, hasNot []string
	}{
		{"relay", relay, []string{"--batch-size", "--drain", "--metrics-addr", "--brokers", "--archive-after", "--fleet", "--outbox"}, []string{"--read-only", "--actor", "--no-relay", "--headless"}},
		{"watch", watch, []string{"--read-only", "--actor", "--fleet", "--brokers", "--dsn"}, []string{"--batch-size", "--lease", "--drain", "--headless", "--no-relay", "--archive-after"}},
		{"console", console, []string{"--read-only", "--batch-size", "--headless", "--no-relay"}, nil},
	} {
		for _, f := range c.has {
			if !strings.Contains(c.text, f+" ") && !strings.Contains(c.text, f+"[") {
				t.Errorf("outboxtop %s --help does not list %s", c.what, f)
			}
		}
		for _, f := range c.hasNot {
			if strings.Contains(c.text, f+" ") || strings.Contains(c.text, f+"[") {
				t.Errorf("outboxtop %s --help lists %s, which it does not read", c.what, f)
			}
		}
	}
	for _, args := range [][]string{
		{"relay", "--read-only"},
		{"watch", "--batch-size", "10"},
		{"watch", "--drain"},
	} {
		checkUsageError(t, "hunter2", args...)
	}
	root := run(t, nil, "help")
	for _, c := range []string{"relay", "watch", "console"} {
		if !strings.Contains(root.out, "\n  "+c+" ") {
			t.Errorf("outboxtop help does not list the %s command:\n%s", c, root.out)
		}
	}
}

// Every command's --help fits one 80×40 screen, and --help-all shows every
// flag the command has, each once.
func TestHelpFitsOneScreen(t *testing.T) {
	t.Parallel()
	names := []string{""}
	for _, c := range commands() {
		if c.run != nil {
			names = append(names, c.name)
		}
	}
	for _, name := range names {
		args := []string{}
		if name != "" {
			args = append(args, name)
		}
		r := run(t, nil, append(args, "--help")...)
		if r.code != ExitOK {
			t.Errorf("%q --help: exit %d: %s", name, r.code, r.err)
			continue
		}
		text := r.out + r.err
		lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
		if len(lines) > 40 {
			t.Errorf("%q --help is %d lines, more than one 80×40 screen:\n%s", name, len(lines), text)
		}
		for _, l := range lines {
			if n := len([]rune(l)); n > 80 {
				t.Errorf("%q --help has a line of %d columns: %q", name, n, l)
			}
		}
		// --help-all: each flag once, the ones --help shows and as many
		// under each heading as --help counts.
		all := run(t, nil, append(args, "--help-all")...)
		allText := all.out + all.err
		flagLine := regexp.MustCompile(`(?m)^  (?:-\w, )?--([a-z0-9-]+)`)
		seen := map[string]int{}
		for _, m := range flagLine.FindAllStringSubmatch(allText, -1) {
			seen[m[1]]++
		}
		for f, n := range seen {
			if n != 1 {
				t.Errorf("%q --help-all shows --%s %d times", name, f, n)
			}
		}
		for _, m := range flagLine.FindAllStringSubmatch(text, -1) {
			if seen[m[1]] == 0 {
				t.Errorf("%q --help shows --%s, --help-all does not", name, m[1])
			}
		}
		for _, m := range regexp.MustCompile(`(?m)^  (.+): (\d+) flags$`).FindAllStringSubmatch(text, -1) {
			i := strings.Index(allText, "\n"+m[1]+":\n")
			if i < 0 {
				t.Errorf("%q --help-all has no heading %q", name, m[1])
				continue
			}
			section := allText[i+len(m[1])+3:]
			if j := strings.Index(section, "\n\n"); j >= 0 {
				section = section[:j]
			}
			if got := len(flagLine.FindAllString(section, -1)); fmt.Sprint(got) != m[2] {
				t.Errorf("%q: --help counts %s flags under %q, --help-all shows %d", name, m[2], m[1], got)
			}
		}
	}
}
