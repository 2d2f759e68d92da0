package sshserve

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// finishes fails the test when f has not returned within 5 s: a named pipe must
// be refused, not opened and waited on.
func finishes(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("still blocked after 5s")
	}
}

// An authorized keys file that group or others may write lets them add a key:
// refused, as OpenSSH's StrictModes refuses it; so is anything but a regular
// file (a device would fill the memory, a named pipe hang the read).
func TestAuthorizedKeysFileChecks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := newKey(t)
	good := filepath.Join(dir, "authorized_keys")
	writeKeys(t, good, "", key, "ann\u2028laptop\U000e0041")
	open := filepath.Join(dir, "open_keys")
	writeKeys(t, open, "", key, "ann")
	if err := os.Chmod(open, 0o666); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo_keys")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	keys, err := readAuthorizedKeys(good)
	if err != nil || len(keys) != 1 {
		t.Fatalf("a 0644 file: %v, %v", keys, err)
	}
	// The comment becomes the audit actor and is shown in the console.
	if got := keys[0].comment; got != "ann laptop<U+E0041>" {
		t.Errorf("comment %q", got)
	}
	for path, want := range map[string]string{
		open:        "keys file " + open + ": writable by group or others (mode 0666): chmod go-w " + open,
		"/dev/zero": "keys file /dev/zero: not a regular file (a device)",
		fifo:        "keys file " + fifo + ": not a regular file (a named pipe)",
		dir:         "not a regular file (a directory)",
	} {
		finishes(t, func() {
			if _, err := readAuthorizedKeys(path); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", path, err, want)
			}
		})
	}
}

// A link planted at the host key's .pub before the key is generated is
// replaced by the public key, and the file it pointed to is left alone; a link
// planted at the key itself makes the generation fail rather than write through.
func TestGeneratedHostKeyDoesNotFollowLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "host_key")
	if err := os.Symlink(victim, path+".pub"); err != nil {
		t.Fatal(err)
	}
	signer, created, err := hostKey(path)
	if err != nil || !created {
		t.Fatalf("created %v, err %v", created, err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the .pub link's target was written: %q", b)
	}
	fi, err := os.Lstat(path + ".pub")
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf(".pub: %v, %v", fi, err)
	}
	if b, _ := os.ReadFile(path + ".pub"); !strings.HasPrefix(string(b), signer.PublicKey().Type()+" ") {
		t.Errorf(".pub holds %q", b)
	}

	linked := filepath.Join(dir, "linked_key")
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), linked); err != nil {
		t.Fatal(err)
	}
	if _, _, err := hostKey(linked); err == nil {
		t.Error("a host key generated through a dangling link")
	}
	if _, err := os.Stat(filepath.Join(dir, "elsewhere")); err == nil {
		t.Error("the dangling link's target was created")
	}

	fifo := filepath.Join(dir, "fifo_key")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	finishes(t, func() {
		if _, _, err := hostKey(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe)") {
			t.Errorf("a named pipe as the host key: %v", err)
		}
	})
}

// A line or paragraph separator or a tag character in an event reaches the SSH
// client in its visible form, never raw: a separator would break the console's
// line, a tag character hide text.
func TestSeparatorsAndTagCharactersReachTheClientVisible(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	if _, err := pool.Exec(context.Background(), `INSERT INTO outbox_event
		(event_id, aggregate_type, aggregate_id, event_type, payload, attempts, failed_at, last_error)
		VALUES ('0f0f0f0f-0000-4000-8000-000000000002', 'order', 'o-2', 'order.created', '{}', 1, now(), $1)`,
		"sep\u2028par\u2029tag\U000e0041end"); err != nil {
		t.Fatal(err)
	}
	b := setupOn(t, pool, nil)
	c := b.console(b.viewer, 160, 30)
	// A key that arrives before the console knows its size is dropped (nothing
	// is drawn yet, so no key may act): press it once the first screen is up.
	c.waitFor("1 Overview")
	c.send("4")
	c.waitFor("2 listed")
	c.waitFor("sep<U+2028>par<U+2029>tag<U+E0041>end")
	c.send("q")
	c.waitClosed()
	for _, bad := range []string{"\u2028", "\u2029", "\U000e0041"} {
		if strings.Contains(c.screen.raw(), bad) {
			t.Errorf("the client got %q raw", bad)
		}
	}
}
