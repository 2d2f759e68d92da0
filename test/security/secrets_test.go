package security

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/outboxtop/outboxtop/internal/cmd"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

const (
	dbSecret   = "Db-Secret-7Hq2"
	saslSecret = "Sasl-Secret-4Kw9"
)

// run runs outboxtop in process and returns everything it wrote.
func run(t *testing.T, ctx context.Context, env map[string]string, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cmd.Run(ctx, args, cmd.IO{In: strings.NewReader(""), Out: &out, Err: &errb,
		Getenv: func(k string) string { return env[k] }})
	return code, out.String() + errb.String()
}

func assertNoSecret(t *testing.T, what, output string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(output, s) || strings.Contains(output, url.QueryEscape(s)) {
			t.Errorf("%s: output shows the secret %q:\n%s", what, s, output)
		}
	}
}

// withPassword puts password into a test DSN (the test cluster trusts local
// connections, so it is accepted and ignored: the run succeeds with it in hand).
func withPassword(t *testing.T, dsn, password string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String()
}

// TestSecretsStayOut: DSN and SASL passwords never show in what the commands
// print — errors, status output, relay logs at debug level — whether the
// connection fails, the input is malformed or everything works.
func TestSecretsStayOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	unreachable := "postgres://app:" + dbSecret + "@127.0.0.1:1/orders?connect_timeout=2"
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want int
	}{
		{"status, unreachable, --dsn", nil, []string{"status", "--dsn", unreachable}, cmd.ExitUnknown},
		{"status --json, unreachable, DATABASE_URL", map[string]string{"DATABASE_URL": unreachable}, []string{"status", "--json"}, cmd.ExitUnknown},
		{"migrate, unreachable, OUTBOXTOP_DSN", map[string]string{"OUTBOXTOP_DSN": unreachable}, []string{"migrate"}, cmd.ExitFailure},
		{"events, key=value DSN", nil, []string{"events", "--state", "failed", "--dsn", "host=127.0.0.1 port=1 user=app password=" + dbSecret + " connect_timeout=2"}, cmd.ExitFailure},
		{"migrate, password with a space (parse error)", nil, []string{"migrate", "--dsn", "postgres://app:" + dbSecret + " x@db.example/orders"}, cmd.ExitUsage},
		{"migrate, bad port (parse error)", nil, []string{"migrate", "--dsn", "postgres://app:" + dbSecret + "@db.example:99999/orders"}, cmd.ExitUsage},
		{"retry, key=value parse error", nil, []string{"retry", "--all", "--yes", "--dsn", "password='" + dbSecret + " host=h"}, cmd.ExitUsage},
		{"headless, unreachable, SASL from env", map[string]string{"OUTBOXTOP_KAFKA_SASL_PASSWORD": saslSecret},
			[]string{"--headless", "--dsn", unreachable, "--brokers", "127.0.0.1:1", "--kafka-sasl-mechanism", "scram-sha-512",
				"--kafka-sasl-user", "relay", "--log-level", "debug"}, cmd.ExitFailure},
	} {
		code, out := run(t, ctx, c.env, c.args...)
		if code != c.want {
			t.Errorf("%s: exit %d, want %d:\n%s", c.name, code, c.want, out)
		}
		assertNoSecret(t, c.name, out, dbSecret, saslSecret)
	}
}

