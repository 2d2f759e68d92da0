package security

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/cmd"
	"github.com/outboxtop/outboxtop/migrations"
)

// TestMigrateSaysWhoHoldsItsLock: every role may take an advisory lock, so a
// console role can hold the one migrate takes. migrate says which session
// holds it (pid, role) after a second and gives up after --lock-wait, saying
// so, instead of waiting silently for as long as the holder likes.
func TestMigrateSaysWhoHoldsItsLock(t *testing.T) {
	t.Parallel()
	b := setup(t, "console")
	conn, err := b.as.Acquire(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(b.ctx, `SELECT pg_advisory_lock($1)`, migrations.LockKey("public")); err != nil {
		t.Fatalf("the console role takes migrate's lock: %v", err)
	}
	var pid int
	if err := conn.QueryRow(b.ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	start := time.Now()
	code := cmd.Run(b.ctx, []string{"migrate", "--lock-wait", "2s"}, cmd.IO{Out: &out, Err: &errb,
		Getenv: func(k string) string {
			if k == "OUTBOXTOP_DSN" {
				return b.dsn
			}
			return ""
		}})
	took := time.Since(start)
	if code == 0 || took > 10*time.Second {
		t.Fatalf("migrate with its lock held: exit %d after %v\n%s%s", code, took, out.String(), errb.String())
	}
	msg := errb.String()
	holder := "pid " + strconv.Itoa(pid) + " (role " + b.role
	if !strings.Contains(msg, "waiting for the migration lock") || strings.Count(msg, holder) < 2 ||
		!strings.Contains(msg, "after waiting 2s") {
		t.Errorf("migrate's messages should name the holder (%s) while waiting and when giving up:\n%s", holder, msg)
	}
	if _, err := conn.Exec(b.ctx, `SELECT pg_advisory_unlock($1)`, migrations.LockKey("public")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := cmd.Run(b.ctx, []string{"migrate", "--lock-wait", "2s"}, cmd.IO{Out: &out, Err: &errb,
		Getenv: func(k string) string {
			if k == "OUTBOXTOP_DSN" {
				return b.dsn
			}
			return ""
		}}); code != 0 {
		t.Errorf("migrate once the lock is free: exit %d\n%s", code, errb.String())
	}
}
