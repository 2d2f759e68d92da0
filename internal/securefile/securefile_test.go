//go:build unix

package securefile

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func write(t *testing.T, dir, name string, data []byte, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

// within fails the test when f does not return in time: a named pipe must be
// refused, not waited on.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still blocked after %s", d)
	}
}

func TestReadChecksTypeModeAndSize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	secret := write(t, dir, "secret", []byte("s3cret\n"), 0o600)
	open := write(t, dir, "open", []byte("s3cret\n"), 0o644)
	group := write(t, dir, "group", []byte("s3cret\n"), 0o640)
	keys := write(t, dir, "keys", []byte("ssh-ed25519 AAAA\n"), 0o644)
	groupWritable := write(t, dir, "keys-gw", []byte("ssh-ed25519 AAAA\n"), 0o664)
	big := write(t, dir, "big", bytes.Repeat([]byte("x"), 101), 0o600)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		kind Kind
		want string // "" for no error
	}{
		{secret, Secret, ""},
		{link, Secret, ""}, // a mounted secret is a link: the file it leads to is checked
		{open, Secret, "f " + open + ": readable or writable by group or others (mode 0644): chmod 600 " + open},
		{group, Secret, "(mode 0640)"},
		{keys, PublicList, ""},
		{groupWritable, PublicList, "f " + groupWritable + ": writable by group or others (mode 0664): chmod go-w " + groupWritable},
		{open, Plain, ""},
		{fifo, Secret, "f " + fifo + ": not a regular file (a named pipe)"},
		{fifo, Plain, "not a regular file (a named pipe)"},
		{sock, Plain, "not a regular file (a socket)"},
		{"/dev/zero", PublicList, "f /dev/zero: not a regular file (a device)"},
		{dir, Plain, "not a regular file (a directory)"},
		{big, Secret, "f " + big + ": larger than 100 bytes"},
		{filepath.Join(dir, "missing"), Secret, "no such file"},
	} {
		within(t, 5*time.Second, func() {
			b, err := Read("f", c.path, c.kind, 100)
			switch {
			case c.want == "" && (err != nil || string(b) == ""):
				t.Errorf("Read(%s): %q, %v", c.path, b, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("Read(%s): %v, want an error with %q", c.path, err, c.want)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Errorf("Read(%s): a multi-line error %q", c.path, err)
			}
		})
	}
	if _, err := Read("f", filepath.Join(dir, "missing"), Secret, 100); !IsNotExist(err) {
		t.Errorf("a missing file: %v does not wrap fs.ErrNotExist", err)
	}
}

// A file that grows past the bound after the check is still read no further.
func TestReadStopsAtTheBound(t *testing.T) {
	t.Parallel()
	p := write(t, t.TempDir(), "f", []byte("12345"), 0o600)
	f, err := Open("f", p, Secret, 10)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 20), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read("f", p, Secret, 10); err == nil || !strings.Contains(err.Error(), "larger than 10 bytes") {
		t.Errorf("grown file: %v", err)
	}
}

// A link planted where a new file goes is replaced, and what it points to is not
// written.
func TestWriteNewDoesNotFollowALink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := write(t, dir, "target", []byte("precious"), 0o600)
	p := filepath.Join(dir, "key.pub")
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	if err := WriteNew(p, []byte("ssh-ed25519 AAAA\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("the link's target was written: %q", b)
	}
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Fatalf("%s: %v, %v", p, fi.Mode(), err)
	}
	if b, _ := os.ReadFile(p); string(b) != "ssh-ed25519 AAAA\n" {
		t.Errorf("content %q", b)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".key.pub.tmp-*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}

	dangling := filepath.Join(dir, "key")
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), dangling); err != nil {
		t.Fatal(err)
	}
	if err := CreateExclusive(dangling, []byte("private"), 0o600); err == nil {
		t.Error("CreateExclusive wrote through a dangling link")
	}
	if _, err := os.Stat(filepath.Join(dir, "elsewhere")); err == nil {
		t.Error("the dangling link's target was created")
	}
}
