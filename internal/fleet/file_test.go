package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestLoadReadsOutboxesAndResolvesTheirDSN(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "billing.dsn"), []byte("postgres://billing:s3cret@db2/billing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "fleet.toml")
	text := `poll_interval = "10s"
lag_timeout = "8s"

[[outbox]]
name = "orders"
dsn_env = "ORDERS_DSN"
schema = "outbox"
brokers = ["k1:9092", "k2:9092"]
groups = ["shipping"]
labels = { team = "payments", tier = "1" }
timeout = "1s"

[[outbox]]
name = "billing"
dsn_file = "billing.dsn"

[[outbox]]
name = "search"
dsn = "host=db3 dbname=search user=reader"
poll_interval = "2s"
lag_timeout = "2s"
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path, env("ORDERS_DSN", "postgres://orders:pw@db1/orders"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Outboxes) != 3 {
		t.Fatalf("outboxes %+v", f.Outboxes)
	}
	o, b, s := f.Outboxes[0], f.Outboxes[1], f.Outboxes[2]
	if o.Name != "orders" || o.Schema != "outbox" || o.DSN() != "postgres://orders:pw@db1/orders" || len(o.Brokers) != 2 ||
		o.Groups[0] != "shipping" || o.Labels["team"] != "payments" || o.Timeout != time.Second || o.PollInterval != 10*time.Second ||
		o.LagTimeout != 8*time.Second || f.Outboxes[2].LagTimeout != 2*time.Second {
		t.Errorf("orders %+v", o)
	}
	if b.DSN() != "postgres://billing:s3cret@db2/billing" || b.Schema != "public" || b.Timeout != DefaultTimeout || b.PollInterval != 10*time.Second {
		t.Errorf("billing %+v", b)
	}
	if s.DSN() != "host=db3 dbname=search user=reader" || s.PollInterval != 2*time.Second {
		t.Errorf("search %+v", s)
	}
	if !o.Match("orders") || !o.Match("team=payments") || o.Match("team=search") || o.Match("billing") || o.LabelString() != "team=payments,tier=1" {
		t.Errorf("match/labels of %+v", o)
	}
}

func TestLoadRefusesWithOneLineNamingFileAndOutbox(t *testing.T) {
	t.Parallel()
	getenv := env("SET", "postgres://u@h/db", "BAD", "postgres://u:hunter2@[oops")
	for _, c := range []struct {
		name, text string
		want       []string // in the error
	}{
		{"unknown key", "[[outbox]]\nname = \"orders\"\ndns_env = \"SET\"\n", []string{`outbox "orders"`, `unknown key "dns_env"`}},
		{"unknown top key", "pol_interval = \"1s\"\n[[outbox]]\nname = \"a\"\ndsn_env = \"SET\"\n", []string{`unknown key "pol_interval"`}},
		{"duplicate", "[[outbox]]\nname = \"a\"\ndsn_env = \"SET\"\n[[outbox]]\nname = \"a\"\ndsn_env = \"SET\"\n", []string{`outbox "a"`, "duplicate name"}},
		{"duplicate but for case", "[[outbox]]\nname = \"orders\"\ndsn_env = \"SET\"\n[[outbox]]\nname = \"Orders\"\ndsn_env = \"SET\"\n", []string{`outbox "Orders"`, `duplicate name (as "orders" reads)`}},
		{"no dsn", "[[outbox]]\nname = \"orders\"\nschema = \"public\"\n", []string{`outbox "orders"`, "no connection string"}},
		{"unset env", "[[outbox]]\nname = \"orders\"\ndsn_env = \"UNSET\"\n", []string{`outbox "orders"`, "UNSET is not set"}},
		{"missing file", "[[outbox]]\nname = \"orders\"\ndsn_file = \"nope.dsn\"\n", []string{`outbox "orders"`, "dsn_file", "no such file"}},
		{"inline password url", "[[outbox]]\nname = \"orders\"\ndsn = \"postgres://u:hunter2@h/db\"\n", []string{`outbox "orders"`, "carries a password"}},
		{"inline password kv", "[[outbox]]\nname = \"orders\"\ndsn = \"host=h password=hunter2\"\n", []string{`outbox "orders"`, "carries a password"}},
		{"inline password query", "[[outbox]]\nname = \"orders\"\ndsn = \"postgres://u@h/db?password=hunter2\"\n", []string{`outbox "orders"`, "carries a password"}},
		{"inline sslpassword kv", "[[outbox]]\nname = \"orders\"\ndsn = \"host=h sslpassword=hunter2\"\n", []string{`outbox "orders"`, "carries a password", "sslpassword="}},
		{"inline sslpassword query", "[[outbox]]\nname = \"orders\"\ndsn = \"postgres://u@h/db?sslpassword=hunter2\"\n", []string{`outbox "orders"`, "carries a password"}},
		{"two dsns", "[[outbox]]\nname = \"orders\"\ndsn = \"host=h\"\ndsn_env = \"SET\"\n", []string{`outbox "orders"`, "one of"}},
		{"bad schema", "[[outbox]]\nname = \"orders\"\ndsn_env = \"SET\"\nschema = \"bad name\"\n", []string{`outbox "orders"`, "schema"}},
		{"no name", "[[outbox]]\ndsn_env = \"SET\"\n", []string{"outbox #1", "name is missing"}},
		{"bad duration", "[[outbox]]\nname = \"o\"\ndsn_env = \"SET\"\ntimeout = \"soon\"\n", []string{"duration"}},
		{"empty", "# nothing\n", []string{"no outboxes"}},
		{"not toml", "[[outbox]\n", []string{"fleet.toml"}},
		{"outbox not array", "[outbox]\nname = \"o\"\n", []string{"[[outbox]]"}},
		{"bad dsn", "[[outbox]]\nname = \"orders\"\ndsn_env = \"BAD\"\n", []string{`outbox "orders"`, "does not parse"}},
	} {
		path := filepath.Join(t.TempDir(), "fleet.toml")
		_, err := Parse(path, c.text, getenv)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, path+": ") || strings.Contains(msg, "hunter2") {
			t.Errorf("%s: %q: want one line starting with the file, no secret", c.name, msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q lacks %q", c.name, msg, w)
			}
		}
	}
}

func TestOperatorsLimitKeysToOutboxes(t *testing.T) {
	t.Parallel()
	text := `[[outbox]]
name = "orders"
dsn_env = "SET"
labels = { team = "payments" }
[[outbox]]
name = "billing"
dsn_env = "SET"
labels = { team = "payments" }
[[outbox]]
name = "search"
dsn_env = "SET"
[[operator]]
fingerprint = "SHA256:onlyorders0000000000000000"
outboxes = ["orders"]
[[operator]]
fingerprint = "SHA256:payments00000000000000000"
outboxes = ["team=payments"]
`
	f, err := Parse("fleet.toml", text, env("SET", "host=h"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		fp, outbox string
		want       bool
	}{
		{"SHA256:onlyorders0000000000000000", "orders", true},
		{"SHA256:onlyorders0000000000000000", "billing", false},
		{"SHA256:onlyorders0000000000000000", "search", false},
		{"SHA256:payments00000000000000000", "billing", true},
		{"SHA256:payments00000000000000000", "search", false},
		{"SHA256:unlimited0000000000000000", "search", true},
		{"SHA256:unlimited0000000000000000", "nope", false},
	} {
		if got := f.MayAct(c.fp, c.outbox); got != c.want {
			t.Errorf("MayAct(%s, %s) = %v, want %v", c.fp, c.outbox, got, c.want)
		}
	}
	for _, bad := range []string{
		"[[operator]]\nfingerprint = \"abc\"\noutboxes = [\"orders\"]\n",
		"[[operator]]\nfingerprint = \"SHA256:onlyorders0000000000000000\"\n",
		"[[operator]]\nfingerprint = \"SHA256:onlyorders0000000000000000\"\noutboxes = [\"ordrs\"]\n",
		"[[operator]]\nfingerprint = \"SHA256:onlyorders0000000000000000\"\noutboxes = [\"orders\"]\nkey = \"x\"\n",
	} {
		if _, err := Parse("fleet.toml", "[[outbox]]\nname = \"orders\"\ndsn_env = \"SET\"\n"+bad, env("SET", "host=h")); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("accepted or not one line: %q: %v", bad, err)
		}
	}
}

// The fleet file docs/fleet.md shows is one this package reads.
func TestReadmeFleetFileParses(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "# Running many outboxes")
	_, block, ok2 := strings.Cut(section, "```toml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("no fleet file in docs/fleet.md")
	}
	dsnFile := filepath.Join(t.TempDir(), "billing.dsn")
	if err := os.WriteFile(dsnFile, []byte("host=db2 password=x"), 0o600); err != nil {
		t.Fatal(err)
	}
	block = strings.Replace(block, "/run/secrets/billing.dsn", dsnFile, 1)
	f, err := Parse("fleet.toml", block, env("ORDERS_DATABASE_URL", "postgres://u:p@db1/orders"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Outboxes) != 3 || len(f.Operators) != 1 || !f.MayAct(f.Operators[0].Fingerprint, "billing") || f.MayAct(f.Operators[0].Fingerprint, "search") {
		t.Errorf("docs/fleet.md's fleet: %+v", f)
	}
}

// A dsn_file holds a password: group or others may not read it, and a named
// pipe or a device is refused at once (the read would block, or never end); the
// fleet file itself must be a regular file too.
func TestDSNFileIsCheckedAsASecret(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := filepath.Join(dir, "open.dsn")
	if err := os.WriteFile(open, []byte("postgres://u:hunter2@h/db\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.dsn")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		open:        "dsn_file " + open + ": readable or writable by group or others (mode 0644): chmod 600 " + open,
		fifo:        "dsn_file " + fifo + ": not a regular file (a named pipe)",
		"/dev/zero": "dsn_file /dev/zero: not a regular file (a device)",
	} {
		done := make(chan error, 1)
		go func() {
			_, err := Parse(filepath.Join(dir, "fleet.toml"), "[[outbox]]\nname = \"orders\"\ndsn_file = \""+file+"\"\n", nil)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("dsn_file %s: %v, want %q", file, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("dsn_file %s: still reading after 5s", file)
		}
	}
	done := make(chan error, 1)
	go func() { _, err := Load(fifo, nil); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "fleet file "+fifo+": not a regular file (a named pipe)") {
			t.Errorf("a named pipe as the fleet file: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a named pipe as the fleet file: still reading after 5s")
	}
}
