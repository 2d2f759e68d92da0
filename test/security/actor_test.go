package security

import (
	"bytes"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/cmd"
	"github.com/outboxtop/outboxtop/internal/inspect"
)

// invisibleActors show nothing, yet passed the database's and the Go side's
// checks: a musical symbol format control, a shorthand format control, an
// Egyptian hieroglyph format control, a variation selector of the supplement,
// and mixes with the fillers checked before.
var invisibleActors = []string{"\U0001d173", "\U0001bca0", "\U00013430", "\U000e0100",
	" \U0001d17a\u3164 ", "\U000e0100\u2800\U0001bca3"}

// TestInvisibleActorsAreRefused: an actor that is nothing once internal/ident
// has taken out white space and invisible code points names no one. The
// database's actions and pause audit refuse it under the operator grants, the
// inspector refuses it before asking the database, and the CLI says why.
func TestInvisibleActorsAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, "operator")
	id := b.insert(t, "order", "o-1", 1)[0]
	in, err := inspect.New(b.as, "public")
	if err != nil {
		t.Fatal(err)
	}
	for _, actor := range invisibleActors {
		what := strconv.QuoteToASCII(actor)
		_, err := b.as.Exec(b.ctx, `SELECT out_audit_id FROM outboxtop_retry($1, NULL, ARRAY[$2::uuid], NULL, '{}')`, actor, id)
		assertRefused(t, "the database's retry by "+what, "22023", err)
		_, err = b.as.Exec(b.ctx, `SELECT outboxtop_audit_relay($1, 'pause')`, actor)
		assertRefused(t, "the database's pause by "+what, "22023", err)
		if _, err := in.Do(b.ctx, inspect.Request{Action: inspect.Retry, IDs: []string{id}, Actor: actor}); err == nil ||
			!strings.Contains(err.Error(), "shows nothing") {
			t.Errorf("the inspector's retry by %s: %v, want it refused", what, err)
		}
		if _, err := in.AuditRelay(b.ctx, actor, true); err == nil || !strings.Contains(err.Error(), "shows nothing") {
			t.Errorf("the inspector's pause by %s: %v, want it refused", what, err)
		}
		if code, out := b.cliAs(t, "retry", "--id", id, "--actor", actor, "--yes"); code == cmd.ExitOK || !strings.Contains(out, "shows nothing") {
			t.Errorf("retry --actor %s: exit %d\n%s", what, code, out)
		}
	}
	var n int
	if err := b.admin.QueryRow(b.ctx, `SELECT count(*) FROM outbox_audit`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d audit rows written by invisible actors (%v)", n, err)
	}
}

// TestActorsPrintVisibly: an actor with an invisible code point beside
// visible ones is someone, and audit shows that code point (as <U+…> in text,
// escaped in --json) rather than printing a name that looks like another's.
func TestActorsPrintVisibly(t *testing.T) {
	t.Parallel()
	b := setup(t, "operator")
	id := b.insert(t, "order", "o-1", 1)[0]
	for _, actor := range []string{"bob\U0001d173", "bob\U000e0100", "bob\u3164"} {
		if _, err := b.as.Exec(b.ctx, `SELECT out_audit_id FROM outboxtop_retry($1, NULL, ARRAY[$2::uuid], NULL, '{}')`, actor, id); err != nil {
			t.Fatalf("a retry by %+q: %v", actor, err)
		}
	}
	code, text := b.cliAs(t, "audit")
	for _, want := range []string{"bob<U+1D173>", "bob<U+E0100>", "bob<U+3164>"} {
		if code != cmd.ExitOK || !strings.Contains(text, want) {
			t.Errorf("audit lacks %q: exit %d\n%s", want, code, text)
		}
	}
	code, js := b.cliAs(t, "audit", "--json")
	for _, want := range []string{`bob\ud834\udd73`, `bob\udb40\udd00`, `bob\u3164`} {
		if code != cmd.ExitOK || !strings.Contains(js, want) {
			t.Errorf("audit --json lacks %s: exit %d\n%s", want, code, js)
		}
	}
	for _, raw := range []string{"\U0001d173", "\U000e0100", "\u3164"} {
		if strings.Contains(text+js, raw) {
			t.Errorf("audit printed %+q raw", raw)
		}
	}
}

// cliAs runs outboxtop with args, logged in as b's role, and returns its exit
// code and what it printed.
func (b *bundle) cliAs(t *testing.T, args ...string) (int, string) {
	t.Helper()
	u, err := url.Parse(b.dsn)
	if err != nil {
		t.Fatal(err)
	}
	cc := b.as.Config().ConnConfig
	u.User = url.UserPassword(cc.User, cc.Password)
	var out, errb bytes.Buffer
	code := cmd.Run(b.ctx, args, cmd.IO{Out: &out, Err: &errb, Getenv: func(k string) string {
		if k == "OUTBOXTOP_DSN" {
			return u.String()
		}
		return ""
	}})
	return code, out.String() + errb.String()
}

// TestInvisibleActorEndsNoBackend: terminate-backend checks its actor before
// it signals: the audit row is written only after the backend has exited, so
// a refusal there came too late, leaving a backend ended and no row naming
// who ended it. The operator's own second session is the target (the
// operator may end its own role's backends).
func TestInvisibleActorEndsNoBackend(t *testing.T) {
	t.Parallel()
	b := setup(t, "operator")
	victim, err := b.as.Acquire(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Release()
	pid := victim.Conn().PgConn().PID()
	const target = `(SELECT jsonb_build_object('pid', pid, 'backend_start', backend_start, 'xact_start', xact_start)
		FROM pg_stat_activity WHERE pid = $2)`
	for _, actor := range invisibleActors {
		_, err := b.as.Exec(b.ctx, `SELECT outboxtop_audit_terminate($1, 'stuck', `+target+`)`, actor, pid)
		assertRefused(t, "terminate-backend by "+strconv.QuoteToASCII(actor), "22023", err)
		if err := victim.Ping(b.ctx); err != nil {
			t.Fatalf("terminate-backend by %s, refused, ended the backend: %v", strconv.QuoteToASCII(actor), err)
		}
	}
	in, err := inspect.New(b.as, "public")
	if err != nil {
		t.Fatal(err)
	}
	_, err = in.TerminateBackend(b.ctx, inspect.TerminateRequest{Actor: invisibleActors[0], Reason: "stuck",
		Holder: inspect.XminHolder{PID: int32(pid), Kind: inspect.HolderSession}})
	if err == nil || !strings.Contains(err.Error(), "shows nothing") {
		t.Errorf("the inspector's terminate by an invisible actor: %v, want it refused before anything is asked", err)
	}
}
