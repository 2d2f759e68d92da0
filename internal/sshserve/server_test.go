package sshserve

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// auditSignal makes every new outbox_audit row send a notification and returns
// a wait for the next one: the test's signal that an action finished.
func (b *testBundle) auditSignal() func() string {
	b.t.Helper()
	ctx := context.Background()
	if _, err := b.pool.Exec(ctx, `
		CREATE FUNCTION test_audit_notify() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN PERFORM pg_notify('test_audit', NEW.actor); RETURN NEW; END $$;
		CREATE TRIGGER test_audit_notify AFTER INSERT ON outbox_audit
		FOR EACH ROW EXECUTE FUNCTION test_audit_notify()`); err != nil {
		b.t.Fatal(err)
	}
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(conn.Release)
	if _, err := conn.Exec(ctx, "LISTEN test_audit"); err != nil {
		b.t.Fatal(err)
	}
	return func() string {
		b.t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		n, err := conn.Conn().WaitForNotification(wctx)
		if err != nil {
			b.t.Fatalf("no audit row: %v", err)
		}
		return n.Payload
	}
}

func (b *testBundle) failedState() (attempts int, failed bool) {
	b.t.Helper()
	if err := b.pool.QueryRow(context.Background(),
		`SELECT attempts, failed_at IS NOT NULL FROM outbox_event WHERE event_id = $1`, failedID).Scan(&attempts, &failed); err != nil {
		b.t.Fatal(err)
	}
	return attempts, failed
}

func TestOperatorRetriesAndTheAuditNamesTheKey(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	audited := b.auditSignal()
	c := b.console(b.operator, 100, 30)
	// A key that arrives before the console knows its size is dropped (nothing
	// is drawn yet, so no key may act): press it once the first screen is up.
	c.waitFor("1 Overview")
	c.send("4") // the Failed view
	// The Failed list itself, loaded: the id alone is also on the Overview
	// (as a blocker), where r finds no event under the cursor.
	c.waitFor("1 listed")
	c.waitFor(failedID[:8])
	c.send("r")
	c.waitFor("type yes + enter")
	c.send("yes\r")
	actor := audited()
	want := gossh.FingerprintSHA256(b.operator.PublicKey()) + " oncall@laptop"
	if actor != want {
		t.Errorf("audit actor %q, want %q", actor, want)
	}
	var action string
	var rows int
	if err := b.pool.QueryRow(context.Background(), `SELECT action, rows FROM outbox_audit`).Scan(&action, &rows); err != nil {
		t.Fatal(err)
	}
	if action != "retry" || rows != 1 {
		t.Errorf("audit: %s of %d rows", action, rows)
	}
	if attempts, failed := b.failedState(); failed || attempts != 0 {
		t.Errorf("after retry: attempts %d, failed %v", attempts, failed)
	}
	c.waitFor("(audit #")
	c.send("q")
	c.waitClosed()
	if !strings.Contains(b.logs.String(), `role=operator`) || !strings.Contains(b.logs.String(), "reason=quit") {
		t.Errorf("server log:\n%s", b.logs.String())
	}
}

