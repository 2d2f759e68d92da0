package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

const (
	farHead   = "f0000000-0000-0000-0000-000000000001"
	farBehind = "f0000000-0000-0000-0000-000000000002"
	farBC     = "f0000000-0000-0000-0000-000000000003"
	farMax    = "f0000000-0000-0000-0000-000000000004"
)

// Times PostgreSQL stores and a Duration or encoding/json cannot carry: an
// available_at of year 294276 (the largest PostgreSQL takes), one 973 years
// ahead heading an aggregate with a ready event behind it, a created_at of 4713
// BC. Every --json output stays a valid document that exits as it would
// without them, the text says "in 973 years", never an overflowed Duration, and
// the event behind the far head reads as waiting behind it, not ready.
func TestFarTimesReadAsPeopleReadThem(t *testing.T) {
	t.Parallel()
	pool, dsn := testenv.Pool(t)
	env := map[string]string{"DATABASE_URL": dsn}
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at) VALUES
		($1, 'order', 'far', 'OrderPlaced', '{}', now(), now() + interval '973 years 1 month'),
		($2, 'order', 'far', 'OrderPaid', '{}', now(), now()),
		($3, 'order', 'bc', 'OrderPlaced', '{}', '4713-11-24 00:00:00+00 BC', now() - interval '1 minute'),
		($4, 'order', 'max', 'OrderPlaced', '{}', now(), '294276-12-31 00:00:00+00')`, farHead, farBehind, farBC, farMax); err != nil {
		t.Fatal(err)
	}
	valid := func(name string, r result) map[string]any {
		t.Helper()
		var doc map[string]any
		if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
			t.Fatalf("%s: not JSON (%v): exit %d\n%s\n%s", name, err, r.code, r.out, r.err)
		}
		if strings.Contains(r.err, "year outside of range") {
			t.Fatalf("%s: %s", name, r.err)
		}
		return doc
	}

	// status: the heads are scheduled, so they block (WARNING by --warn-blocked);
	// the JSON is whole and the exit code is the check's.
	r := run(t, env, "status", "--json")
	doc := valid("status --json", r)
	if r.code != ExitWarning {
		t.Errorf("status --json exits %d, want %d (blocked aggregates)\n%s", r.code, ExitWarning, r.out)
	}
	if next, _ := doc["next_scheduled_at"].(string); next == "" {
		t.Errorf("status --json: next_scheduled_at = %v", doc["next_scheduled_at"])
	}
	r = run(t, env, "status")
	for _, bad := range []string{"2562047h", "-2562047", "106751d"} {
		if strings.Contains(r.out, bad) {
			t.Errorf("status prints an overflowed duration %q:\n%s", bad, r.out)
		}
	}

	// events: the year-294276 row in PostgreSQL's text form, the 973-year one in
	// RFC 3339; the ready event behind the far head listed as waiting.
	r = run(t, env, "events", "--state", "pending", "--json")
	doc = valid("events --json", r)
	if r.code != ExitOK {
		t.Errorf("events --json exits %d: %s", r.code, r.err)
	}
	at := map[string]map[string]any{}
	for _, e := range doc["events"].([]any) {
		ev := e.(map[string]any)
		at[ev["event_id"].(string)] = ev
	}
	if got := at[farMax]["available_at"]; got != "294276-12-31 00:00:00+00" {
		t.Errorf("events --json: available_at of year 294276 = %v", got)
	}
	if got := at[farBC]["created_at"]; got != "4713-11-24 00:00:00+00 BC" {
		t.Errorf("events --json: created_at of 4713 BC = %v", got)
	}
	if got, _ := at[farHead]["available_at"].(string); !strings.Contains(got, "T") || !strings.HasSuffix(got, "Z") {
		t.Errorf("events --json: available_at 973 years ahead = %v", got)
	}
	wb, _ := doc["waiting_behind"].(map[string]any)
	if h, _ := wb[farBehind].(map[string]any); h == nil || h["event_id"] != farHead || h["state"] != "scheduled" {
		t.Errorf("events --json: waiting_behind = %v, want %s behind %s", doc["waiting_behind"], farBehind, farHead)
	}
	r = run(t, env, "events", "--state", "ready")
	if r.code != ExitOK || !strings.Contains(r.out, farBehind+"  waiting ") || strings.Contains(r.out, farBehind+"  ready ") {
		t.Errorf("events --state ready: the event behind the far head is not shown waiting: %+v", r)
	}
	r = run(t, env, "events", "--aggregate", "order/far")
	if r.code != ExitOK || !strings.Contains(r.out, "next attempt in 973 years") {
		t.Errorf("events --aggregate order/far: %+v", r)
	}
	r = run(t, env, "events", "--aggregate", "order/max", "--json")
	valid("events --aggregate --json", r)

	// trace: each of them, as JSON and as text.
	for _, id := range []string{farHead, farBehind, farBC, farMax} {
		r = run(t, env, "trace", id, "--json")
		doc = valid("trace --json "+id, r)
		if r.code != ExitOK {
			t.Errorf("trace --json %s exits %d: %s", id, r.code, r.err)
		}
		r = run(t, env, "trace", id)
		for _, bad := range []string{"2562047h", "-2562047"} {
			if strings.Contains(r.out, bad) {
				t.Errorf("trace %s prints an overflowed duration:\n%s", id, r.out)
			}
		}
		switch id {
		case farHead:
			if !strings.Contains(r.out, "(in 973 years)") {
				t.Errorf("trace of the far head:\n%s", r.out)
			}
		case farBehind:
			if !strings.Contains(r.out, "ready, waiting behind seq") || !strings.Contains(r.out, "next attempt in 973 years") {
				t.Errorf("trace of the event behind the far head:\n%s", r.out)
			}
			if h, _ := doc["waiting_behind"].(map[string]any); h == nil || h["event_id"] != farHead {
				t.Errorf("trace --json of the event behind: waiting_behind = %v", doc["waiting_behind"])
			}
		case farMax:
			if !strings.Contains(r.out, "294276-12-31 00:00:00+00") || !strings.Contains(r.out, "years)") {
				t.Errorf("trace of year 294276:\n%s", r.out)
			}
		case farBC:
			if !strings.Contains(r.out, "4713-11-24 00:00:00+00 BC") || !strings.Contains(r.out, "years ago)") {
				t.Errorf("trace of 4713 BC:\n%s", r.out)
			}
		}
	}
}

// farTimeJSON is encoding/json's document wherever encoding/json can write
// one: the same bytes for the outputs' own types.
func TestFarTimeJSONIsEncodingJSONWithinRange(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 14, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	later := now.Add(time.Hour)
	ev := inspect.Event{EventID: "e1", Seq: 7, State: "failed", CreatedAt: now, AvailableAt: later, FailedAt: &later, Age: inspect.Age(time.Minute)}
	for name, v := range map[string]any{
		"event": ev,
		"page":  inspect.Page{Events: []inspect.Event{ev, {EventID: "e2"}}},
		"trace": struct {
			inspect.Trace
			WaitingBehind *inspect.Head `json:"waiting_behind,omitempty"`
		}{inspect.Trace{EventDetail: inspect.EventDetail{Event: ev}}, &inspect.Head{EventID: "h", AvailableAt: later}},
		"timeline": inspect.Timeline{AggregateType: "order", Blocker: &ev, WaitingSince: &now},
		"status":   statusJSON{Snapshot: inspect.Snapshot{TakenAt: now, NextScheduledAt: &later}, MissingTopics: nil},
		"map":      map[string][]inspect.Head{"b": {{AvailableAt: now}}, "a": nil},
	} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := farTimeJSON(v)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: farTimeJSON = %s, %v\nencoding/json: %s", name, got, err, want)
		}
	}
}

// A time held through a pointer (failed_at, lease_until, published_at,
// next_scheduled_at) is written as one held by value: *time.Time has
// time.Time's MarshalJSON, and was left to encoding/json, which failed the
// whole document on year 294276.
func TestFarTimeJSONWritesPointedTimes(t *testing.T) {
	t.Parallel()
	far := time.Date(294276, 12, 31, 0, 0, 0, 0, time.UTC)
	bc := time.Date(-4712, 11, 24, 0, 0, 0, 0, time.UTC)
	pp := &bc
	v := struct {
		inspect.Event
		Snapshot inspect.Snapshot `json:"snapshot"`
		Twice    **time.Time      `json:"twice"`
	}{inspect.Event{EventID: "e1", FailedAt: &far, LeaseUntil: &bc, PublishedAt: &far}, inspect.Snapshot{NextScheduledAt: &far}, &pp}
	var b strings.Builder
	if err := writeJSON(&b, v); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	for k, want := range map[string]string{"failed_at": "294276-12-31 00:00:00+00", "lease_until": "4713-11-24 00:00:00+00 BC",
		"published_at": "294276-12-31 00:00:00+00", "twice": "4713-11-24 00:00:00+00 BC"} {
		if doc[k] != want {
			t.Errorf("%s = %v, want %q", k, doc[k], want)
		}
	}
	if s, _ := doc["snapshot"].(map[string]any); s == nil || s["next_scheduled_at"] != "294276-12-31 00:00:00+00" {
		t.Errorf("snapshot = %v", doc["snapshot"])
	}
}
