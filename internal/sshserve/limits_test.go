package sshserve

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/outboxtop/outboxtop/internal/console"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// closedWithin reports whether client's connection ends within d.
func closedWithin(client *gossh.Client, d time.Duration) bool {
	done := make(chan struct{})
	go func() { _ = client.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// ssh -N: an authenticated connection that opens no session is closed after the
// idle timeout, like an idle console.
func TestConnectionWithoutASessionIsClosedAfterTheIdleTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.IdleTimeout = 300 * time.Millisecond })
	client, err := b.dial(b.viewer)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if !closedWithin(client, 20*time.Second) {
		t.Fatal("a connection without a session is still open long after the idle timeout")
	}
	if !strings.Contains(b.logs.String(), "closing a connection without a session") {
		t.Errorf("server log:\n%s", b.logs.String())
	}
}

func TestSessionsPerKeyAreLimited(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MaxSessionsPerKey = 1 })
	first := b.console(b.operator, 80, 24)
	first.waitFor("Overview")
	second := b.console(b.operator, 80, 24)
	second.waitClosed()
	if !strings.Contains(second.screen.text(), "too many sessions for this key (at most 1)") {
		t.Errorf("the second session got:\n%s", second.screen.text())
	}
	other := b.console(b.viewer, 80, 24) // another key has its own count
	other.waitFor("Overview")
	first.send("q")
	first.waitClosed()
	// The slot is free again once the first session ends.
	third := b.console(b.operator, 80, 24)
	third.waitFor("Overview")
}

// A key removed from its file loses its open sessions and connections when the
// file is re-read (here: its modification is noticed by the poll).
func TestRemovedKeysSessionIsClosedAfterReload(t *testing.T) {
	t.Parallel()
	var authorized string
	b := setup(t, func(c *Config) {
		c.KeysPollInterval = 50 * time.Millisecond
		authorized = c.AuthorizedKeysPath
	})
	viewer := b.console(b.viewer, 80, 24)
	viewer.waitFor("Overview")
	operator := b.console(b.operator, 80, 24)
	operator.waitFor("Overview")
	if err := os.WriteFile(authorized, []byte("# nobody\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	viewer.waitClosed()
	if !strings.Contains(viewer.screen.text(), "this key is no longer authorized: this session is closing") {
		t.Errorf("the removed key's session got:\n%s", viewer.screen.text())
	}
	if _, err := b.dial(b.viewer); err == nil {
		t.Error("the removed key can still log in")
	}
	// The operator's key is in the other file: its session stays.
	operator.send("?")
	operator.waitFor("ACTIONS")
	if !strings.Contains(b.logs.String(), "key removed: closing its connection") {
		t.Errorf("server log:\n%s", b.logs.String())
	}
}

// fakeRelay stands in for the shared relay.
type fakeRelay struct {
	mu     sync.Mutex
	paused bool
}

func (f *fakeRelay) Pause()  { f.mu.Lock(); f.paused = true; f.mu.Unlock() }
func (f *fakeRelay) Resume() { f.mu.Lock(); f.paused = false; f.mu.Unlock() }
func (f *fakeRelay) Status() console.RelayStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return console.RelayStatus{Paused: f.paused, BrokerReachable: true}
}

func (f *fakeRelay) isPaused() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.paused }

// Pausing the shared relay from a session writes an audit row naming the key,
// and resuming another; the server's log names the key too.
func TestPauseOverSSHIsAuditedWithTheKey(t *testing.T) {
	t.Parallel()
	r := &fakeRelay{}
	b := setup(t, func(c *Config) { c.Console.Relay = r })
	c := b.console(b.operator, 100, 30)
	c.waitFor("Overview")
	audits := func(action string) []string {
		rows, err := b.pool.Query(context.Background(), `SELECT actor FROM outbox_audit WHERE action = $1`, action)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var a string
			if err := rows.Scan(&a); err != nil {
				t.Fatal(err)
			}
			out = append(out, a)
		}
		return out
	}
	want := gossh.FingerprintSHA256(b.operator.PublicKey()) + " oncall@laptop"
	c.send("p")
	c.waitFor("Pause the relay?")
	c.send("yes\r") // pausing asks first: it stops publishing for everyone
	// The audit row commits first, then the relay pauses: wait for both.
	testenv.WaitFor(t, 20*time.Second, "the pause audited and done", func() bool { return len(audits("pause")) == 1 && r.isPaused() })
	if got := audits("pause"); got[0] != want {
		t.Errorf("pause audited as %q, want %q", got[0], want)
	}
	c.waitFor("RELAY PAUSED")
	c.send("p")
	c.waitFor("Resume the relay?")
	c.send("yes\r")
	testenv.WaitFor(t, 20*time.Second, "the resume audited and done", func() bool { return len(audits("resume")) == 1 && !r.isPaused() })
	if !strings.Contains(b.logs.String(), "relay paused") || !strings.Contains(b.logs.String(), "oncall@laptop") {
		t.Errorf("server log:\n%s", b.logs.String())
	}
}

// A host key path that is not a regular file, or far larger than any key, is
// refused before it is read (a device such as /dev/zero would never end).
func TestHostKeyRefusesIrregularAndOversizedFiles(t *testing.T) {
	t.Parallel()
	big := t.TempDir() + "/big_key"
	if err := os.WriteFile(big, make([]byte, maxHostKey+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"/dev/zero": "not a regular file (a device)", big: "larger than 65536 bytes"} {
		if _, _, err := hostKey(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("host key %s: %v, want %q", p, err, want)
		}
	}
}

// ReloadKeys (serve calls it on SIGHUP) ends the operator sessions of a key moved
// to the read-only file; the key may log in again, read-only.
func TestDemotedKeyLosesItsOperatorSessionOnReload(t *testing.T) {
	t.Parallel()
	var authorized, operators string
	b := setup(t, func(c *Config) {
		c.KeysPollInterval = time.Hour // only the explicit reload
		authorized, operators = c.AuthorizedKeysPath, c.OperatorsPath
	})
	c := b.console(b.operator, 80, 24)
	c.waitFor("Overview")
	writeKeys(t, authorized, "", b.operator, "oncall@laptop")
	if err := os.WriteFile(operators, []byte("# nobody acts\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.srv.ReloadKeys()
	c.waitClosed()
	if !strings.Contains(c.screen.text(), "this key may no longer act") {
		t.Errorf("the demoted key's session got:\n%s", c.screen.text())
	}
	again := b.console(b.operator, 80, 24)
	again.waitFor("Overview")
	if !strings.Contains(b.logs.String(), "key's rights reduced") {
		t.Errorf("server log:\n%s", b.logs.String())
	}
	var roles []string
	for _, line := range strings.Split(b.logs.String(), "\n") {
		if strings.Contains(line, "console session opened") {
			if i := strings.Index(line, "role="); i >= 0 {
				roles = append(roles, strings.Fields(line[i:])[0])
			}
		}
	}
	if len(roles) != 2 || roles[1] != "role=read-only" {
		t.Errorf("sessions opened with %v, want the second read-only", roles)
	}
}
