package sshserve

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/jackc/pgx/v5/pgxpool"
	gossh "golang.org/x/crypto/ssh"

	"github.com/outboxtop/outboxtop/internal/console"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// failedID is the seeded failed event; its last_error carries escape sequences
// that must never reach a client as such.
const (
	failedID    = "0f0f0f0f-0000-4000-8000-000000000001"
	hostileText = "boom \x1b]0;pwned\x07 \x1b[2J\r\x08"
)

// testBundle is a server on 127.0.0.1 over a database of the test's own with one
// failed event, and three client keys: an operator, a viewer and a stranger.
type testBundle struct {
	t                          *testing.T
	pool                       *pgxpool.Pool
	srv                        *Server
	addr                       string
	hostKey                    gossh.PublicKey
	hostKeyPath                string
	operator, viewer, stranger gossh.Signer
	operatorKey                ed25519.PrivateKey
	logs                       *syncBuffer
	cancel                     context.CancelFunc
	served                     chan error
}

func setup(t *testing.T, tweak func(*Config)) *testBundle {
	t.Helper()
	pool, _ := testenv.Pool(t)
	return setupOn(t, pool, tweak)
}

// setupOn is setup over a migrated database the test brings.
func setupOn(t *testing.T, pool *pgxpool.Pool, tweak func(*Config)) *testBundle {
	t.Helper()
	return setupListening(t, pool, tweak, nil)
}