// TestSecretsStayOutOfRelayLogs runs the headless relay at debug level against a
// broker that demands SASL: once with a wrong password (it retries, logging what
// fails) and once with the right one (it drains). Neither log holds a password.
func TestSecretsStayOutOfRelayLogs(t *testing.T) {
	t.Parallel()
	pool, plain := testenv.Pool(t)
	dsn := withPassword(t, plain, dbSecret)
	if _, err := pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'o-' || g, 'Placed', '{}' FROM generate_series(1, 10) g`); err != nil {
		t.Fatal(err)
	}
	const right = "Right-" + saslSecret
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", "relay", right))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	brokers := strings.Join(broker.ListenAddrs(), ",")
	code, out := run(t, context.Background(), nil, "status", "--json", "--dsn", dsn)
	if code != cmd.ExitOK {
		t.Fatalf("status: exit %d: %s", code, out)
	}
	assertNoSecret(t, "status --json", out, dbSecret)
	if code, out := run(t, context.Background(), nil, "events", "--state", "pending", "--dsn", dsn); code != cmd.ExitOK {
		t.Fatalf("events: exit %d: %s", code, out)
	} else {
		assertNoSecret(t, "events", out, dbSecret)
	}

	args := []string{"--headless", "--dsn", dsn, "--brokers", brokers, "--kafka-sasl-mechanism", "scram-sha-256",
		"--kafka-sasl-user", "relay", "--kafka-auto-create-topics", "--log-level", "debug", "--publish-timeout", "1s"}
	for _, format := range []string{"text", "json"} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, out := run(t, ctx, map[string]string{"OUTBOXTOP_KAFKA_SASL_PASSWORD": saslSecret}, append(args, "--log-format", format)...)
		cancel()
		if !strings.Contains(out, "relay starting") {
			t.Fatalf("no relay log captured:\n%s", out)
		}
		assertNoSecret(t, "headless, wrong SASL password, "+format, out, dbSecret, saslSecret)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, out = run(t, ctx, map[string]string{"OUTBOXTOP_KAFKA_SASL_PASSWORD": right}, append(args, "--drain", "--log-format", "json")...)
	if code != cmd.ExitOK {
		t.Fatalf("headless --drain with the right SASL password: exit %d:\n%s", code, out)
	}
	assertNoSecret(t, "headless, right SASL password", out, dbSecret, right)
	var published int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM outbox_event WHERE published_at IS NOT NULL").Scan(&published); err != nil || published != 10 {
		t.Errorf("published %d of 10 through SASL (%v)", published, err)
	}
}

// TestSecretFilesAreRefusedWhenOthersMayReadThem: a SASL password file or a TLS
// key that group or others can read, a file that is not regular (/dev/zero ran
// the process out of memory) and an oversized one are refused before anything is
// read or dialled, with the flag and the file named.
func TestSecretFilesAreRefusedWhenOthersMayReadThem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, data []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	open := write("open-password", []byte(saslSecret+"\n"), 0o644)
	group := write("group-password", []byte(saslSecret+"\n"), 0o640)
	big := write("big-password", bytes.Repeat([]byte("x"), 5000), 0o600)
	key := write("client.key", []byte("-----BEGIN PRIVATE KEY-----\n"), 0o644)
	base := []string{"--headless", "--dsn", "postgres://u@127.0.0.1:1/db", "--brokers", "127.0.0.1:1",
		"--kafka-sasl-mechanism", "scram-sha-512", "--kafka-sasl-user", "relay"}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"world-readable password", []string{"--kafka-sasl-password-file", open}, "--kafka-sasl-password-file " + open + ": readable or writable by group or others (mode 0644)"},
		{"group-readable password", []string{"--kafka-sasl-password-file", group}, "--kafka-sasl-password-file " + group + ": readable or writable by group or others (mode 0640)"},
		{"/dev/zero", []string{"--kafka-sasl-password-file", "/dev/zero"}, "--kafka-sasl-password-file /dev/zero: not a regular file"},
		{"oversized password", []string{"--kafka-sasl-password-file", big}, "--kafka-sasl-password-file " + big + ": larger than 4096 bytes"},
		{"world-readable TLS key", []string{"--kafka-tls-cert", key, "--kafka-tls-key", key}, "--kafka-tls-key " + key + ": readable or writable by group or others (mode 0644)"},
	} {
		var out, errb bytes.Buffer
		code := cmd.Run(context.Background(), append(append([]string{}, base...), c.args...),
			cmd.IO{Out: &out, Err: &errb, Getenv: func(string) string { return "" }})
		if code != cmd.ExitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%s: exit %d, stderr %q; want a usage error with %q", c.name, code, errb.String(), c.want)
		}
		if strings.Contains(out.String()+errb.String(), saslSecret) {
			t.Errorf("%s: the password was printed", c.name)
		}
	}
}
