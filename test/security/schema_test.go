package security

import (
	"testing"

	"github.com/google/uuid"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// The schema is configurable: in another schema the printed grants, the action
// functions and the inbox policy work the same, and the public schema's
// functions are not what runs.
func TestActionsAndInboxPolicyInAnotherSchema(t *testing.T) {
	t.Parallel()
	const schema = "tenant_a"
	b := setupIn(t, "operator", schema)
	id := uuid.NewString()
	if _, err := b.admin.Exec(b.ctx, `INSERT INTO tenant_a.outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at)
		VALUES ($1, 'order', 'o-1', 'E', '{}', now())`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := b.admin.Exec(b.ctx, `INSERT INTO tenant_a.consumed_event (consumer_name, event_id) VALUES ('billing', $1)`, id); err != nil {
		t.Fatal(err)
	}
	in, err := inspect.New(b.as, schema)
	if err != nil {
		t.Fatal(err)
	}
	res, err := in.Do(b.ctx, inspect.Request{Action: inspect.Retry, IDs: []string{id}, Actor: "dana"})
	if err != nil || res.Rows != 1 || res.AuditID == 0 {
		t.Fatalf("retry in schema %s: %+v %v", schema, res, err)
	}
	var audits, publicAudits int
	if err := b.admin.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM tenant_a.outbox_audit), (SELECT count(*) FROM public.outbox_audit)`).
		Scan(&audits, &publicAudits); err != nil || audits != 1 || publicAudits != 0 {
		t.Errorf("audit rows: %d in %s, %d in public (%v); want 1 and 0", audits, schema, publicAudits, err)
	}
	var seen int
	if err := b.as.QueryRow(b.ctx, `SELECT count(*) FROM tenant_a.consumed_event`).Scan(&seen); err != nil || seen != 1 {
		t.Errorf("the operator reads %d inbox rows in %s (%v), want 1", seen, schema, err)
	}
	_, err = b.as.Exec(b.ctx, `SELECT public.outboxtop_retry('dana', NULL, ARRAY[$1::uuid], NULL, '{}')`, id)
	assertDenied(t, "an operator of tenant_a may not run public's actions", err)
}