func TestReadOnlyKeyIsRefusedActions(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	c := b.console(b.viewer, 80, 24)
	// A key that arrives before the console knows its size is dropped (nothing
	// is drawn yet, so no key may act): press it once the first screen is up.
	c.waitFor("1 Overview")
	c.send("4")
	// The Failed list itself, loaded: the id alone is also on the Overview
	// (as a blocker), where r finds no event under the cursor.
	c.waitFor("1 listed")
	c.waitFor(failedID[:8])
	c.send("r")
	c.waitFor("read-only console: actions are refused")
	c.send("p") // pausing the shared relay is an action too
	c.send("y")
	c.send("q")
	c.waitClosed()
	if attempts, failed := b.failedState(); !failed || attempts != 12 {
		t.Errorf("the event changed: attempts %d, failed %v", attempts, failed)
	}
	var audits int
	if err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_audit`).Scan(&audits); err != nil {
		t.Fatal(err)
	}
	if audits != 0 {
		t.Errorf("%d audit rows", audits)
	}
}

func TestUnknownKeyIsRefusedAtAuthentication(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	client, err := b.dial(b.stranger)
	if err == nil {
		client.Close()
		t.Fatal("an unknown key logged in")
	}
	if !strings.Contains(err.Error(), "unable to authenticate") {
		t.Errorf("dial: %v", err)
	}
	fp := gossh.FingerprintSHA256(b.stranger.PublicKey())
	if !strings.Contains(b.logs.String(), "refused an unknown key") || !strings.Contains(b.logs.String(), fp) {
		t.Errorf("server log:\n%s", b.logs.String())
	}
	// Nothing but public keys is offered.
	_, err = gossh.Dial("tcp", b.addr, &gossh.ClientConfig{
		User: "oncall", Auth: []gossh.AuthMethod{gossh.Password("hunter2"), gossh.KeyboardInteractive(
			func(string, string, []string, []bool) ([]string, error) { return nil, nil })},
		HostKeyCallback: gossh.FixedHostKey(b.hostKey),
	})
	if err == nil || !strings.Contains(err.Error(), "attempted methods [none]") {
		t.Errorf("password login: %v", err)
	}
}

func TestWithoutATerminalTheSessionGetsStatusText(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, key := range []gossh.Signer{b.viewer, b.operator} {
		client, err := b.dial(key)
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"", "status"} {
			sess, err := client.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			var out []byte
			if cmd == "" {
				var buf syncBuffer
				sess.Stdout = &buf
				if err := sess.Shell(); err != nil {
					t.Fatal(err)
				}
				err = sess.Wait()
				out = []byte(buf.String())
			} else {
				out, err = sess.Output(cmd)
			}
			if err != nil {
				t.Fatalf("%q: %v", cmd, err)
			}
			if got := string(out); got != "outboxtop status — pending 0  failed 1\n" {
				t.Errorf("%q: %q", cmd, got)
			}
		}
		sess, err := client.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		out, err := sess.CombinedOutput("sh -c id")
		var exit *gossh.ExitError
		if !errors.As(err, &exit) || exit.ExitStatus() != 2 || strings.Contains(string(out), "sh -c") {
			t.Errorf("a command: %v, %q", err, out)
		}
		client.Close()
	}
}

func TestTerminalSizeResizeAndCtrlZ(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	c := b.console(b.viewer, 70, 20)
	c.waitFor("this terminal is 70×20")
	// ctrl+z must not stop the process serving the console (this test's own).
	c.send("\x1a")
	c.resizeTo(60, 22, "this terminal is 60×22")
	c.resizeTo(100, 30, "Overview")
	c.send("q")
	c.waitClosed()
}

func TestEventTextIsSanitizedAndTheTitleIsFixed(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	c := b.console(b.viewer, 120, 30)
	// A key that arrives before the console knows its size is dropped (nothing
	// is drawn yet, so no key may act): press it once the first screen is up.
	c.waitFor("1 Overview")
	c.send("4")
	// The Failed list itself, loaded: the id alone is also on the Overview
	// (as a blocker), where r finds no event under the cursor.
	c.waitFor("1 listed")
	c.waitFor(failedID[:8])
	c.waitFor("boom")
	c.send("q")
	c.waitClosed()
	raw := c.screen.raw()
	for _, bad := range []string{"pwned\x07", "\x1b]0;pwned", "\x1b[2J\r\x08"} {
		if strings.Contains(raw, bad) {
			t.Errorf("the client got %q raw", bad)
		}
	}
	// The control characters are shown, not obeyed: the reader sees what was sent.
	if !strings.Contains(c.screen.text(), "^[]0;pwned^G") {
		t.Errorf("the hostile text is not shown escaped:\n%s", c.screen.text())
	}
	if !strings.Contains(raw, "\x1b]2;outboxtop\x07") && !strings.Contains(raw, "\x1b]0;outboxtop\x07") {
		t.Errorf("no fixed window title in %q", raw[:min(len(raw), 400)])
	}
}

func TestIdleConsoleIsClosedWithAReason(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.IdleTimeout = 300 * time.Millisecond })
	c := b.console(b.operator, 80, 24)
	c.waitClosed()
	if !strings.Contains(c.screen.text(), "no key pressed for 300ms: this session is closing") {
		t.Errorf("the client got:\n%s", c.screen.text())
	}
	if !strings.Contains(b.logs.String(), "reason=idle") {
		t.Errorf("server log:\n%s", b.logs.String())
	}
}

func TestShutdownTellsOpenSessionsWhy(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	c := b.console(b.operator, 80, 24)
	c.waitFor("Overview")
	if err := b.stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	c.waitClosed()
	if !strings.Contains(c.screen.text(), "outboxtop serve is shutting down: this session is closing.") {
		t.Errorf("the client got:\n%s", c.screen.text())
	}
	if _, err := b.dial(b.operator); err == nil {
		t.Error("a new connection was accepted after shutdown")
	}
}

func TestHostKeyIsGeneratedOnceWithMode0600(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	fi, err := os.Stat(b.hostKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("host key mode %04o", fi.Mode().Perm())
	}
	fp := gossh.FingerprintSHA256(b.hostKey)
	if !strings.Contains(b.logs.String(), "generated a new SSH host key") || !strings.Contains(b.logs.String(), fp) {
		t.Errorf("server log:\n%s", b.logs.String())
	}
	signer, created, err := hostKey(b.hostKeyPath)
	if err != nil || created || gossh.FingerprintSHA256(signer.PublicKey()) != fp {
		t.Errorf("reloading: created %v, err %v", created, err)
	}
	if err := os.Chmod(b.hostKeyPath, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := hostKey(b.hostKeyPath); err == nil || !strings.Contains(err.Error(), "readable or writable by group or others (mode 0644): chmod 600") {
		t.Errorf("a world-readable host key: %v", err)
	}
}

func TestBrokenKeyFileRefusesEveryLogin(t *testing.T) {
	t.Parallel()
	var authorized string
	b := setup(t, func(c *Config) { authorized = c.AuthorizedKeysPath })
	if err := os.WriteFile(authorized, []byte("from=\"10.0.0.0/8\" ssh-ed25519 AAAA\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, key := range []gossh.Signer{b.operator, b.viewer} {
		if client, err := b.dial(key); err == nil {
			client.Close()
			t.Error("a login while the authorized keys file is broken")
		}
	}
	if !strings.Contains(b.logs.String(), "refusing logins until they are fixed") {
		t.Errorf("server log:\n%s", b.logs.String())
	}
}

// A read-only key cannot end the backend that holds the xmin horizon: T is
// refused like every action, the backend keeps running and nothing is
// audited; an operator's T reaches the action (here: nothing held yet).
func TestReadOnlyKeyCannotEndAHorizonHolder(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { conn.Conn().Close(context.Background()); conn.Release() }()
	for _, q := range []string{`BEGIN ISOLATION LEVEL REPEATABLE READ`, `SELECT count(*) FROM outbox_event`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	c := b.console(b.viewer, 80, 24)
	c.waitFor("1 Overview")
	c.send("T")
	c.waitFor("read-only console: actions are refused")
	c.send("y")
	c.send("q")
	c.waitClosed()
	if err := conn.Ping(ctx); err != nil {
		t.Errorf("the holder was ended: %v", err)
	}
	op := b.console(b.operator, 80, 24)
	op.waitFor("1 Overview")
	op.send("T")
	op.waitFor("the xmin horizon is not held: nothing to end")
	op.send("q")
	op.waitClosed()
	var audits int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM outbox_audit`).Scan(&audits); err != nil || audits != 0 {
		t.Errorf("%d audit rows (%v)", audits, err)
	}
}
