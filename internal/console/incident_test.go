package console

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSmallTerminalNoKeyActs: at 60×20 only the size notice is drawn, so no key may
// act: 4, r, y once retried an event with no prompt ever shown.
func TestSmallTerminalNoKeyActs(t *testing.T) {
	t.Parallel()
	r := &stubRelay{status: RelayStatus{BrokerReachable: true}}
	b := setup(t, Options{Relay: r})
	b.size(60, 20)
	for _, k := range []string{"4", "r", "y", "space", "*", "x", "y", "s", "y", "p", "y", "5", "a", "y", "enter"} {
		b.keys(k)
	}
	if !strings.Contains(b.text(), "needs 80×24") {
		t.Fatalf("not the size notice:\n%s", b.text())
	}
	if n := b.count(`SELECT count(*) FROM outbox_audit`); n != 0 {
		t.Errorf("%d audit rows after keys on the size notice", n)
	}
	if r.paused() {
		t.Error("the relay was paused from the size notice")
	}
	b.size(80, 24)
	if b.m.mode != modeNormal {
		t.Errorf("mode %d after growing the terminal, want normal", b.m.mode)
	}
}

// TestNewestFirstStaysOnTop: in Published (newest first) a cursor on the first row
// stays there as newer events arrive; moved down, it follows its event.
func TestNewestFirstStaysOnTop(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.keys("5")
	publish := func(id string, ago time.Duration) {
		t.Helper()
		_, err := b.pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id,
			event_type, payload, created_at, available_at, published_at, kafka_topic, kafka_partition, kafka_offset)
			VALUES ($1, 'Order', 'new', 'OrderPlaced', '{}', $2, $2, $2, 'outbox.Order', 0, 99)`, id, b.base.Add(-ago))
		if err != nil {
			t.Fatal(err)
		}
		b.run(b.m.startLoad())
	}
	publish("e1000000-0000-4000-8000-000000000001", 5*time.Second)
	if r, _ := b.m.tables[viewPublished].current(); r.id != "e1000000-0000-4000-8000-000000000001" {
		t.Errorf("cursor on %s, want the newest event", r.id)
	}
	b.keys("j")
	moved, _ := b.m.tables[viewPublished].current()
	publish("e1000000-0000-4000-8000-000000000002", 2*time.Second)
	if r, _ := b.m.tables[viewPublished].current(); r.id != moved.id {
		t.Errorf("cursor on %s, want it to follow %s after the user moved", r.id, moved.id)
	}
}

// stubRelay is a relay whose status the test sets.
type stubRelay struct {
	mu     sync.Mutex
	status RelayStatus
}

func (s *stubRelay) Pause()  { s.mu.Lock(); s.status.Paused = true; s.mu.Unlock() }
func (s *stubRelay) Resume() { s.mu.Lock(); s.status.Paused = false; s.mu.Unlock() }
func (s *stubRelay) Status() RelayStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}
func (s *stubRelay) paused() bool { return s.Status().Paused }
func (s *stubRelay) set(f func(*RelayStatus)) {
	s.mu.Lock()
	f(&s.status)
	s.mu.Unlock()
}

// TestBannerKeepsTheCursorRowOnScreen: with a banner (Kafka unreachable) the table
// has one line less; the cursor on the last row is still drawn, at both sizes.
func TestBannerKeepsTheCursorRowOnScreen(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			r := &stubRelay{status: RelayStatus{BrokerReachable: true}}
			b := setup(t, Options{Relay: r})
			b.size(size[0], size[1])
			if _, err := b.pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type,
				aggregate_id, event_type, payload, created_at, available_at)
				SELECT ('a9000000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, 'Order', 'ord-' || (500 + g),
					'OrderPlaced', '{}', $1::timestamptz - g * interval '1 second', $1::timestamptz - g * interval '1 second'
				FROM generate_series(1, 60) g`, b.base); err != nil {
				t.Fatal(err)
			}
			b.keys("2")
			r.set(func(s *RelayStatus) { s.BrokerReachable = false })
			b.run(b.m.startLoad())
			b.keys("G")
			screen := b.text()
			lines := strings.Split(screen, "\n")
			if len(lines) != size[1] || !strings.Contains(lines[2], "KAFKA UNREACHABLE") {
				t.Fatalf("no banner, or not %d lines:\n%s", size[1], screen)
			}
			if !strings.HasPrefix(lines[size[1]-3], "> ") {
				t.Errorf("the cursor row is not the last body line:\n%s", screen)
			}
			golden(t, fmt.Sprintf("banner-cursor-last-%dx%d", size[0], size[1]), b.screen())
		})
	}
}

