package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// TestCloudEventsHeadersReadByKcat: `outboxtop --headless --cloudevents
// beside` publishes an event whose CloudEvents attributes kcat, which shares
// no code with the relay's client, reads back from the record's headers,
// beside the relay's own event_id.
func TestCloudEventsHeadersReadByKcat(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatal("kcat is not installed (scripts/test installs it): the record is read back with it")
	}
	ctx := context.Background()
	pool, dsn := testenv.Pool(t)
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 1, "outbox.invoice")
	var id string
	if err := pool.QueryRow(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at)
		VALUES (gen_random_uuid(), 'invoice', 'inv-7', 'InvoiceIssued', '{"total": 10}', '2026-12-01 09:30:00+00')
		RETURNING event_id::text`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	startRelay(t, dsn, k, "--cloudevents", "beside", "--cloudevents-source", "https://shop.example/{aggregate_type}")
	testenv.WaitFor(t, time.Minute, "the event published", func() bool { return count(t, pool, "published_at IS NOT NULL") == 1 })

	kctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(kctx, "kcat", "-C", "-b", strings.Join(k.Brokers, ","), "-t", k.Prefix+"outbox.invoice",
		"-o", "beginning", "-e", "-q", "-f", "%h\n")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat: %v: %s", err, errb.String())
	}
	headers := strings.TrimSpace(out.String())
	for _, want := range []string{"ce_specversion=1.0", "ce_id=" + id, "ce_type=InvoiceIssued",
		"ce_source=https://shop.example/invoice", "ce_subject=inv-7", "ce_time=2026-12-01T09:30:00Z",
		"content-type=application/json", "event_id=" + id} {
		if !strings.Contains(","+headers+",", ","+want+",") {
			t.Errorf("kcat read the headers %q, without %q", headers, want)
		}
	}
}
