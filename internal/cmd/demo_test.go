package cmd

import (
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

func TestDemoUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"demo", "--duration", "5s"},
		{"demo", "--faults"},
		{"demo", "--no-tui", "--duration", "0s"},
		{"demo", "--rate", "-1"},
		{"demo", "--dsn", "postgres://u:hunter2@[oops"},
		{"demo", "--brokers", "127.0.0.1:1", "--kafka-tls"},
		{"demo", "--lease", "500ms"},
	} {
		checkUsageError(t, "hunter2", args...)
	}
}

// The command end to end on a given database with the in-process broker: a
// DATABASE_URL or KAFKA_BROKERS meant for something else is not used.
func TestDemoHeadlessOnGivenDatabase(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none", "KAFKA_BROKERS": "127.0.0.1:1"}
	r := run(t, env, "demo", "--no-tui", "--duration", "3s", "--faults", "--rate", "200", "--dsn", testenv.DB(t))
	if r.code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
	}
	for _, want := range []string{"your database; Kafka in process", "fault: broker outage on", "duplicates", "settled: every committed event"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("output lacks %q:\n%s", want, r.out)
		}
	}
}
