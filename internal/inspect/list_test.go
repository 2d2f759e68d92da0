package inspect_test

import (
	"errors"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

func ids(p inspect.Page) []string {
	var out []string
	for _, e := range p.Events {
		out = append(out, e.EventID)
	}
	return out
}

func same(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if a[k] != b[k] {
			return false
		}
	}
	return true
}

func TestListEachStateAndFilter(t *testing.T) {
	t.Parallel()
	b := setup(t, everyState()...)
	for _, c := range []struct {
		name string
		o    inspect.ListOptions
		want []string
	}{
		{"ready", inspect.ListOptions{State: wire.Ready}, []string{idReady1, idReady2, idExpired, idBehindSch, idBehindF1, idBehindF2}},
		{"scheduled", inspect.ListOptions{State: wire.Scheduled}, []string{idSched}},
		{"pending by age desc", inspect.ListOptions{State: wire.Pending, Sort: inspect.SortCreatedAt, Filter: inspect.Filter{AggregateID: "sch"}}, []string{idSched, idBehindSch}},
		{"leased", inspect.ListOptions{State: wire.Leased}, []string{idLeased}},
		{"failed", inspect.ListOptions{State: wire.Failed}, []string{idFailed, idFailed2}},
		{"published newest first", inspect.ListOptions{State: wire.Published, Sort: inspect.SortPublishedAt, Desc: true}, []string{idPub30s, idPub3m, idPub2h}},
		{"event type", inspect.ListOptions{State: wire.Failed, Filter: inspect.Filter{EventType: "InvoiceSent"}}, []string{idFailed2}},
		{"aggregate type", inspect.ListOptions{State: wire.Failed, Filter: inspect.Filter{AggregateType: "order"}}, []string{idFailed}},
		{"aggregate id", inspect.ListOptions{State: wire.Ready, Filter: inspect.Filter{AggregateID: "dead"}}, []string{idBehindF1, idBehindF2}},
		{"id prefix", inspect.ListOptions{State: wire.Ready, Filter: inspect.Filter{IDPrefix: "A1"}}, []string{idExpired}},
		{"full id", inspect.ListOptions{State: wire.Ready, Filter: inspect.Filter{IDPrefix: idReady2}}, []string{idReady2}},
		{"error text", inspect.ListOptions{State: wire.Scheduled, Filter: inspect.Filter{ErrorContains: "SAID no"}}, []string{idSched}},
		{"error text with wildcards", inspect.ListOptions{State: wire.Failed, Filter: inspect.Filter{ErrorContains: "%_"}}, nil},
		{"older than", inspect.ListOptions{State: wire.Ready, Filter: inspect.Filter{OlderThan: 9 * time.Minute}}, []string{idReady1, idBehindF1, idBehindF2}},
		{"newer than", inspect.ListOptions{State: wire.Ready, Filter: inspect.Filter{NewerThan: 3 * time.Minute}}, []string{idReady2, idBehindSch}},
		{"published older than counts from published_at", inspect.ListOptions{State: wire.Published, Filter: inspect.Filter{OlderThan: time.Minute}}, []string{idPub3m, idPub2h}},
		{"most attempts first", inspect.ListOptions{State: wire.Failed, Sort: inspect.SortAttempts, Desc: true}, []string{idFailed, idFailed2}},
	} {
		p, err := b.in.List(b.ctx, c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !same(ids(p), c.want) {
			t.Errorf("%s: got %v, want %v", c.name, ids(p), c.want)
		}
	}
	p, err := b.in.List(b.ctx, inspect.ListOptions{State: wire.Ready, Filter: inspect.Filter{IDPrefix: "a1"}})
	if err != nil || len(p.Events) != 1 || !p.Events[0].LeaseExpired || p.Events[0].LeaseToken != lease {
		t.Fatalf("expired lease shown as such: %+v %v", p, err)
	}
	if _, err := b.in.List(b.ctx, inspect.ListOptions{State: "stuck"}); err == nil {
		t.Error("unknown state accepted")
	}
	if _, err := b.in.List(b.ctx, inspect.ListOptions{State: wire.Ready, Filter: inspect.Filter{IDPrefix: "a'; drop"}}); err == nil {
		t.Error("bad id prefix accepted")
	}
}

func TestListKeysetPagination(t *testing.T) {
	t.Parallel()
	b := setup(t, everyState()...)
	for _, o := range []inspect.ListOptions{
		{State: wire.Pending},
		{State: wire.Pending, Sort: inspect.SortAvailableAt, Desc: true},
		{State: wire.Pending, Sort: inspect.SortAttempts},
		{State: wire.Pending, Sort: inspect.SortLeaseUntil},
	} {
		all := o
		all.Limit = 100
		full, err := b.in.List(b.ctx, all)
		if err != nil {
			t.Fatal(err)
		}
		var paged []string
		o.Limit = 2
		for pages := 0; ; pages++ {
			p, err := b.in.List(b.ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			paged = append(paged, ids(p)...)
			if p.Next == "" {
				break
			}
			if pages > 10 {
				t.Fatal("pagination does not end")
			}
			o.After = p.Next
		}
		if len(full.Events) != 7 || !same(paged, ids(full)) {
			t.Errorf("sort %s desc %v: paged %v, full %v", o.Sort, o.Desc, paged, ids(full))
		}
	}
	if _, err := b.in.List(b.ctx, inspect.ListOptions{State: wire.Ready, After: "garbage!"}); err == nil {
		t.Error("bad cursor accepted")
	}
}

func TestDetail(t *testing.T) {
	t.Parallel()
	b := setup(t, everyState()...)
	if _, err := b.pool.Exec(b.ctx, `UPDATE outbox_event SET headers = '{"traceparent": "00-abc"}', kafka_partition = 3, kafka_offset = 42 WHERE event_id = $1`, idPub30s); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(b.ctx, `INSERT INTO consumed_event (consumer_name, event_id) VALUES ('billing', $1), ('shipping', $1)`, idPub30s); err != nil {
		t.Fatal(err)
	}
	d, err := b.in.Detail(b.ctx, idPub30s)
	if err != nil {
		t.Fatal(err)
	}
	if d.State != wire.Published || string(d.Payload) != `{"n": 1}` || string(d.Headers) != `{"traceparent": "00-abc"}` ||
		d.KafkaTopic != "outbox.order" || *d.KafkaPartition != 3 || *d.KafkaOffset != 42 || len(d.Consumed) != 2 {
		t.Fatalf("detail %+v", d)
	}
	if _, err := b.in.Detail(b.ctx, "a0000000-0000-0000-0000-00000000ffff"); !errors.Is(err, inspect.ErrNotFound) {
		t.Fatalf("missing id: %v", err)
	}
	if _, err := b.in.Detail(b.ctx, "nope"); !errors.Is(err, inspect.ErrNotFound) {
		t.Fatalf("bad id: %v", err)
	}
}

// TestListWordsAndCountMatching: plain words match the type, aggregate, id or error
// in the database; CountMatching counts what List would page through.
func TestListWordsAndCountMatching(t *testing.T) {
	t.Parallel()
	b := setup(t, everyState()...)
	for _, c := range []struct {
		words []string
		want  int64
	}{
		{[]string{"PAID"}, 1},              // event type, any case
		{[]string{"order/sch"}, 2},         // aggregate type/id
		{[]string{"d1000000"}, 2},          // event id
		{[]string{"too", "large"}, 0},      // last error: the failed ones are not pending
		{[]string{"r1", "OrderPlaced"}, 1}, // every word must match
		{[]string{"nothing-matches-this-word"}, 0},
	} {
		f := inspect.Filter{Words: c.words}
		n, err := b.in.CountMatching(b.ctx, "pending", f)
		if err != nil {
			t.Fatal(err)
		}
		page, err := b.in.List(b.ctx, inspect.ListOptions{State: "pending", Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		if n != (inspect.Count{Value: c.want}) || int64(len(page.Events)) != c.want {
			t.Errorf("words %q: count %+v, listed %d, want %d", c.words, n, len(page.Events), c.want)
		}
	}
}

// TestIDPartMatchesEitherEnd: the console's id: term (IDPart) matches the start or
// the end of an id; IDPrefix (the command line's --id-prefix) only the start.
func TestIDPartMatchesEitherEnd(t *testing.T) {
	t.Parallel()
	b := setup(t, everyState()...)
	for _, c := range []struct {
		f    inspect.Filter
		want int64
	}{
		{inspect.Filter{IDPart: "d1000000"}, 2},
		{inspect.Filter{IDPart: "0000-000000000002"}, 2}, // idReady2, idBehindF2
		{inspect.Filter{IDPrefix: "0000-000000000002"}, 0},
	} {
		n, err := b.in.CountMatching(b.ctx, "pending", c.f)
		if err != nil {
			t.Fatal(err)
		}
		if n.Value != c.want {
			t.Errorf("%+v: %d, want %d", c.f, n.Value, c.want)
		}
	}
}
