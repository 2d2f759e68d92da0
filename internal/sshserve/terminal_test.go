package sshserve

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	gossh "golang.org/x/crypto/ssh"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// A pty-req or window-change larger than MaxTerminalWidth×MaxTerminalHeight is
// drawn at that size (a console's memory grows with its area: 10000×10000 took
// gigabytes), and the console still draws; when the client closes it, the end
// is logged. The sizes keep one side under the console's minimum, so that the
// console prints the size it was given.
func TestOversizedTerminalIsClamped(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	c := b.console(b.viewer, 100000, 20)
	c.waitFor("this terminal is 500×20")
	if !strings.Contains(b.logs.String(), "width=500 height=20 asked=100000×20") {
		t.Errorf("server log:\n%s", b.logs.String())
	}
	c.resizeTo(60, 100000, "this terminal is 60×200")
	c.resizeTo(100000, 100000, "Overview")
	c.sess.Close()
	testenv.WaitFor(t, 20*time.Second, "the session's end logged", func() bool {
		return strings.Contains(b.logs.String(), "console session closed by the client")
	})
}

// Closing a console's channel ends the session, though the connection stays:
// its end is logged and the key's session slot is free at once; so does closing
// the connection.
func TestClosingTheChannelEndsTheConsole(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MaxSessionsPerKey = 1 })
	client, err := b.dial(b.viewer)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	first := consoleOn(t, client, 80, 24)
	first.waitFor("Overview")
	first.sess.Close()
	testenv.WaitFor(t, 20*time.Second, "the session's end logged", func() bool {
		return strings.Contains(b.logs.String(), "console session closed by the client")
	})
	again := consoleOn(t, client, 80, 24) // the same connection, the one slot
	again.waitFor("Overview")
	client.Close()
	testenv.WaitFor(t, 20*time.Second, "the second session's end logged", func() bool {
		return strings.Count(b.logs.String(), "console session closed by the client") == 2
	})
}

// resizeTo changes c's window to w×h and waits for text. A resize redraws the
// whole screen, but when a frame is drawn between the resize and the console's
// next view, that view arrives as the cells that changed, which need not hold
// text whole (60×200 over 500×20 sends "6", "×20"): the same resize again
// redraws it whole.
func (c *session) resizeTo(w, h int, text string) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if err := c.sess.WindowChange(h, w); err != nil {
			c.t.Fatal(err)
		}
		if c.screen.arrives(text, time.Second) {
			return
		}
	}
	c.t.Fatalf("%q never arrived after resizes to %d×%d; the client got:\n%s", text, w, h, c.screen.text())
}

// arrives reports whether text has been sent, waiting up to d for it.
func (s *screen) arrives(text string, d time.Duration) bool {
	deadline := time.After(d)
	for {
		s.mu.Lock()
		got, changed := ansi.Strip(s.buf.String()), s.changed
		s.mu.Unlock()
		if strings.Contains(got, text) {
			return true
		}
		select {
		case <-changed:
		case <-s.done:
			return strings.Contains(s.text(), text)
		case <-deadline:
			return false
		}
	}
}

// consoleOn opens a console session of w×h on an open connection.
func consoleOn(t *testing.T, client *gossh.Client, w, h int) *session {
	t.Helper()
	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.RequestPty("xterm-256color", h, w, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	c := &session{t: t, sess: sess, screen: newScreen()}
	sess.Stdout, sess.Stderr = c.screen, c.screen
	if c.stdin, err = sess.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = sess.Wait(); c.screen.close() }()
	return c
}

// A client that stops taking the console's output (a stalled network, a client
// that reads nothing) blocks the console's writes; the idle timeout still ends
// its session: the console is given ShutdownGrace to stop, then its connection
// is closed, and the end is logged. The server's side of the connection stops
// taking writes once the first screen is drawn; resizes keep the session active
// and redrawing until then, and a while after.
func TestIdleTimeoutEndsAConsoleWhoseOutputIsBlocked(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	ln := &stallingListener{conns: make(chan *stallingConn, 1)}
	b := setupListening(t, pool, func(c *Config) {
		c.IdleTimeout = time.Second
		c.ShutdownGrace = time.Second
	}, func(l net.Listener) net.Listener { ln.Listener = l; return ln })
	client, err := b.dial(b.viewer)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c := consoleOn(t, client, MaxTerminalWidth, MaxTerminalHeight)
	stopResizing := resizeEvery(c, 20*time.Millisecond)
	c.waitFor("Overview")
	(<-ln.conns).stall()
	time.Sleep(500 * time.Millisecond) // redraws that cannot be written
	stopResizing()
	testenv.WaitFor(t, 20*time.Second, "the idle session's end logged", func() bool {
		return strings.Contains(b.logs.String(), `msg="console session closed" `) &&
			strings.Contains(b.logs.String(), "reason=idle")
	})
	if !strings.Contains(b.logs.String(), "the console did not stop after its session ended: closing its connection") {
		t.Errorf("server log:\n%s", b.logs.String())
	}
}

// resizeEvery changes c's window between two sizes every d, each change a
// redraw of the whole screen, until stop is called.
func resizeEvery(c *session, d time.Duration) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(d)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-t.C:
				if err := c.sess.WindowChange(MaxTerminalHeight-i%2, MaxTerminalWidth-i%2); err != nil {
					c.t.Errorf("window change: %v", err)
					return
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// stallingListener hands the test each connection it accepts.
type stallingListener struct {
	net.Listener
	conns chan *stallingConn
}

func (l *stallingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &stallingConn{Conn: conn, release: make(chan struct{})}
	select {
	case l.conns <- c:
	default:
	}
	return c, nil
}

// stallingConn is the server's side of a connection whose writes block once
// stalled, as on a network that stopped taking them, until it is closed.
type stallingConn struct {
	net.Conn
	stalled atomic.Bool
	release chan struct{}
	once    sync.Once
}

func (c *stallingConn) stall() { c.stalled.Store(true) }

func (c *stallingConn) Write(p []byte) (int, error) {
	if c.stalled.Load() {
		<-c.release
		return 0, net.ErrClosed
	}
	return c.Conn.Write(p)
}

func (c *stallingConn) Close() error {
	c.once.Do(func() { close(c.release) })
	return c.Conn.Close()
}

// A client may resize before the console has drawn anything: the SSH library
// writes the new size into the session's pty on its own goroutine, so the
// session's handler must not read that struct (under -race, reading it was a
// data race).
func TestResizeAtOnceIsNoDataRace(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	client, err := b.dial(b.viewer)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c := consoleOn(t, client, 80, 24)
	for i := range 20 {
		if err := c.sess.WindowChange(24+i%2, 80); err != nil {
			t.Fatal(err)
		}
	}
	c.waitFor("Overview")
}