// setupListening is setupOn with the server's listener wrapped by wrap (nil: as is).
func setupListening(t *testing.T, pool *pgxpool.Pool, tweak func(*Config), wrap func(net.Listener) net.Listener) *testBundle {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_event
		(event_id, aggregate_type, aggregate_id, event_type, payload, attempts, failed_at, last_error)
		VALUES ($1, 'order', 'o-1', 'order.created', '{"n":1}', 12, now(), $2)`, failedID, hostileText); err != nil {
		t.Fatal(err)
	}
	in, err := inspect.New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	ro, err := inspect.New(pool, "public", inspect.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b := &testBundle{t: t, pool: pool, logs: &syncBuffer{}, hostKeyPath: filepath.Join(dir, "host_ed25519")}
	b.operator, b.operatorKey = newKeyPair(t)
	b.viewer, b.stranger = newKey(t), newKey(t)
	writeKeys(t, filepath.Join(dir, "authorized_keys"), "# viewers\n\n", b.viewer, "viewer@desk")
	writeKeys(t, filepath.Join(dir, "operators"), "", b.operator, "oncall@laptop")
	cfg := Config{
		HostKeyPath:        b.hostKeyPath,
		AuthorizedKeysPath: filepath.Join(dir, "authorized_keys"),
		OperatorsPath:      filepath.Join(dir, "operators"),
		Console:            console.Options{Inspector: in},
		ReadOnlyInspector:  ro,
		Status: func(ctx context.Context, w io.Writer) error {
			s, err := in.Snapshot(ctx)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(w, "outboxtop status — pending %d  failed %d\n", s.Counts.Pending, s.Counts.Failed)
			return err
		},
		Logger: slog.New(slog.NewTextHandler(b.logs, nil)),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	b.srv, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(b.hostKeyPath + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	if b.hostKey, _, _, _, err = gossh.ParseAuthorizedKey(pub); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.addr = ln.Addr().String()
	if wrap != nil {
		ln = wrap(ln)
	}
	sctx, cancel := context.WithCancel(context.Background())
	b.cancel, b.served = cancel, make(chan error, 1)
	go func() { b.served <- b.srv.Serve(sctx, ln) }()
	t.Cleanup(func() { b.stop() })
	return b
}

// stop shuts the server down and returns Serve's error (once; later calls nil).
func (b *testBundle) stop() error {
	b.cancel()
	select {
	case err, ok := <-b.served:
		if ok {
			close(b.served)
		}
		return err
	case <-time.After(20 * time.Second):
		b.t.Fatal("Serve did not return after shutdown")
		return nil
	}
}

func newKey(t *testing.T) gossh.Signer {
	t.Helper()
	s, _ := newKeyPair(t)
	return s
}

func newKeyPair(t *testing.T) (gossh.Signer, ed25519.PrivateKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, priv
}

func writeKeys(t *testing.T, path, prefix string, key gossh.Signer, comment string) {
	t.Helper()
	line := strings.TrimSpace(string(gossh.MarshalAuthorizedKey(key.PublicKey()))) + " " + comment + "\n"
	if err := os.WriteFile(path, []byte(prefix+line), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (b *testBundle) dial(key gossh.Signer) (*gossh.Client, error) {
	return gossh.Dial("tcp", b.addr, b.clientConfig(key))
}

func (b *testBundle) clientConfig(key gossh.Signer) *gossh.ClientConfig {
	return &gossh.ClientConfig{
		User:            "oncall",
		Auth:            []gossh.AuthMethod{gossh.PublicKeys(key)},
		HostKeyCallback: gossh.FixedHostKey(b.hostKey),
		Timeout:         10 * time.Second,
	}
}

// rawFrom opens a TCP connection to the server from the loopback address ip
// (any of 127.0.0.0/8 reaches it), closed when the test ends.
func (b *testBundle) rawFrom(ip string) net.Conn {
	b.t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	conn, err := d.Dial("tcp", b.addr)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { conn.Close() })
	return conn
}

// dialFrom logs in with key over a connection from ip.
func (b *testBundle) dialFrom(key gossh.Signer, ip string) (*gossh.Client, error) {
	conn := b.rawFrom(ip)
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	c, chans, reqs, err := gossh.NewClientConn(conn, b.addr, b.clientConfig(key))
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	return gossh.NewClient(c, chans, reqs), nil
}

// session is an SSH session with a terminal of w×h running the console.
type session struct {
	t      *testing.T
	sess   *gossh.Session
	stdin  io.WriteCloser
	screen *screen
}

func (b *testBundle) console(key gossh.Signer, w, h int) *session {
	b.t.Helper()
	client, err := b.dial(key)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { client.Close() })
	sess, err := client.NewSession()
	if err != nil {
		b.t.Fatal(err)
	}
	if err := sess.Setenv("NO_COLOR", "1"); err != nil {
		b.t.Fatal(err)
	}
	if err := sess.RequestPty("xterm-256color", h, w, gossh.TerminalModes{gossh.ECHO: 0}); err != nil {
		b.t.Fatal(err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		b.t.Fatal(err)
	}
	c := &session{t: b.t, sess: sess, stdin: stdin, screen: newScreen()}
	sess.Stdout = c.screen
	sess.Stderr = c.screen
	if err := sess.Shell(); err != nil {
		b.t.Fatal(err)
	}
	go func() {
		_ = sess.Wait()
		c.screen.close()
	}()
	return c
}

func (c *session) send(keys string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, keys); err != nil {
		c.t.Fatal(err)
	}
}

// waitFor waits until the client has been sent text (escape sequences
// stripped), failing the test after a generous deadline.
func (c *session) waitFor(text string) { c.t.Helper(); c.screen.waitFor(c.t, text) }

// waitClosed waits until the server ends the session.
func (c *session) waitClosed() {
	c.t.Helper()
	select {
	case <-c.screen.done:
	case <-time.After(20 * time.Second):
		c.t.Fatalf("session still open; the client got:\n%s", c.screen.text())
	}
}

// screen collects what a session sends and wakes waiters on every write.
type screen struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
	done    chan struct{}
	once    sync.Once
}

func newScreen() *screen { return &screen{changed: make(chan struct{}), done: make(chan struct{})} }

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	close(s.changed)
	s.changed = make(chan struct{})
	return len(p), nil
}

func (s *screen) close() { s.once.Do(func() { close(s.done) }) }

func (s *screen) raw() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func (s *screen) text() string { return ansi.Strip(s.raw()) }

func (s *screen) waitFor(t *testing.T, text string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		got, changed := ansi.Strip(s.buf.String()), s.changed
		s.mu.Unlock()
		if strings.Contains(got, text) {
			return
		}
		select {
		case <-changed:
		case <-s.done:
			if strings.Contains(s.text(), text) {
				return
			}
			t.Fatalf("session closed before %q arrived; the client got:\n%s", text, s.text())
		case <-deadline:
			t.Fatalf("%q never arrived; the client got:\n%s", text, got)
		}
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
