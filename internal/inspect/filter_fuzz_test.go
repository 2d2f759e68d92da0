package inspect

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzFilterSQL: a filter's values reach PostgreSQL only as parameters. Two
// filters with the same shape (the same fields set, an id prefix of the same
// length) build the same SQL text whatever their values, and every parameter the
// text names is passed.
func FuzzFilterSQL(f *testing.F) {
	f.Add("OrderPlaced", "order", "42", "0a1b", "timeout", int64(time.Hour), int64(0))
	f.Add("x' OR '1'='1", "a\"; DROP TABLE outbox_event; --", "$1", "f0000001-0000-4000-8000-000000000001", "%_\\", int64(0), int64(time.Minute))
	f.Add("", "", "", "------------------------------------", "?", int64(-1), int64(1<<62))
	f.Add("?", "??", "$2?", "ABCDEF", "\x00", int64(1), int64(1))
	f.Fuzz(func(t *testing.T, eventType, aggType, aggID, idPrefix, errText string, older, newer int64) {
		flt := Filter{EventType: eventType, AggregateType: aggType, AggregateID: aggID, IDPrefix: idPrefix,
			ErrorContains: errText, OlderThan: time.Duration(older), NewerThan: time.Duration(newer)}
		if flt.Validate() != nil {
			return
		}
		var w where
		w.addFilter(flt, "created_at")
		shape := Filter{EventType: neutral(eventType), AggregateType: neutral(aggType), AggregateID: neutral(aggID),
			IDPrefix: idShape(idPrefix), ErrorContains: neutral(errText), OlderThan: flt.OlderThan, NewerThan: flt.NewerThan}
		var ws where
		ws.addFilter(shape, "created_at")
		if w.sql() != ws.sql() {
			t.Fatalf("filter values changed the SQL text:\n%s\nvs\n%s", w.sql(), ws.sql())
		}
		for n := 1; n <= len(w.args)+1; n++ {
			has := strings.Contains(w.sql(), "$"+strconv.Itoa(n)+")") || strings.Contains(w.sql(), "$"+strconv.Itoa(n)+":") || strings.Contains(w.sql(), "$"+strconv.Itoa(n)+" ")
			if has != (n <= len(w.args)) {
				t.Fatalf("placeholder $%d present=%v with %d args: %s", n, has, len(w.args), w.sql())
			}
		}
		if strings.Contains(w.sql(), "?") {
			t.Fatalf("unbound ? left in %s", w.sql())
		}
	})
}

func neutral(s string) string {
	if s == "" {
		return ""
	}
	return "x"
}

// idShape keeps what decides the SQL for an id prefix: whether it is a whole uuid.
func idShape(p string) string {
	if p == "" {
		return ""
	}
	if len(p) == 36 {
		return "00000000-0000-4000-8000-000000000000" // Validate passed: a whole uuid
	}
	return "0"
}