// TestFooterInEveryMode: help, confirm and filter modes say which keys work, at
// both sizes; the confirm prompt keeps what to type at 80 columns.
func TestFooterInEveryMode(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			b := setup(t, Options{})
			b.size(size[0], size[1])
			b.keys("4", "space", "space", "space", "r")
			lines := strings.Split(b.text(), "\n")
			if !strings.Contains(lines[len(lines)-2], "type yes + enter: █") || !strings.Contains(lines[len(lines)-1], "cancel") {
				t.Errorf("confirm:\n%s", b.text())
			}
			golden(t, fmt.Sprintf("mode-confirm-%dx%d", size[0], size[1]), b.screen())
			b.keys("n", "s")
			b.typeText("poison")
			lines = strings.Split(b.text(), "\n")
			if !strings.Contains(lines[len(lines)-2], "reason: poison") || !strings.Contains(lines[len(lines)-1], "esc cancel") {
				t.Errorf("reason:\n%s", b.text())
			}
			golden(t, fmt.Sprintf("mode-reason-%dx%d", size[0], size[1]), b.screen())
			// Enter takes the reason and asks for yes, naming the action and the ids.
			b.keys("enter")
			lines = strings.Split(b.text(), "\n")
			if !strings.Contains(lines[len(lines)-2], "Skip (archive unpublished) 3 events? type yes + enter: █ (d0000002") ||
				!strings.Contains(lines[len(lines)-1], "type yes, enter run") {
				t.Errorf("yes after the reason:\n%s", b.text())
			}
			b.keys("esc", "/")
			b.typeText("type:OrderPlaced agg:ord-1003")
			lines = strings.Split(b.text(), "\n")
			if !strings.Contains(lines[len(lines)-2], "agg:ord-1003") || !strings.Contains(lines[len(lines)-1], "apply") {
				t.Errorf("filter: what was typed or the footer is missing:\n%s", b.text())
			}
			golden(t, fmt.Sprintf("mode-filter-%dx%d", size[0], size[1]), b.screen())
			b.keys("esc", "?")
			lines = strings.Split(b.text(), "\n")
			if !strings.Contains(lines[len(lines)-1], "close help") {
				t.Errorf("help:\n%s", b.text())
			}
		})
	}
}

// TestLongErrorWrapsInDetail: the poison's whole error is on screen, to its last
// digits, at both sizes.
func TestLongErrorWrapsInDetail(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			b := setup(t, Options{})
			b.size(size[0], size[1])
			msg := "record too large: the event's payload is 1048577 bytes and the topic accepts at most max.message.bytes; " +
				"raise it on the topic or publish with --kafka-max-message-bytes 1000000"
			if _, err := b.pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id,
				event_type, payload, created_at, available_at, failed_at, attempts, last_error)
				VALUES ('d9000000-0000-4000-8000-000000000001', 'Order', 'big', 'OrderPlaced', '{}', $1, $1, $1, 1, $2)`,
				b.base.Add(-time.Minute), msg); err != nil {
				t.Fatal(err)
			}
			b.keys("4", "/")
			b.typeText("id:d9000000")
			b.keys("enter", "enter")
			screen := strings.ReplaceAll(b.text(), "\n", "")
			if !strings.Contains(strings.Join(strings.Fields(screen), " "), "--kafka-max-message-bytes 1000000") {
				t.Errorf("the error is cut:\n%s", b.text())
			}
			golden(t, fmt.Sprintf("detail-long-error-%dx%d", size[0], size[1]), b.screen())
		})
	}
}

// TestUUIDv7ShortIDsTellEventsApart: events minted in the same millisecond share
// their first 8 hex digits; the list, the prompt and the id: filter use the end.
func TestUUIDv7ShortIDsTellEventsApart(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			b := setup(t, Options{})
			b.size(size[0], size[1])
			ids := []string{"01a22e29-0001-7000-8000-00000000a1b1", "01a22e29-0001-7000-8000-00000000c2d2", "01a22e29-0001-7000-8000-00000000e3f3"}
			for i, id := range ids {
				if _, err := b.pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id,
					event_type, payload, created_at, available_at, failed_at, attempts, last_error)
					VALUES ($1, 'Order', 'v7-' || $2, 'OrderPlaced', '{}', $3, $3, $3, 1, 'boom')`,
					id, fmt.Sprint(i), b.base.Add(-time.Duration(i+1)*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			b.keys("4", "/")
			b.typeText("agg:v7-1")
			b.keys("enter")
			b.keys("esc", "space", "space", "space", "r")
			for _, want := range []string{"0000a1b1", "0000c2d2", "0000e3f3"} {
				if !strings.Contains(b.text(), want) {
					t.Errorf("no %s on screen:\n%s", want, b.text())
				}
			}
			golden(t, fmt.Sprintf("v7-ids-confirm-%dx%d", size[0], size[1]), b.screen())
			b.keys("n", "esc", "/")
			b.typeText("id:0000c2d2")
			b.keys("enter")
			if r, ok := b.m.tables[viewFailed].current(); !ok || r.id != ids[1] || len(b.m.tables[viewFailed].rows) != 1 {
				t.Errorf("id:0000c2d2 lists %d rows, cursor %s", len(b.m.tables[viewFailed].rows), r.id)
			}
		})
	}
}

