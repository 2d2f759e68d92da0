package cmd

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	gossh "golang.org/x/crypto/ssh"

	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/relay"
)

// fleetFile writes a fleet of three outboxes: "orders" healthy (one event ready
// a moment ago), "billing" in a poison storm (40 failed events, each blocking its
// aggregate), "search" unreachable. It returns the file and the environment
// holding the two DSNs.
func fleetFile(t *testing.T) (string, map[string]string) {
	t.Helper()
	ctx := context.Background()
	orders, ordersDSN := testenv.Pool(t)
	billing, billingDSN := testenv.Pool(t)
	if _, err := orders.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		VALUES (gen_random_uuid(), 'order', '1', 'OrderPlaced', '{}')`); err != nil {
		t.Fatal(err)
	}
	if _, err := billing.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, attempts, failed_at, last_error)
		SELECT gen_random_uuid(), 'invoice', g::text, 'InvoiceIssued', '{}', now() - interval '20 minutes', 5, now(), e'MESSAGE_TOO_LARGE\x1b[31m'
		FROM generate_series(1, 40) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'invoice', g::text, 'InvoicePaid', '{}' FROM generate_series(1, 40) g`); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fleet.toml")
	text := `timeout = "3s"
[[outbox]]
name = "orders"
dsn_env = "ORDERS_DSN"
labels = { team = "payments" }
[[outbox]]
name = "billing"
dsn_env = "BILLING_DSN"
labels = { team = "payments" }
[[outbox]]
name = "search"
dsn = "postgres://outboxtop@127.0.0.1:1/search"
labels = { team = "discovery" }
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, map[string]string{"ORDERS_DSN": ordersDSN, "BILLING_DSN": billingDSN}
}

func TestStatusFleetOneLinePerOutboxWorstWins(t *testing.T) {
	t.Parallel()
	path, env := fleetFile(t)
	r := run(t, env, "status", "--fleet", path)
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if r.code != ExitUnknown || len(lines) != 4 {
		t.Fatalf("exit %d (want 3, an outbox is unreachable), out:\n%s\nerr: %s", r.code, r.out, r.err)
	}
	if !strings.HasPrefix(lines[0], "OUTBOXTOP UNKNOWN - 3 outboxes, UNKNOWN search, WARNING billing, OK orders |") ||
		!strings.Contains(lines[0], " billing_failed=40;0;;0") || !strings.Contains(lines[0], " orders_failed=0;0;;0") ||
		!statusLine.MatchString(lines[0]) {
		t.Errorf("summary %q", lines[0])
	}
	for k, want := range []string{"UNKNOWN  search: unreachable: ", "WARNING  billing: failed 40 > 0, blocked 40 > 0; publishable 0", "OK       orders: ok; publishable 1"} {
		if !strings.HasPrefix(lines[k+1], want) {
			t.Errorf("line %d %q, want prefix %q", k+1, lines[k+1], want)
		}
	}
	if strings.Contains(r.out, "\x1b") || strings.Contains(r.out, env["BILLING_DSN"]) {
		t.Errorf("escape or DSN in the output:\n%s", r.out)
	}
	if strings.TrimSpace(r.err) != "outboxtop: UNKNOWN: search UNKNOWN, billing WARNING" {
		t.Errorf("stderr %q", r.err)
	}

	// Without the unreachable one the worst is billing's WARNING; a stricter
	// threshold makes it CRITICAL, by the same flags as status of one outbox.
	text, _ := os.ReadFile(path)
	healthy := filepath.Join(t.TempDir(), "two.toml")
	before, _, _ := strings.Cut(string(text), "[[outbox]]\nname = \"search\"")
	if err := os.WriteFile(healthy, []byte(before), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{nil, ExitWarning},
		{[]string{"--crit-failed", "10"}, ExitCritical},
		{[]string{"--warn-failed", "-1", "--warn-blocked", "-1"}, ExitOK},
	} {
		r := run(t, env, append([]string{"status", "--fleet", healthy}, c.args...)...)
		if r.code != c.code || !statusLine.MatchString(firstLine(r.out)) {
			t.Errorf("%v: exit %d, want %d:\n%s", c.args, r.code, c.code, r.out)
		}
	}
	// OUTBOXTOP_FLEET is --fleet.
	env2 := map[string]string{"OUTBOXTOP_FLEET": healthy}
	for k, v := range env {
		env2[k] = v
	}
	if r := run(t, env2, "status", "--warn-failed", "-1", "--warn-blocked", "-1"); r.code != ExitOK || !strings.HasPrefix(r.out, "OUTBOXTOP OK - 2 outboxes, OK ") {
		t.Errorf("OUTBOXTOP_FLEET: exit %d\n%s", r.code, r.out)
	}
}

func TestStatusFleetJSONHasOneObjectPerOutbox(t *testing.T) {
	t.Parallel()
	path, env := fleetFile(t)
	r := run(t, env, "status", "--fleet", path, "--json", "--crit-failed", "10")
	if r.code != ExitUnknown {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.out, r.err)
	}
	var got struct {
		Fleet    string
		Level    string
		Healthy  bool
		Outboxes []struct {
			Name       string
			Reachable  bool
			Reason     string
			Level      string
			Failed     int64
			Blocked    int64
			Publish    int64 `json:"publishable"`
			Crossed    []string
			Labels     map[string]string
			Thresholds []struct{ Name string }
		}
	}
	if err := json.Unmarshal([]byte(r.out), &got); err != nil {
		t.Fatalf("json: %v\n%s", err, r.out)
	}
	if got.Fleet != path || got.Level != "UNKNOWN" || got.Healthy || len(got.Outboxes) != 3 {
		t.Fatalf("fleet %+v", got)
	}
	s, b, o := got.Outboxes[0], got.Outboxes[1], got.Outboxes[2]
	if s.Name != "search" || s.Reachable || s.Level != "UNKNOWN" || s.Reason == "" {
		t.Errorf("search %+v", s)
	}
	if b.Name != "billing" || !b.Reachable || b.Level != "CRITICAL" || b.Failed != 40 || b.Blocked != 40 ||
		len(b.Crossed) != 2 || b.Crossed[0] != "failed 40 > 10" || b.Labels["team"] != "payments" || len(b.Thresholds) != 4 ||
		b.Thresholds[3].Name != "xmin horizon" {
		t.Errorf("billing %+v", b)
	}
	if o.Name != "orders" || o.Level != "OK" || o.Publish != 1 {
		t.Errorf("orders %+v", o)
	}
}

func TestStatusFleetRefusesBadUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[[outbox]]\nname = \"orders\"\ndsn = \"postgres://u:hunter2@h/db\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"status", "--fleet", bad},
		{"status", "--fleet", filepath.Join(dir, "missing.toml")},
		{"status", "--fleet", bad, "--dsn", "postgres://u@h/db"},
		{"status", "--fleet", bad, "--groups", "billing"},
	} {
		r := run(t, nil, args...)
		if r.code != ExitStatusUsage || strings.Count(strings.TrimSpace(r.err), "\n") != 0 || strings.Contains(r.err, "hunter2") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.err)
		}
	}
	if r := run(t, nil, "status", "--fleet", bad); !strings.Contains(r.err, `outbox "orders"`) || !strings.Contains(r.err, bad) {
		t.Errorf("error does not name file and outbox: %q", r.err)
	}
}

func TestFleetConsoleRefusesWhatItCannotHonour(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[[outbox]]\nname = \"orders\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--fleet", bad, "--dsn", "postgres://u@h/db"}, "--dsn does not apply with --fleet"},
		{[]string{"--fleet", bad, "--headless"}, "--headless does not apply with --fleet"},
		{[]string{"--fleet", bad, "--batch-size", "10"}, "--batch-size does not apply with --fleet"},
		{[]string{"--fleet", bad, "--read-only"}, `outbox "orders": no connection string`},
	} {
		r := run(t, nil, c.args...)
		if r.code != ExitUsage || !strings.Contains(r.err, c.want) || strings.Count(strings.TrimSpace(r.err), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, r.code, r.err, c.want)
		}
	}
}

func TestServeFleetGivesFleetStatusWithoutATerminal(t *testing.T) {
	t.Parallel()
	path, env := fleetFile(t)
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &logWatch{changed: make(chan struct{})}
	exited := make(chan int, 1)
	go func() {
		exited <- Run(ctx, []string{"serve", "--ssh-addr", "127.0.0.1:0", "--host-key", filepath.Join(dir, "host_key"),
			"--authorized-keys", authorized, "--fleet", path}, IO{
			In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: logs, Getenv: func(k string) string { return env[k] },
		})
	}()
	addr := logs.waitMatch(t, regexp.MustCompile(`serving the fleet console over SSH" addr=(\S+)`), exited)
	client, err := gossh.Dial("tcp", addr, &gossh.ClientConfig{
		User: "oncall", Auth: []gossh.AuthMethod{gossh.PublicKeys(key)},
		HostKeyCallback: gossh.InsecureIgnoreHostKey(), // the host key is not what this test checks
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
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "OUTBOXTOP UNKNOWN - 3 outboxes, UNKNOWN search, WARNING billing, OK orders") ||
		!strings.HasPrefix(lines[1], "UNKNOWN  search: unreachable: ") {
		t.Errorf("fleet status over SSH:\n%s", out)
	}
	cancel()
	select {
	case code := <-exited:
		if code != ExitOK {
			t.Errorf("exit %d:\n%s", code, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve --fleet did not stop after its context ended")
	}
	if r := run(t, nil, "serve", "--fleet", path, "--host-key", filepath.Join(dir, "h2"), "--authorized-keys", authorized, "--dsn", "postgres://u@h/db"); r.code != ExitUsage || !strings.Contains(r.err, "--dsn does not apply with --fleet") {
		t.Errorf("serve --fleet --dsn: exit %d, %q", r.code, r.err)
	}
}

// lagFleetFile: "orders" whose group stopped halfway (10 of 20 records behind),
// "billing" whose brokers are closed; both databases healthy.
func lagFleetFile(t *testing.T) (string, map[string]string, string) {
	t.Helper()
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 2, "outbox.order")
	topic, group := k.Prefix+"outbox.order", k.Prefix+"shipping"
	lagKafka(t, k.Brokers, topic, 20, map[string]int{group: 10})
	closed, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.ListenAddrs()[0]
	closed.Close()
	dsn := func(topic string) string {
		pool, dsn := testenv.Pool(t)
		if _, err := pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
			published_at, kafka_topic, kafka_partition, kafka_offset) VALUES (gen_random_uuid(), 'order', '1', 'OrderPlaced', '{}', now(), $1, 0, 0)`, topic); err != nil {
			t.Fatal(err)
		}
		return dsn
	}
	path := filepath.Join(t.TempDir(), "fleet.toml")
	text := fmt.Sprintf(`lag_timeout = "3s"
[[outbox]]
name = "orders"
dsn_env = "ORDERS_DSN"
brokers = [%q]
groups = [%q]
[[outbox]]
name = "billing"
dsn_env = "BILLING_DSN"
brokers = [%q]
`, k.Brokers[0], group, addr)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, map[string]string{"ORDERS_DSN": dsn(topic), "BILLING_DSN": dsn("outbox.invoice")}, group
}

// status --fleet reads each outbox's consumer lag and applies the lag
// thresholds per outbox: closed brokers are a WARNING only under them, the
// database part of that outbox still checked.
func TestStatusFleetChecksConsumerLagPerOutbox(t *testing.T) {
	t.Parallel()
	path, env, group := lagFleetFile(t)
	for _, c := range []struct {
		args         []string
		code         int
		orders, bill string
		perf         string
	}{
		{[]string{"--warn-lag", "-1", "--crit-lag", "-1", "--warn-lag-age", "0", "--crit-lag-age", "0"}, ExitOK, "OK       orders: ok; publishable 0", "OK       billing: kafka: listing groups: ", " orders_max_lag=10;;;0"},
		// The default lag checks (the record is a minute old).
		{nil, ExitWarning, "WARNING  orders: oldest unconsumed " + group + " 1m", "WARNING  billing: consumer lag: listing groups: ", " orders_max_lag=10;10000;100000;0"},
		{[]string{"--warn-lag", "5", "--warn-lag-age", "0"}, ExitWarning, "WARNING  orders: lag " + group + " 10 > 5;", "WARNING  billing: consumer lag: listing groups: ", " orders_max_lag=10;5;100000;0"},
		{[]string{"--crit-lag-age", "30s"}, ExitCritical, "CRITICAL orders: oldest unconsumed " + group + " 1m", "WARNING  billing: consumer lag: ", " orders_max_lag_age=6"},
	} {
		r := run(t, env, append([]string{"status", "--fleet", path}, c.args...)...)
		lines := strings.Split(strings.TrimSpace(r.out), "\n")
		if r.code != c.code || len(lines) != 3 {
			t.Fatalf("%v: exit %d, want %d:\n%s\n%s", c.args, r.code, c.code, r.out, r.err)
		}
		if !strings.Contains(lines[0], c.perf) || !statusLine.MatchString(lines[0]) {
			t.Errorf("%v: summary %q, want %q", c.args, lines[0], c.perf)
		}
		got := map[string]string{}
		for _, l := range lines[1:] {
			got[strings.Fields(l)[1]] = l
		}
		o, b := got["orders:"], got["billing:"]
		if !strings.HasPrefix(o, c.orders) || !strings.Contains(o, "; max lag 10 ("+group+"), oldest unconsumed 1m") {
			t.Errorf("%v: orders %q, want prefix %q", c.args, o, c.orders)
		}
		if !strings.HasPrefix(b, c.bill) || !strings.Contains(b, "publishable 0") || !strings.HasSuffix(b, "; consumer lag unknown") || strings.Contains(lines[0], "billing_max_lag") {
			t.Errorf("%v: billing %q, want prefix %q", c.args, b, c.bill)
		}
	}
	r := run(t, env, "status", "--fleet", path, "--json", "--warn-lag", "5")
	var out struct {
		Outboxes []struct {
			Name      string
			Level     string
			Reachable bool
			Consumers *struct {
				MaxLag      int64    `json:"max_lag"`
				MaxLagGroup string   `json:"max_lag_group"`
				OldestAge   *float64 `json:"oldest_unconsumed_age_seconds"`
				Problem     string
				Report      struct{ Groups []struct{ Name string } }
			}
		}
	}
	if err := json.Unmarshal([]byte(r.out), &out); err != nil || len(out.Outboxes) != 2 {
		t.Fatalf("json: %v\n%s", err, r.out)
	}
	for _, o := range out.Outboxes {
		switch {
		case o.Consumers == nil:
			t.Errorf("%s: no consumers in the JSON", o.Name)
		case o.Name == "orders" && (o.Consumers.MaxLag != 10 || o.Consumers.MaxLagGroup != group || o.Consumers.OldestAge == nil ||
			*o.Consumers.OldestAge < 50 || len(o.Consumers.Report.Groups) != 1):
			t.Errorf("orders' consumers %+v", *o.Consumers)
		case o.Name == "billing" && (!o.Reachable || o.Level != "WARNING" || o.Consumers.Problem == ""):
			t.Errorf("billing %+v %+v", o, *o.Consumers)
		}
	}
}

// An outbox opened from the fleet has its Consumers view on its own brokers
// and groups.
func TestFleetOutboxConsoleReadsItsConsumerLag(t *testing.T) {
	t.Parallel()
	path, env, group := lagFleetFile(t)
	f, err := fleet.Load(path, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	p, err := fleet.NewPoller(f, fleet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	opts, closeFn, err := openFleetOutbox(p, fleetLagDial(relay.KafkaConfig{}), true, "tester")(context.Background(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if opts.Consumers == nil {
		t.Fatal("no consumer lag for an outbox with brokers")
	}
	r := opts.Consumers.Report()
	if len(r.Groups) != 1 || r.Groups[0].Name != group || r.Groups[0].Lag != 10 {
		t.Errorf("report %+v, want %s 10 behind", r, group)
	}
}
