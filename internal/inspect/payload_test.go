package inspect_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// The vocabulary of the generated payloads and terms: few enough keys and
// values that terms match, hostile enough (quotes, jsonpath and SQL
// metacharacters, escapes) that a value that became syntax would show.
var (
	propKeys   = []string{"a", "b", "c.d", "x y", `q"`, "é", "$", "@", "'; DROP TABLE outbox_event; --", "k\\"}
	propValues = []any{json.Number("1"), json.Number("1.0"), json.Number("-2e3"), "1", "-2e3", true, "true", false, nil, "null", "",
		"x", "x'; DROP", "$.a", "@ == 1 || true", `"`, "\\", "\n\t\u0001", "中文", strings.Repeat("z", 300)}
)

// pickKey is a key of the vocabulary, the first three more often, so that
// generated paths meet generated payloads.
func pickKey(r *rand.Rand) string {
	if r.IntN(3) > 0 {
		return propKeys[r.IntN(3)]
	}
	return propKeys[r.IntN(len(propKeys))]
}

func genValue(r *rand.Rand, depth int) any {
	switch n := r.IntN(10); {
	case depth == 0 || n < 3 && depth < 3:
		m := map[string]any{}
		for range 1 + r.IntN(4) {
			m[pickKey(r)] = genValue(r, depth+1)
		}
		return m
	case n < 5 && depth < 3:
		a := []any{}
		for range r.IntN(4) {
			a = append(a, genValue(r, depth+1))
		}
		return a
	}
	return propValues[r.IntN(len(propValues))]
}

// keyText writes a key as a path step: bare when it may be, else quoted.
func keyText(k string) string {
	if k != "" && !strings.ContainsAny(k, `.[]"=\ `) {
		return k
	}
	b, _ := json.Marshal(k)
	return string(b)
}

