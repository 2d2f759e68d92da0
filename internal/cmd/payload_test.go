package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/wire"
)

// TestEventsAndActionsSearchPayloadsAndHeaders: --payload and --header narrow
// events and the actions alike, every term holding; bad syntax is bad usage,
// on one line.
func TestEventsAndActionsSearchPayloadsAndHeaders(t *testing.T) {
	t.Parallel()
	pool, dsn := testenv.Pool(t)
	env := map[string]string{"DATABASE_URL": dsn}
	const (
		gold   = "f1000000-0000-4000-8000-000000000001"
		text42 = "f1000000-0000-4000-8000-000000000002"
		other  = "f1000000-0000-4000-8000-000000000003"
		ready  = "a1000000-0000-4000-8000-000000000004"
	)
	if _, err := pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, headers, failed_at, last_error)
		VALUES ($1, 'order', '1', 'OrderPlaced', '{"customer": {"id": 42, "tier": "gold"}, "items": [{"sku": "a.b"}]}', '{"trace-id": "abc", "n": 7}', now(), 'x'),
		       ($2, 'order', '2', 'OrderPlaced', '{"customer": {"id": "42"}}', NULL, now(), 'x'),
		       ($3, 'order', '3', 'OrderPlaced', '{"customer": {"id": 7}, "note": "'' ; DROP TABLE outbox_event; --"}', '{"trace-id": "def"}', now(), 'x'),
		       ($4, 'order', '4', 'OrderPlaced', '{"customer": {"id": 42}}', '{"trace-id": "abc"}', NULL, NULL)`,
		gold, text42, other, ready); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--payload", "customer.id=42"}, []string{gold, text42}},
		{[]string{"--payload", `customer.id="42"`}, []string{text42}},
		{[]string{"--payload", "customer.tier"}, []string{gold}},
		{[]string{"--payload", `{"customer":{"tier":"gold"}}`}, []string{gold}},
		{[]string{"--payload", "items[0].sku=a.b"}, []string{gold}},
		{[]string{"--payload", "items[*].sku", "--payload", "customer.id=7"}, nil},
		{[]string{"--payload", "note=' ; DROP TABLE outbox_event; --"}, []string{other}},
		{[]string{"--header", "trace-id=abc"}, []string{gold}},
		{[]string{"--header", "n=7"}, []string{gold}},
		{[]string{"--header", "trace-id"}, []string{gold, other}},
		{[]string{"--header", "trace-id", "--payload", "customer.id=7"}, []string{other}},
	} {
		r := run(t, env, append([]string{"events", "--state", "failed", "--json"}, c.args...)...)
		if r.code != ExitOK {
			t.Fatalf("%q: %+v", c.args, r)
		}
		for _, id := range []string{gold, text42, other, ready} {
			want := false
			for _, w := range c.want {
				want = want || w == id
			}
			if strings.Contains(r.out, id) != want {
				t.Errorf("%q: %s listed %v, want %v", c.args, id, !want, want)
			}
		}
	}
	for _, args := range [][]string{
		{"events", "--state", "failed", "--payload", "customer..id"},
		{"events", "--state", "failed", "--payload", "items[x]"},
		{"events", "--state", "failed", "--payload", `{"customer":`},
		{"events", "--state", "failed", "--payload", "a=\x00"},
		{"events", "--state", "failed", "--payload", "a=\x1b]0;pwned\x07"},
		{"events", "--state", "failed", "--header", "=abc"},
		{"retry", "--payload", "a b", "--yes"},
	} {
		r := run(t, env, args...)
		if r.code != ExitUsage || strings.Count(strings.TrimSpace(r.err), "\n") != 0 || strings.ContainsAny(r.err, "\x00\x1b\x07") {
			t.Errorf("%q: want exit 2 and one clean line, got %d %q", args, r.code, r.err)
		}
	}
	r := run(t, env, "retry", "--payload", "customer.id=42", "--dry-run")
	if r.code != ExitOK || !strings.Contains(r.out, "2 event") {
		t.Fatalf("retry dry run: %+v", r)
	}
	r = run(t, env, "retry", "--payload", "customer.id=42", "--header", "trace-id=abc", "--yes", "--reason", "fixed")
	if r.code != ExitOK || !strings.Contains(r.out, "retried 1 of 1 event") || failedAt(t, pool, gold) || !failedAt(t, pool, text42) {
		t.Fatalf("retry: %+v", r)
	}
	var filter string
	if err := pool.QueryRow(context.Background(), `SELECT filter::text FROM outbox_audit ORDER BY audit_id DESC LIMIT 1`).Scan(&filter); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(filter, `"payload": ["customer.id=42"]`) || !strings.Contains(filter, `"headers": ["trace-id=abc"]`) {
		t.Errorf("the audit row's filter %s does not name the terms", filter)
	}
	r = run(t, env, "park", "--payload", "customer.id=42", "--yes", "--reason", "poison")
	if r.code != ExitOK || !strings.Contains(r.out, "parked 2 of 2 events") || !failedAt(t, pool, ready) || !failedAt(t, pool, gold) {
		t.Fatalf("park: %+v", r)
	}
}

// A search that stopped at its bound says so on stderr, in one line, with
// the cursor to go on from; one that did not says nothing.
func TestNoteSearchIsOneLine(t *testing.T) {
	t.Parallel()
	var errb bytes.Buffer
	noteSearch(IO{Err: &errb}, wire.Failed, inspect.Page{Next: "CUR", Scan: &inspect.Scan{Scanned: 100000, Stopped: true}})
	if got := errb.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "searched 100000 failed events") || !strings.Contains(got, "--after CUR") {
		t.Errorf("note %q", got)
	}
	errb.Reset()
	noteSearch(IO{Err: &errb}, wire.Failed, inspect.Page{Scan: &inspect.Scan{Scanned: 12}})
	noteSearch(IO{Err: &errb}, wire.Failed, inspect.Page{})
	if errb.Len() != 0 {
		t.Errorf("a search that reached the end noted %q", errb.String())
	}
}
