package cmd

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// serve's bound on connections that have not logged in reaches the server:
// --max-unauthenticated 20 holds two from one address (a tenth) and closes a
// third at once, while a login from another address succeeds; --help names the
// flag, and --fleet takes it too.
func TestServeBoundsUnauthenticatedConnections(t *testing.T) {
	t.Parallel()
	dsn := testenv.DB(t)
	dir := t.TempDir()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, gossh.MarshalAuthorizedKey(key.PublicKey()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &logWatch{changed: make(chan struct{})}
	exited := make(chan int, 1)
	go func() {
		exited <- Run(ctx, []string{"serve", "--ssh-addr", "127.0.0.1:0", "--host-key", filepath.Join(dir, "host_key"),
			"--authorized-keys", authorized, "--no-relay", "--dsn", dsn, "--max-unauthenticated", "20"}, IO{
			In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: logs, Getenv: func(string) string { return "" },
		})
	}()
	addr := logs.waitMatch(t, regexp.MustCompile(`serving the console over SSH" addr=(\S+).* max_unauthenticated=20 max_unauthenticated_per_source=2`), exited)

	greet := func(from string) (string, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
		conn, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		return bufio.NewReader(conn).ReadString('\n')
	}
	for range 2 {
		if line, err := greet("127.0.0.1"); err != nil || !strings.HasPrefix(line, "SSH-2.0-") {
			t.Fatalf("a connection within the bound got %q, %v", line, err)
		}
	}
	start := time.Now()
	if line, err := greet("127.0.0.1"); err == nil || line != "" || time.Since(start) > 5*time.Second {
		t.Errorf("a third connection from the address got %q, %v after %s; want it closed at once", line, err, time.Since(start))
	}
	conn, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c, _, _, err := gossh.NewClientConn(conn, addr, &gossh.ClientConfig{User: "oncall", Auth: []gossh.AuthMethod{gossh.PublicKeys(key)},
		HostKeyCallback: gossh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("a login from another address: %v", err)
	}
	c.Close()
	cancel()
	if code := <-exited; code != ExitOK {
		t.Errorf("exit %d:\n%s", code, logs.String())
	}

	if help := run(t, nil, "serve", "--help"); !strings.Contains(help.out+help.err, "--max-unauthenticated int") {
		t.Errorf("serve --help does not name --max-unauthenticated:\n%s", help.out+help.err)
	}
	if r := run(t, nil, "serve", "--host-key", "h", "--authorized-keys", "k", "--max-unauthenticated", "-1"); r.code != ExitUsage {
		t.Errorf("--max-unauthenticated -1: exit %d, %q", r.code, r.err)
	}
	r := run(t, nil, "serve", "--host-key", "h", "--authorized-keys", "k", "--fleet", filepath.Join(dir, "no-such-fleet.toml"), "--max-unauthenticated", "5")
	if strings.Contains(r.err, "does not apply") {
		t.Errorf("--fleet refuses --max-unauthenticated: %s", r.err)
	}
}
