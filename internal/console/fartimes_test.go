package console

import (
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/viewport"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// PostgreSQL's latest and earliest day: finite, stored without complaint.
var (
	farLate  = time.Date(294276, 12, 31, 0, 0, 0, 0, time.UTC)
	farEarly = time.Date(-4712, 11, 24, 0, 0, 0, 0, time.UTC) // 4713 BC
)

// TestFarTimesInTheDetail: an event whose five times, inbox row and history
// lie at either end of PostgreSQL's range reads, in the detail, the trace
// and the audit log, as PostgreSQL writes the time and in words — never year
// -4712 (Go's number for 4713 BC) or an overflowed Duration.
func TestFarTimesInTheDetail(t *testing.T) {
	for _, at := range []time.Time{farLate, farEarly} {
		e := failedEvent("d1000000-0000-4000-8000-000000000001", "ord-1", 1)
		e.State, e.CreatedAt, e.AvailableAt = wire.Published, at, at
		e.LeaseUntil, e.FailedAt, e.PublishedAt = &at, &at, &at
		e.KafkaTopic, e.KafkaPartition, e.KafkaOffset = "outbox.order", new(int32), new(int64)
		e.Payload, e.PayloadBytes = []byte("{}"), 2
		entry := inspect.AuditEntry{ID: 3, At: at, Actor: "alice", Action: "retry", Rows: 1}
		d := inspect.EventDetail{Event: e, Consumed: []inspect.Consumption{{Consumer: "billing", ConsumedAt: at}},
			AttemptHistory: []inspect.Attempt{{At: at, Attempt: 1, Class: "retriable", Outcome: "schedule"}},
			Audit:          []inspect.AuditEntry{entry}}
		a := auditModel{open: true, vp: viewport.New()}
		a.set(auditMsg{recs: []inspect.AuditRecord{{AuditEntry: entry}}}, offlineNow)
		want := map[bool]string{true: "294276-12-31 00:00:00+00", false: "4713-11-24 00:00:00+00 BC"}[at == farLate]
		for name, text := range map[string]string{
			"detail": detailText(d, offlineNow),
			"trace": traceText(inspect.Trace{EventDetail: d, Kafka: &inspect.RecordCheck{Topic: "outbox.order", Found: true,
				Timestamp: &at}}, true, offlineNow),
			"audit": a.vp.GetContent(),
		} {
			for _, bad := range []string{"-4712", "2562047h", "285 years or more", "292277026"} {
				if strings.Contains(text, bad) {
					t.Errorf("%s of an event at %s shows %q:\n%s", name, want, bad, text)
				}
			}
			if name != "audit" && !strings.Contains(text, want) {
				t.Errorf("%s of an event at %s does not show it:\n%s", name, want, text)
			}
		}
		words := map[bool]string{true: "(in 292", false: " years ago)"}[at == farLate]
		if text := detailText(d, offlineNow); !strings.Contains(text, words) {
			t.Errorf("the detail does not say %q of %s:\n%s", words, want, text)
		}
	}
}
