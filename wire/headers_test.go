package wire_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/wire"
)

func TestCheckHeader(t *testing.T) {
	for _, name := range wire.ReservedHeaders() {
		if err := wire.CheckHeader(name); !errors.Is(err, wire.ErrReservedHeader) {
			t.Errorf("%s: %v, want ErrReservedHeader", name, err)
		}
	}
	for _, name := range []string{"traceparent", "Event_Id", "event_id ", "tenant"} {
		if err := wire.CheckHeader(name); err != nil {
			t.Errorf("%q refused: %v", name, err)
		}
	}
	if wire.CheckHeader("") == nil {
		t.Error("empty name accepted")
	}
}

// ReservedHeaders hands out a copy: a caller cannot change what the relay and
// the outbox package refuse.
func TestReservedHeadersIsACopy(t *testing.T) {
	h := wire.ReservedHeaders()
	h[0] = "traceparent"
	if wire.IsReservedHeader("traceparent") || !wire.IsReservedHeader(wire.HeaderEventID) {
		t.Fatal("changing the returned slice changed the reserved set")
	}
}

// The header names are what consumers outside this module match on: spelled
// out here, so that renaming a constant fails a test.
func TestHeaderNamesAreTheDocumentedOnes(t *testing.T) {
	want := []string{"event_id", "event_type", "aggregate_type", "aggregate_id", "created_at"}
	if got := wire.ReservedHeaders(); !slices.Equal(got, want) {
		t.Fatalf("ReservedHeaders() = %v, want %v", got, want)
	}
}

// Meta.Headers is the relay's header set: every reserved name once, in order,
// created_at in UTC.
func TestMetaHeaders(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 30, 0, 123456000, time.FixedZone("CET", 3600))
	hs := wire.Meta{EventID: "0193a1c2-0000-7000-8000-000000000001", EventType: "OrderPaid",
		AggregateType: "order", AggregateID: "o-1", CreatedAt: at}.Headers()
	var keys []string
	got := map[string]string{}
	for _, h := range hs {
		keys = append(keys, h.Key)
		got[h.Key] = string(h.Value)
	}
	if !slices.Equal(keys, wire.ReservedHeaders()) {
		t.Fatalf("keys %v, want %v", keys, wire.ReservedHeaders())
	}
	want := map[string]string{
		wire.HeaderEventID: "0193a1c2-0000-7000-8000-000000000001", wire.HeaderEventType: "OrderPaid",
		wire.HeaderAggregateType: "order", wire.HeaderAggregateID: "o-1", wire.HeaderCreatedAt: "2026-12-01T08:30:00.123456Z",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}
