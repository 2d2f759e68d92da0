package sshserve

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// greeted opens a raw connection from ip and waits for the server's SSH
// greeting: once it arrives the server holds the connection as unauthenticated.
func (b *testBundle) greeted(ip string) net.Conn {
	b.t.Helper()
	conn := b.rawFrom(ip)
	if line, err := greeting(conn); err != nil || !strings.HasPrefix(line, "SSH-2.0-outboxtop") {
		b.t.Fatalf("a connection from %s got %q, %v; want the server's greeting", ip, line, err)
	}
	return conn
}

func greeting(conn net.Conn) (string, error) {
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer conn.SetReadDeadline(time.Time{})
	return bufio.NewReader(conn).ReadString('\n')
}

// refusedAtOnce fails the test unless a connection from ip is closed without a
// greeting, well before the 30 s a handshake may take.
func (b *testBundle) refusedAtOnce(ip string) {
	b.t.Helper()
	start := time.Now()
	line, err := greeting(b.rawFrom(ip))
	var ne net.Error
	if err == nil || line != "" || errors.As(err, &ne) && ne.Timeout() {
		b.t.Fatalf("a connection from %s over the bound got %q, %v; want it closed", ip, line, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		b.t.Errorf("a connection from %s over the bound was closed after %s", ip, d)
	}
}

// One source may hold MaxUnauthenticatedPerSource connections that have not
// logged in; more from it are closed at once, while a login from another source
// succeeds. Connections that logged in, or closed, no longer count.
func TestUnauthenticatedConnectionsAreBoundedPerSource(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MaxUnauthenticated, c.MaxUnauthenticatedPerSource = 100, 3 })
	var raw []net.Conn
	for range 3 {
		raw = append(raw, b.greeted("127.0.0.1"))
	}
	b.refusedAtOnce("127.0.0.1")
	if _, err := b.dialFrom(b.viewer, "127.0.0.1"); err == nil {
		t.Error("a login from the source at its bound was accepted")
	}
	start := time.Now()
	client, err := b.dialFrom(b.viewer, "127.0.0.2")
	if err != nil {
		t.Fatalf("a login from another source: %v", err)
	}
	defer client.Close()
	t.Logf("a login from another source took %s", time.Since(start))
	if log := b.logs.String(); !strings.Contains(log, "refused a connection: too many unauthenticated connections") ||
		!strings.Contains(log, "limit=max_unauthenticated_per_source") {
		t.Errorf("server log:\n%s", log)
	}

	for _, c := range raw {
		c.Close()
	}
	var held *gossh.Client
	testenv.WaitFor(t, 20*time.Second, "a login from the source once its connections closed", func() bool {
		held, err = b.dialFrom(b.viewer, "127.0.0.1")
		return err == nil
	})
	defer held.Close()
	for range 3 { // the logged-in connection is not counted
		b.greeted("127.0.0.1")
	}
}

// MaxUnauthenticated bounds the connections that have not logged in over all
// sources: at the bound, every new connection is closed at once, a login too,
// until one of them goes.
func TestUnauthenticatedConnectionsAreBoundedInAll(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MaxUnauthenticated, c.MaxUnauthenticatedPerSource = 4, 2 })
	first := b.greeted("127.0.0.1")
	b.greeted("127.0.0.1")
	b.greeted("127.0.0.3")
	b.greeted("127.0.0.3")
	b.refusedAtOnce("127.0.0.4")
	if _, err := b.dialFrom(b.viewer, "127.0.0.2"); err == nil {
		t.Error("a login was accepted with the unauthenticated connections at their bound")
	}
	if !strings.Contains(b.logs.String(), "limit=max_unauthenticated ") {
		t.Errorf("server log:\n%s", b.logs.String())
	}
	first.Close()
	testenv.WaitFor(t, 20*time.Second, "a login once a connection closed", func() bool {
		client, err := b.dialFrom(b.viewer, "127.0.0.2")
		if err == nil {
			client.Close()
		}
		return err == nil
	})
}

// A client that names a listed public key, which anyone may (public keys are
// public), but does not sign with it, is still unauthenticated: it counts
// against the bound.
func TestNamingAListedKeyDoesNotAuthenticate(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MaxUnauthenticatedPerSource = 1 })
	signer := &stalledSigner{pub: b.viewer.PublicKey(), asked: make(chan struct{}), release: make(chan struct{})}
	defer close(signer.release)
	conn := b.rawFrom("127.0.0.1")
	go func() {
		c, _, _, err := gossh.NewClientConn(conn, b.addr, b.clientConfig(signer))
		if err == nil {
			c.Close()
		}
	}()
	select {
	case <-signer.asked: // the server said the key would do
	case <-time.After(20 * time.Second):
		t.Fatal("the client was never asked to sign")
	}
	b.refusedAtOnce("127.0.0.1")
}

// stalledSigner offers a public key, then never signs.
type stalledSigner struct {
	pub     gossh.PublicKey
	asked   chan struct{}
	release chan struct{}
}

func (s *stalledSigner) PublicKey() gossh.PublicKey { return s.pub }

func (s *stalledSigner) Sign(io.Reader, []byte) (*gossh.Signature, error) {
	close(s.asked)
	<-s.release
	return nil, errors.New("no signature")
}
