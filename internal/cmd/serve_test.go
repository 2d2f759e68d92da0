package cmd

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"github.com/jackc/pgx/v5"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// logWatch is a command's stderr that wakes a waiter on every write.
type logWatch struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	close(w.changed)
	w.changed = make(chan struct{})
	return len(p), nil
}

// waitMatch waits for re in the log and returns its first submatch.
func (w *logWatch) waitMatch(t *testing.T, re *regexp.Regexp, exited <-chan int) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		w.mu.Lock()
		m, changed := re.FindStringSubmatch(w.buf.String()), w.changed
		w.mu.Unlock()
		if m != nil {
			return m[1]
		}
		select {
		case <-changed:
		case code := <-exited:
			t.Fatalf("serve exited %d:\n%s", code, w.String())
		case <-deadline:
			t.Fatalf("%v never logged:\n%s", re, w.String())
		}
	}
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestServeGivesStatusTextWithoutATerminalAndStopsOnCancel(t *testing.T) {
	t.Parallel()
	dsn := testenv.DB(t)
	dir := t.TempDir()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, gossh.MarshalAuthorizedKey(key.PublicKey()), 0o644); err != nil {
		t.Fatal(err)
	}
	hostKey := filepath.Join(dir, "host_key")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &logWatch{changed: make(chan struct{})}
	exited := make(chan int, 1)
	go func() {
		exited <- Run(ctx, []string{"serve", "--ssh-addr", "127.0.0.1:0", "--host-key", hostKey,
			"--authorized-keys", authorized, "--no-relay", "--dsn", dsn}, IO{
			In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: logs, Getenv: func(string) string { return "" },
		})
	}()
	fp := logs.waitMatch(t, regexp.MustCompile(`generated a new SSH host key".*fingerprint=(SHA256:\S+)`), exited)
	addr := logs.waitMatch(t, regexp.MustCompile(`serving the console over SSH" addr=(\S+)`), exited)

	client, err := gossh.Dial("tcp", addr, &gossh.ClientConfig{
		User: "oncall", Auth: []gossh.AuthMethod{gossh.PublicKeys(key)},
		HostKeyCallback: func(_ string, _ net.Addr, k gossh.PublicKey) error {
			if got := gossh.FingerprintSHA256(k); got != fp {
				t.Errorf("host key %s, logged %s", got, fp)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out, err := sess.Output("")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.HasPrefix(string(out), "OUTBOXTOP OK - ") || !statusLine.MatchString(firstLine(string(out))) ||
		!strings.Contains(string(out), "\noutboxtop status — schema public") {
		t.Errorf("status text:\n%s", out)
	}

	// The plugin line and the exit status are status's: WARNING (a failed
	// event) exits 1, CRITICAL (a ready event waiting 10 minutes) 2.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, c := range []struct {
		insert string
		code   int
		line   string
	}{
		{`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at, last_error)
			VALUES (gen_random_uuid(), 'order', 'f', 'OrderPlaced', '{}', now(), 'boom')`, ExitWarning, "OUTBOXTOP WARNING - "},
		{`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
			VALUES (gen_random_uuid(), 'order', 'r', 'OrderPlaced', '{}', now() - interval '10 minutes', now() - interval '10 minutes')`, ExitCritical, "OUTBOXTOP CRITICAL - "},
	} {
		if _, err := conn.Exec(ctx, c.insert); err != nil {
			t.Fatal(err)
		}
		sess, err := client.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		sess.Stdout, sess.Stderr = &stdout, &stderr
		err = sess.Run("status")
		var exit *gossh.ExitError
		if !errors.As(err, &exit) || exit.ExitStatus() != c.code {
			t.Errorf("ssh … status: %v, want exit status %d\n%s", err, c.code, stdout.String())
		}
		if line := firstLine(stdout.String()); !strings.HasPrefix(line, c.line) || !statusLine.MatchString(line) {
			t.Errorf("ssh … status: first line %q, want %q…", line, c.line)
		}
		if !strings.HasPrefix(stderr.String(), "outboxtop: "+strings.TrimSuffix(strings.TrimPrefix(c.line, "OUTBOXTOP "), " - ")+": ") {
			t.Errorf("ssh … status: stderr %q", stderr.String())
		}
	}

	cancel()
	select {
	case code := <-exited:
		if code != ExitOK {
			t.Errorf("exit %d:\n%s", code, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after its context ended")
	}
}

func TestServeUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"serve", "--authorized-keys", "k"},
		{"serve", "--host-key", filepath.Join(dir, "h")},
		{"serve", "--host-key", filepath.Join(dir, "h"), "--authorized-keys", "k", "--idle-timeout", "-1s"},
	} {
		if r := run(t, nil, args...); r.code != ExitUsage {
			t.Errorf("%v: exit %d, %q", args, r.code, r.err)
		}
	}
}
