package relay

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// thisProcess is the holder a relay of this test process names by default,
// computed here independently of DefaultHolder.
func thisProcess(t *testing.T) string {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// holders counts outbox_event rows by lease_holder ("" for NULL) where cond holds.
func (b *bundle) holders(t *testing.T, cond string, args ...any) map[string]int {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), "SELECT coalesce(lease_holder, ''), count(*) FROM outbox_event WHERE "+cond+" GROUP BY 1", args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var h string
		var n int
		if err := rows.Scan(&h, &n); err != nil {
			t.Fatal(err)
		}
		out[h] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A claim records which relay holds the lease, "host:pid" by default; the mark
// keeps it, so a published row names the relay that published it; a later claim
// by another relay (an expired lease) replaces it.
func TestClaimRecordsTheHolder(t *testing.T) {
	t.Parallel()
	for _, ordering := range []Ordering{OrderAggregate, OrderNone} {
		t.Run(string(ordering), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			b.insertSeed(t, 6, 3, "o-")
			me := thisProcess(t)

			cfg := b.config()
			cfg.Ordering = ordering
			first := b.relay(t, cfg)
			token := uuid.New()
			events, err := first.claim(ctx, token, 2)
			if err != nil || len(events) == 0 {
				t.Fatalf("claim: %d events, %v", len(events), err)
			}
			if got := b.holders(t, "lease_token = $1 AND lease_until > now()", token); got[me] != len(events) || len(got) != 1 {
				t.Fatalf("leased rows by holder %v, want all %d held by %q", got, len(events), me)
			}
			if got := b.holders(t, "lease_token IS NULL"); got[""] != 6-len(events) {
				t.Fatalf("unclaimed rows by holder %v, want none named", got)
			}

			// The lease runs out; another relay (another host) claims and publishes.
			if _, err := b.pool.Exec(ctx, `UPDATE outbox_event SET lease_until = now() - interval '1 second' WHERE lease_token = $1`, token); err != nil {
				t.Fatal(err)
			}
			cfg.Holder, cfg.Drain = "relay-b.example:4242", true
			if err := b.relay(t, cfg).Run(ctx); err != nil {
				t.Fatal(err)
			}
			if got := b.holders(t, "published_at IS NOT NULL"); got["relay-b.example:4242"] != 6 {
				t.Fatalf("published rows by holder %v, want all 6 published by relay-b.example:4242", got)
			}

			// A relay run with the defaults names this process.
			b.insertSeed(t, 4, 2, "p-")
			cfg.Holder = ""
			if err := b.relay(t, cfg).Run(ctx); err != nil {
				t.Fatal(err)
			}
			if got := b.holders(t, "aggregate_id LIKE 'p-%' AND published_at IS NOT NULL"); got[me] != 4 {
				t.Fatalf("rows published by the default relay by holder %v, want 4 by %q", got, me)
			}
		})
	}
}

func TestHolderIsBounded(t *testing.T) {
	t.Parallel()
	if err := (Config{Holder: strings.Repeat("h", 201)}).Validate(); err == nil || !strings.Contains(err.Error(), "Holder") {
		t.Fatalf("a 201-byte holder: %v", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("the default holder: %v", err)
	}
	if h := (Config{}).WithDefaults().Holder; h != DefaultHolder() || !strings.HasSuffix(h, ":"+strconv.Itoa(os.Getpid())) {
		t.Fatalf("default holder %q", h)
	}
}