func TestDatabaseErrorLeadsWithItsCause(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("snapshot: %w", fmt.Errorf("failed to connect to `user=app database=orders`:\n\t10.0.0.5:5432 (db): dial error: connect: connection refused"))
	got := dbErrorText(err)
	if !strings.HasPrefix(got, "database: connection refused ← snapshot: failed to connect") || strings.ContainsAny(got, "\n\t^") {
		t.Errorf("%q", got)
	}
}

// TestPagingAndServerSideSearch: past the 500 loaded rows the list says how many
// match, loads the next page at the end, and a plain word finds an event that was
// never loaded.
func TestPagingAndServerSideSearch(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	if _, err := b.pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id,
		event_type, payload, created_at, available_at)
		SELECT gen_random_uuid(), 'Order', 'bulk-' || g, 'OrderPlaced', '{}', $1::timestamptz - interval '1 hour',
			$1::timestamptz - interval '1 hour'
		FROM generate_series(1, 1200) g`, b.base); err != nil {
		t.Fatal(err)
	}
	b.keys("2")
	if !strings.Contains(b.text(), "PENDING · 500 of 1206") {
		t.Fatalf("no total:\n%s", b.text())
	}
	b.keys("G")
	tb := b.m.tables[viewPending]
	if len(tb.rows) != 1000 || !strings.Contains(b.text(), "PENDING · 1000 of 1206") {
		t.Errorf("%d rows after G:\n%s", len(tb.rows), b.text())
	}
	// Equal available_at: ties are broken by seq, so the order holds across pages.
	for i := 1; i < len(tb.rows); i++ {
		if tb.rows[i].availableAt.Equal(tb.rows[i-1].availableAt) && tb.rows[i].seq < tb.rows[i-1].seq {
			t.Fatalf("rows %d and %d out of seq order", i-1, i)
		}
	}
	b.keys("/")
	b.typeText("bulk-1199")
	b.keys("enter")
	if len(tb.rows) != 1 || tb.rows[0].aggregateID != "bulk-1199" {
		t.Errorf("plain word: %d rows:\n%s", len(tb.rows), b.text())
	}
}

// TestSkipFromPending: the scheduled event that blocks its aggregate can be skipped
// from Pending (the console asks for scheduled, not "pending", which skip refuses).
func TestSkipFromPending(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.keys("2", "/")
	b.typeText("id:b0000001")
	b.keys("enter", "s")
	b.typeText("payment provider down; refunded by hand")
	b.keys("enter", "y", "e", "s", "enter")
	if strings.Contains(b.text(), "applies to") {
		t.Fatalf("refused:\n%s", b.text())
	}
	if n := b.count(`SELECT count(*) FROM outbox_audit WHERE action = 'skip' AND rows = 1 AND reason = 'payment provider down; refunded by hand'`); n != 1 {
		t.Errorf("%d skip audit rows with one event, want 1:\n%s", n, b.text())
	}
}

// TestHugePayloadDetail: a poison event's 2 MB one-line payload is shown cut, and
// says where (wrapping it whole stalled the console for minutes on every draw).
func TestHugePayloadDetail(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	if _, err := b.pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id,
		event_type, payload, created_at, available_at, failed_at, attempts, last_error)
		VALUES ('d8000000-0000-4000-8000-000000000001', 'Order', 'hot-1', 'Poison',
			jsonb_build_object('blob', repeat('x', 2000000)), $1, $1, $1, 1, 'record too large')`, b.base); err != nil {
		t.Fatal(err)
	}
	b.keys("4", "/")
	b.typeText("id:d8000000")
	b.keys("enter", "enter")
	for range 3 {
		b.keys("pgdown")
	}
	if !strings.Contains(b.text(), "line cut") {
		t.Errorf("no cut marker:\n%s", b.text())
	}
}