// valueText writes a value as a term's VALUE: bare (a number or literal then
// also matches its text) or quoted (only the string).
func valueText(r *rand.Rand, v any) string {
	switch x := v.(type) {
	case json.Number:
		return string(x)
	case bool:
		return fmt.Sprint(x)
	case nil:
		return "null"
	case string:
		if r.IntN(2) == 0 && !strings.HasPrefix(x, `"`) && !strings.ContainsAny(x, "\x00\x01\n\t") {
			return x
		}
		b, _ := json.Marshal(x)
		return string(b)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func genPayloadTerm(r *rand.Rand) string {
	if r.IntN(5) == 0 {
		m := map[string]any{}
		for range 1 + r.IntN(2) {
			m[pickKey(r)] = genValue(r, 1)
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	var p strings.Builder
	for i := range 1 + r.IntN(3) {
		switch n := r.IntN(6); {
		case n == 0 && i > 0:
			p.WriteString("[*]")
		case n == 1 && i > 0:
			fmt.Fprintf(&p, "[%d]", r.IntN(2))
		default:
			if i > 0 {
				p.WriteByte('.')
			}
			p.WriteString(keyText(pickKey(r)))
		}
	}
	if r.IntN(3) == 0 {
		return p.String()
	}
	return p.String() + "=" + valueText(r, propValues[r.IntN(len(propValues))])
}

func genHeaderTerm(r *rand.Rand) string {
	k := pickKey(r)
	if strings.ContainsAny(k, `="`) || r.IntN(4) == 0 {
		b, _ := json.Marshal(k)
		k = string(b)
	}
	if r.IntN(3) == 0 {
		return k
	}
	return k + "=" + valueText(r, propValues[r.IntN(len(propValues))])
}

// TestPayloadSearchMatchesBruteForce: for generated payloads and headers and
// generated terms, the events List returns (plain and bounded, page by page)
// and CountMatching counts are the ones a Go evaluation of the same terms
// picks; and the text of no term reaches PostgreSQL as anything but a value.
func TestPayloadSearchMatchesBruteForce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := rand.New(rand.NewPCG(7, 11))
	type doc struct{ payload, headers []byte }
	docs := map[string]doc{}
	for i := range 240 {
		var d doc
		d.payload, _ = json.Marshal(genValue(r, 0))
		if i%7 == 0 {
			d.payload, _ = json.Marshal(genValue(r, 1)) // any JSON at the top, arrays and scalars too
		}
		if i%5 != 0 {
			h := map[string]any{}
			for range r.IntN(3) {
				h[pickKey(r)] = propValues[r.IntN(len(propValues))]
			}
			d.headers, _ = json.Marshal(h)
		}
		id := uuid.NewString()
		var headers any
		if d.headers != nil {
			headers = string(d.headers)
		}
		if _, err := b.pool.Exec(b.ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, headers, failed_at, last_error)
			VALUES ($1, 'order', $2, 'OrderPlaced', $3::jsonb, $4::jsonb, now() - $5 * interval '1 second', 'x')`,
			id, fmt.Sprint("o-", i%17), string(d.payload), headers, i); err != nil {
			t.Fatalf("inserting %s: %v", d.payload, err)
		}
		// Read back what jsonb kept (duplicate keys folded, numbers normalized).
		if err := b.pool.QueryRow(b.ctx, `SELECT payload::text, headers::text FROM outbox_event WHERE event_id = $1`, id).Scan(&d.payload, &d.headers); err != nil {
			t.Fatal(err)
		}
		docs[id] = d
	}
	matched := 0
	for n := range 300 {
		var f inspect.Filter
		for range 1 + r.IntN(3)/2 {
			if r.IntN(3) == 0 {
				f.Headers = append(f.Headers, genHeaderTerm(r))
			} else {
				f.Payload = append(f.Payload, genPayloadTerm(r))
			}
		}
		if err := f.Validate(); err != nil {
			t.Fatalf("term %d %q %q refused: %v", n, f.Payload, f.Headers, err)
		}
		var want []string
		for id, d := range docs {
			ok, err := inspect.MatchJSON(f, d.payload, d.headers)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				want = append(want, id)
			}
		}
		slices.Sort(want)
		if len(want) > 0 {
			matched++
		}
		desc := fmt.Sprintf("payload %q headers %q", f.Payload, f.Headers)
		plain, err := b.in.List(b.ctx, inspect.ListOptions{State: wire.Failed, Filter: f, Limit: 1000, MaxScan: -1})
		if err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
		if got := sortedIDs(plain.Events); !slices.Equal(got, want) {
			t.Fatalf("%s: the database matched %d events, Go %d:\n got %v\nwant %v", desc, len(got), len(want), got, want)
		}
		// Bounded: 37 rows a page, sorted by failed_at, pages chained by Next.
		var got []string
		after, pages := "", 0
		for {
			p, err := b.in.List(b.ctx, inspect.ListOptions{State: wire.Failed, Filter: f, Sort: inspect.SortFailedAt, Desc: n%2 == 0,
				Limit: 1 + n%5, MaxScan: 37, After: after})
			if err != nil {
				t.Fatalf("%s: %v", desc, err)
			}
			if p.Scan == nil || p.Scan.Scanned > 37 {
				t.Fatalf("%s: a bounded page read %+v", desc, p.Scan)
			}
			got = append(got, ids(p)...)
			if after = p.Next; after == "" {
				break
			}
			if pages++; pages > 400 {
				t.Fatalf("%s: no end to the pages", desc)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: paged bounded search found %v, want %v", desc, got, want)
		}
		c, err := b.in.CountMatching(b.ctx, wire.Failed, f)
		if err != nil || c.Value != int64(len(want)) || c.Bound != inspect.Exact {
			t.Fatalf("%s: counted %+v (%v), want %d", desc, c, err, len(want))
		}
	}
	t.Logf("%d of 300 generated searches matched events", matched)
	if matched < 100 {
		t.Errorf("only %d of 300 generated searches matched anything: the generator tests too little", matched)
	}
}

func sortedIDs(es []inspect.Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.EventID)
	}
	slices.Sort(out)
	return out
}

// TestPayloadSearchIsBoundedWithoutAnIndexAndUsesOne: without an index a
// search reads MaxScan rows and says where it stopped; with the GIN index
// docs/triage.md gives, a search the index serves (equality, containment) is
// read through it, whole, and one it cannot serve (existence, under
// jsonb_path_ops) stays bounded. Actions are never bounded.
func TestPayloadSearchIsBoundedWithoutAnIndexAndUsesOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, headers, failed_at, last_error)
		SELECT gen_random_uuid(), 'order', 'o-' || g, 'OrderPlaced',
			jsonb_build_object('customer', jsonb_build_object('id', g, 'tier', CASE WHEN g % 2 = 0 THEN 'gold' ELSE 'silver' END)),
			jsonb_build_object('trace-id', 't' || g), now() - g * interval '1 second', 'x'
		FROM generate_series(1, 20000) g`, `ANALYZE outbox_event`)
	list := func(term string, maxScan int) inspect.Page {
		t.Helper()
		p, err := b.in.List(b.ctx, inspect.ListOptions{State: wire.Failed, Sort: inspect.SortFailedAt, Filter: inspect.Filter{Payload: []string{term}},
			Limit: 10, MaxScan: maxScan})
		if err != nil {
			t.Fatalf("%s: %v", term, err)
		}
		return p
	}
	// Oldest first: customer 20000 is the first row read, 17 the 19984th.
	p := list("customer.id=17", 1000)
	if len(p.Events) != 0 || p.Scan == nil || !p.Scan.Stopped || p.Scan.Scanned != 1000 || p.Next == "" {
		t.Fatalf("bounded search: %d events, scan %+v, next %q", len(p.Events), p.Scan, p.Next)
	}
	p = list("customer.id=19990", 1000)
	if len(p.Events) != 1 || p.Events[0].AggregateID != "o-19990" || !p.Scan.Stopped {
		t.Fatalf("bounded search, found in its rows: %+v %+v", p.Events, p.Scan)
	}
	p = list("customer.tier=gold", 1000)
	if len(p.Events) != 10 || p.Scan.Stopped || p.Scan.Scanned != 19 || p.Next == "" {
		t.Fatalf("a full page before the bound: %d events, scan %+v", len(p.Events), p.Scan)
	}
	plan, err := b.in.DryRun(b.ctx, inspect.Request{Action: inspect.Retry, Filter: inspect.Filter{Payload: []string{"customer.id=17"}}})
	if err != nil || plan.Count != 1 {
		t.Fatalf("an action's target is every match: %+v %v", plan, err)
	}

	b.exec(t, `CREATE INDEX CONCURRENTLY outbox_payload_gin_idx ON outbox_event USING gin (payload jsonb_path_ops)`, `ANALYZE outbox_event`)
	for _, term := range []string{"customer.id=17", `{"customer":{"id":17}}`} {
		p = list(term, 1000)
		if len(p.Events) != 1 || p.Events[0].AggregateID != "o-17" || p.Scan != nil {
			t.Fatalf("%s through the index: %+v, scan %+v", term, p.Events, p.Scan)
		}
		c, err := b.in.CountMatching(b.ctx, wire.Failed, inspect.Filter{Payload: []string{term}})
		if err != nil || c != (inspect.Count{Value: 1}) {
			t.Fatalf("%s counted through the index: %+v %v", term, c, err)
		}
	}
	if p = list("customer.id", 1000); p.Scan == nil || len(p.Events) != 10 {
		t.Fatalf("existence, which jsonb_path_ops does not serve: %d events, scan %+v", len(p.Events), p.Scan)
	}
}

// TestPayloadSearchOfTheArchive: the Archived view searches the archive's
// payloads and headers, bounded and plain alike.
func TestPayloadSearchOfTheArchive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(t, `INSERT INTO outbox_event_archive (event_id, seq, aggregate_type, aggregate_id, event_type, payload, headers, created_at, available_at, attempts, published_at, archived_at)
		SELECT gen_random_uuid(), g, 'order', 'o-' || g, 'OrderPlaced', jsonb_build_object('n', g), jsonb_build_object('k', 'v' || g),
			now() - interval '1 day', now() - interval '1 day', 1, now() - interval '1 hour', now() - g * interval '1 second'
		FROM generate_series(1, 50) g`)
	for _, maxScan := range []int{-1, 10, 0} {
		p, err := b.in.List(b.ctx, inspect.ListOptions{State: inspect.Archived, Sort: inspect.SortArchivedAt, Desc: true,
			Filter: inspect.Filter{Payload: []string{"n=7"}, Headers: []string{"k=v7"}}, MaxScan: maxScan})
		if err != nil {
			t.Fatal(err)
		}
		if maxScan == 10 {
			if len(p.Events) != 1 || p.Scan == nil || p.Scan.Scanned != 10 || !p.Scan.Stopped {
				t.Errorf("bounded: %+v %+v", p.Events, p.Scan)
			}
			continue
		}
		if len(p.Events) != 1 || p.Events[0].AggregateID != "o-7" || p.Events[0].State != inspect.Archived {
			t.Errorf("max scan %d: %+v", maxScan, p.Events)
		}
	}
}
