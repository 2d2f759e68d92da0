package sshserve

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	gossh "golang.org/x/crypto/ssh"

	"github.com/outboxtop/outboxtop/internal/console"
	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// billingFailedID is billing's failed event (orders has failedID).
const billingFailedID = "b111b111-0000-4000-8000-000000000001"

// An operator key the fleet file limits to "orders" acts there, its action
// audited in orders' database under the key, and is read-only on "billing".
func TestFleetOperatorKeyLimitedToOneOutbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	orders, ordersDSN := testenv.Pool(t)
	billing, billingDSN := testenv.Pool(t)
	if _, err := billing.Exec(ctx, `INSERT INTO outbox_event
		(event_id, aggregate_type, aggregate_id, event_type, payload, attempts, failed_at, last_error)
		VALUES ($1, 'invoice', 'i-1', 'invoice.issued', '{}', 7, now(), 'boom')`, billingFailedID); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ORDERS_DSN": ordersDSN, "BILLING_DSN": billingDSN}
	outboxes := `[[outbox]]
name = "orders"
dsn_env = "ORDERS_DSN"
labels = { team = "shop" }
[[outbox]]
name = "billing"
dsn_env = "BILLING_DSN"
labels = { team = "payments" }
`
	path := filepath.Join(t.TempDir(), "fleet.toml")
	f, err := fleet.Parse(path, outboxes, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	p, err := fleet.NewPoller(f, fleet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	// The limits are read when a session opens an outbox; the operator's key
	// (made by setupOn) is known only after it.
	var limits atomic.Pointer[fleet.File]
	b := setupOn(t, orders, func(c *Config) {
		c.Fleet = &Fleet{
			Source: p,
			Title:  "fleet.toml",
			Open: func(ctx context.Context, name string, operator bool) (console.Options, func(), error) {
				pool, o, err := p.Open(ctx, name, 4)
				if err != nil {
					return console.Options{}, nil, err
				}
				var io []inspect.Option
				if !operator {
					io = append(io, inspect.ReadOnly())
				}
				in, err := inspect.New(pool, o.Schema, io...)
				if err != nil {
					pool.Close()
					return console.Options{}, nil, err
				}
				return console.Options{Inspector: in}, pool.Close, nil
			},
			MayAct: func(fp, name string) bool { return limits.Load().MayAct(fp, name) },
		}
	})
	fp := gossh.FingerprintSHA256(b.operator.PublicKey())
	limited, err := fleet.Parse(path, outboxes+"[[operator]]\nfingerprint = \""+fp+"\"\noutboxes = [\"team=shop\"]\n", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	limits.Store(limited)
	if rows := p.Poll(ctx); rows[0].Name != "billing" || rows[1].Name != "orders" {
		t.Fatalf("rows %s %s: the keys below assume billing first", rows[0].Name, rows[1].Name)
	}
	audited := b.auditSignal() // on orders' database

	// billing: the same key is read-only there.
	c := b.console(b.operator, 100, 30)
	c.waitFor("outboxtop fleet")
	c.send("\r")
	c.waitFor("billing (esc: fleet)")
	c.send("4")
	// The Failed list itself, loaded: the id alone is also on the Overview
	// (as a blocker), where r finds no event under the cursor.
	c.waitFor("1 listed")
	c.waitFor(billingFailedID[:8])
	c.send("r")
	c.waitFor("read-only console: actions are refused")
	c.send("q") // back to the fleet, as in k9s: its ? screen shows
	c.send("?")
	c.waitFor("IN AN OUTBOX'S CONSOLE")
	c.send("q") // closes the help
	c.send("q")
	c.waitClosed()

	// orders: it acts, and the audit row lands in orders' database.
	c = b.console(b.operator, 100, 30)
	c.waitFor("outboxtop fleet")
	c.send("j")
	c.send("\r")
	c.waitFor("orders (esc: fleet)")
	c.send("4")
	// The Failed list itself, loaded: the id alone is also on the Overview
	// (as a blocker), where r finds no event under the cursor.
	c.waitFor("1 listed")
	c.waitFor(failedID[:8])
	c.send("r")
	c.waitFor("type yes + enter")
	c.send("yes\r")
	if actor := audited(); actor != fp+" oncall@laptop" {
		t.Errorf("audit actor %q", actor)
	}
	c.waitFor("(audit #")
	c.send("\x03") // ctrl+c quits from inside an outbox's console
	c.waitClosed()

	if attempts, failed := b.failedState(); failed || attempts != 0 {
		t.Errorf("orders' event after retry: attempts %d, failed %v", attempts, failed)
	}
	var audits, attempts int
	if err := billing.QueryRow(ctx, `SELECT (SELECT count(*) FROM outbox_audit), attempts FROM outbox_event WHERE event_id = $1`,
		billingFailedID).Scan(&audits, &attempts); err != nil {
		t.Fatal(err)
	}
	if audits != 0 || attempts != 7 {
		t.Errorf("billing changed: %d audit rows, attempts %d", audits, attempts)
	}
	if logs := b.logs.String(); !strings.Contains(logs, "outbox=billing may_act=false") || !strings.Contains(logs, "outbox=orders may_act=true") {
		t.Errorf("server log:\n%s", logs)
	}
}
