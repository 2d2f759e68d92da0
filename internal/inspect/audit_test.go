package inspect_test

import (
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

func TestAuditLogFilters(t *testing.T) {
	t.Parallel()
	b := setup(t, everyState()...)
	for _, r := range []inspect.Request{
		{Action: inspect.Retry, IDs: []string{idFailed2}, Actor: "alice via ssh from 203.0.113.7"},
		{Action: inspect.Park, IDs: []string{idReady1}, Actor: "bob", Reason: "bad payload"},
		{Action: inspect.Skip, IDs: []string{idSched}, Actor: "Alice", Reason: "poison"},
	} {
		if _, err := b.in.Do(b.ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.pool.Exec(b.ctx, `UPDATE outbox_audit SET at = now() - interval '2 hours' WHERE action = 'retry'`); err != nil {
		t.Fatal(err)
	}
	actions := func(f inspect.AuditFilter) []string {
		t.Helper()
		recs, err := b.in.AuditLog(b.ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			out = append(out, r.Action+":"+r.Actor)
		}
		return out
	}
	for _, c := range []struct {
		f    inspect.AuditFilter
		want []string
	}{
		{inspect.AuditFilter{}, []string{"skip:Alice", "park:bob", "retry:alice via ssh from 203.0.113.7"}},
		{inspect.AuditFilter{Actor: "ALICE"}, []string{"skip:Alice", "retry:alice via ssh from 203.0.113.7"}},
		{inspect.AuditFilter{Action: "park"}, []string{"park:bob"}},
		{inspect.AuditFilter{NewerThan: time.Hour}, []string{"skip:Alice", "park:bob"}},
		{inspect.AuditFilter{OlderThan: time.Hour}, []string{"retry:alice via ssh from 203.0.113.7"}},
		{inspect.AuditFilter{Actor: "alice", NewerThan: time.Hour}, []string{"skip:Alice"}},
		{inspect.AuditFilter{EventID: idReady1}, []string{"park:bob"}},
		{inspect.AuditFilter{Limit: 1}, []string{"skip:Alice"}},
		{inspect.AuditFilter{Action: "replay"}, nil},
	} {
		got := actions(c.f)
		if len(got) != len(c.want) {
			t.Errorf("%+v: %v, want %v", c.f, got, c.want)
			continue
		}
		for j := range got {
			if got[j] != c.want[j] {
				t.Errorf("%+v: %v, want %v", c.f, got, c.want)
				break
			}
		}
	}
	recs, _ := b.in.AuditLog(b.ctx, inspect.AuditFilter{Limit: 1})
	next, _ := b.in.AuditLog(b.ctx, inspect.AuditFilter{Before: recs[0].ID, Limit: 1})
	if len(next) != 1 || next[0].Action != "park" || next[0].Reason != "bad payload" || len(next[0].EventIDs) != 1 || next[0].EventIDs[0] != idReady1 {
		t.Fatalf("the second page: %+v", next)
	}
	if _, err := b.in.AuditLog(b.ctx, inspect.AuditFilter{Action: "x'; drop"}); err == nil {
		t.Fatal("an action with quotes was accepted")
	}
}
