package cli

import (
	"strings"
	"testing"
)

// A request inspect refuses as invalid (inspect.ErrInvalidRequest, matched with
// errors.Is, not by its text) is a usage error: one line, exit 2, nothing changed.
func TestActionInvalidRequestIsAUsageError(t *testing.T) {
	t.Parallel()
	env, pool := outboxDB(t)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"retry", "--id", "d0000000-0000", "--yes"}, "is not an event id"},
		{[]string{"retry", "--id", cliFailed, "--from", "published", "--yes"}, "applies to"},
		{[]string{"park", "--id", cliReady, "--from", "failed", "--reason", "x", "--yes"}, "applies to"},
	} {
		r := run(t, env, c.args...)
		if r.code != ExitUsage || !strings.Contains(r.err, c.says) || strings.Count(strings.TrimSpace(r.err), "\n") != 0 {
			t.Errorf("%v: %+v; want exit %d, one line saying %q", c.args, r, ExitUsage, c.says)
		}
	}
	if n, _ := auditCount(t, pool); n != 0 || !failedAt(t, pool, cliFailed) || failedAt(t, pool, cliReady) {
		t.Fatal("a refused action changed something")
	}
}
