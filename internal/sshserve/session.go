package sshserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"charm.land/ssh"

	"github.com/outboxtop/outboxtop/internal/console"
	"github.com/outboxtop/outboxtop/internal/termtext"
)

// handle serves one session: the console on a terminal, the status text without
// one.
func (s *Server) handle(sess ssh.Session) {
	pty, winch, hasPty := s.ptyOf(sess) // first: every session takes its entry
	ctx, cancel := context.WithCancelCause(sess.Context())
	defer cancel(nil)
	// From the start, whatever the session turns out to be: the SSH library
	// holds the session's requests until a window change is read.
	act, sizes := newActivity(), make(chan console.Size)
	go followChannel(ctx, cancel, winch, sizes, act)
	if !s.track() {
		fmt.Fprintf(sess.Stderr(), "%s\r\n", errShutdown)
		_ = sess.Exit(1)
		return
	}
	defer s.open.Done()
	stop := context.AfterFunc(s.base, func() { cancel(context.Cause(s.base)) })
	defer stop()

	// Who it is, again: the files may have changed since the key authenticated.
	var id Identity
	var err error
	if key := sess.PublicKey(); key != nil {
		id, err = s.keys.identify(key)
	}
	if err != nil || id.Role == Refused {
		fmt.Fprint(sess.Stderr(), "outboxtop serve: this key is not authorized\r\n")
		_ = sess.Exit(1)
		return
	}
	log := s.log.With("fingerprint", id.Fingerprint, "comment", id.Comment, "role", id.Role.String(),
		"remote", sess.RemoteAddr().String())
	done, err := s.openSession(sess.Context(), id, cancel)
	if err != nil {
		log.Info("session refused", "reason", err, "limit", s.cfg.MaxSessionsPerKey)
		fmt.Fprintf(sess.Stderr(), "outboxtop serve: %s (at most %d)\r\n", err, s.cfg.MaxSessionsPerKey)
		_ = sess.Exit(1)
		return
	}
	// The slot is freed before the client is told the session ended (Exit), so
	// a client that reconnects at once is not refused by its own closed session
	// (TestSessionsPerKeyAreLimited failed so under load).
	done = sync.OnceFunc(done)
	defer done()

	cmd := sess.Command()
	switch {
	case len(cmd) > 1 || len(cmd) == 1 && cmd[0] != "status":
		// The command is not echoed: it is the client's text, and the client
		// knows what it sent.
		fmt.Fprint(sess.Stderr(), "outboxtop serve runs the console (no command) or \"status\", nothing else\r\n")
		done()
		_ = sess.Exit(2)
	case !hasPty || len(cmd) == 1:
		log.Info("status session")
		s.serveStatus(ctx, sess, done)
	default:
		cs := consoleSession{sess: sess, ctx: ctx, cancel: cancel, id: id, log: log, done: done, act: act, sizes: sizes}
		s.serveConsole(cs, pty)
	}
}

// sessionPty is a session's pty as its shell or exec request found it.
type sessionPty struct {
	pty   ssh.Pty
	winch <-chan ssh.Window
	ok    bool
}

// sessionStarts is the SSH library's SessionRequestCallback: it reads the pty of
// a session about to start, on the goroutine that handles the session's
// requests. The library writes a window change into the same struct there,
// unguarded, so the session's handler may not read it (a client that resizes
// at once made that a data race).
func (s *Server) sessionStarts(sess ssh.Session, request string) bool {
	if request != "shell" && request != "exec" {
		return false // a subsystem: none is served
	}
	pty, winch, ok := sess.Pty()
	s.ptys.Store(sess, sessionPty{pty, winch, ok})
	return true
}

// ptyOf is what sessionStarts read of sess's pty, given once.
func (s *Server) ptyOf(sess ssh.Session) (ssh.Pty, <-chan ssh.Window, bool) {
	v, _ := s.ptys.LoadAndDelete(sess)
	p, _ := v.(sessionPty)
	return p.pty, p.winch, p.ok
}

// serveStatus writes the status text and ends the session with its exit status.
func (s *Server) serveStatus(ctx context.Context, sess ssh.Session, done func()) {
	code := 0
	if err := s.cfg.Status(ctx, sess); err != nil {
		fmt.Fprintf(sess.Stderr(), "outboxtop: %s\r\n", termtext.Sanitize(termtext.OneLine(err.Error())))
		code = 1
		var exit ExitStatus
		if errors.As(err, &exit) {
			code = exit.ExitStatus() // status's level: 1 WARNING, 2 CRITICAL, 3 UNKNOWN
		}
	}
	done()
	_ = sess.Exit(code)
}

// consoleSession is what serving a console needs of its session.
type consoleSession struct {
	sess   ssh.Session
	ctx    context.Context // ends with the session, its cause saying why
	cancel context.CancelCauseFunc
	id     Identity
	log    *slog.Logger
	done   func()              // frees the key's session slot
	act    *activity           // the client's last key or resize
	sizes  <-chan console.Size // the window's changes, clamped
}

// serveConsole runs the console on the session's terminal, clamped to
// MaxTerminalWidth×MaxTerminalHeight, until it quits or the session ends.
func (s *Server) serveConsole(cs consoleSession, pty ssh.Pty) {
	if s.cfg.IdleTimeout > 0 {
		go watchIdle(cs.ctx, cs.cancel, cs.act, s.cfg.IdleTimeout)
	}
	size := clampSize(pty.Window)
	terminal := &console.Terminal{
		In:      activityReader{cs.sess, cs.act},
		Out:     cs.sess,
		Environ: append(cs.sess.Environ(), "TERM="+pty.Term),
		Width:   size.Width,
		Height:  size.Height,
		Resize:  cs.sizes,
	}
	opened := []any{"term", termtext.Sanitize(pty.Term), "width", size.Width, "height", size.Height}
	if size.Width != pty.Window.Width || size.Height != pty.Window.Height {
		opened = append(opened, "asked", fmt.Sprintf("%d×%d", pty.Window.Width, pty.Window.Height))
	}
	cs.log.Info("console session opened", opened...)
	defer s.cutIfStuck(cs)()
	start := time.Now()
	err := s.runConsole(cs, terminal)
	s.endConsole(cs, err, time.Since(start))
}

// runConsole runs the console, or the fleet console, for the session's key.
func (s *Server) runConsole(cs consoleSession, terminal *console.Terminal) error {
	if s.cfg.Fleet != nil {
		return console.RunFleet(s.fleetOptions(cs.ctx, cs.id, terminal))
	}
	opts := s.cfg.Console
	opts.ReadOnly = opts.ReadOnly || cs.id.Role != Operator
	if opts.ReadOnly {
		opts.Inspector = s.cfg.ReadOnlyInspector
	}
	opts.Actor = cs.id.Actor()
	opts.Context = cs.ctx
	if opts.Relay != nil && !opts.ReadOnly {
		opts.Relay = console.AuditedRelay{Relay: opts.Relay, Inspector: opts.Inspector, Actor: opts.Actor, Context: cs.ctx, Logger: cs.log}
	}
	opts.Terminal = terminal
	return console.Run(opts)
}

// endConsole tells the client why its console ended, when it is still there,
// logs the end, and ends the session.
func (s *Server) endConsole(cs consoleSession, err error, lasted time.Duration) {
	sess, why := cs.sess, endCause(cs.ctx)
	if errors.Is(why, errClientGone) {
		cs.log.Info("console session closed by the client", "duration", lasted.Round(time.Second))
		return
	}
	code := 1
	switch {
	case errors.Is(why, errShutdown):
		fmt.Fprintf(sess, "\r\n%s: this session is closing.\r\n", errShutdown)
	case errors.Is(why, errIdle):
		fmt.Fprintf(sess, "\r\noutboxtop: no key pressed for %s: this session is closing.\r\n", s.cfg.IdleTimeout)
	case errors.Is(why, errRevoked), errors.Is(why, errDemoted):
		fmt.Fprintf(sess, "\r\noutboxtop: %s: this session is closing.\r\n", why)
	case err != nil:
		fmt.Fprintf(sess.Stderr(), "\r\noutboxtop: %s\r\n", termtext.Sanitize(termtext.OneLine(err.Error())))
	default:
		code = 0
	}
	cs.log.Info("console session closed", "duration", lasted.Round(time.Second), "reason", closeReason(why, err))
	cs.done()
	_ = sess.Exit(code)
	if errors.Is(why, errRevoked) {
		s.closeIfRefused(sess)
	}
}

// endCause is why the session of ctx ended: nil while it has not (the console
// quit by itself); errClientGone when the connection went, which cancels the
// session without a cause of its own.
func endCause(ctx context.Context) error {
	why := context.Cause(ctx)
	if errors.Is(why, context.Canceled) {
		return errClientGone
	}
	return why
}

// closeIfRefused closes the connection of a session whose key was removed: a
// removed key keeps no connection either (a key only demoted to read-only may
// open a new, read-only session on it).
func (s *Server) closeIfRefused(sess ssh.Session) {
	if id, err := s.keys.identify(sess.PublicKey()); err == nil && id.Role == Refused {
		if c, ok := sess.Context().Value(connStateID).(*connState); ok {
			_ = c.raw.Close()
		}
	}
}

// cutIfStuck watches a console session: when the session has ended but the
// console has not stopped ShutdownGrace later, its output is blocked on a client
// that reads none, and only the end of the connection unblocks it, so the
// connection is closed. The returned stop ends the watch.
func (s *Server) cutIfStuck(cs consoleSession) (stop func()) {
	stopped := make(chan struct{})
	go func() {
		select {
		case <-stopped:
			return
		case <-cs.ctx.Done():
		}
		t := time.NewTimer(s.cfg.ShutdownGrace)
		defer t.Stop()
		select {
		case <-stopped:
		case <-t.C:
			cs.log.Warn("the console did not stop after its session ended: closing its connection",
				"reason", closeReason(endCause(cs.ctx), nil), "grace", s.cfg.ShutdownGrace)
			if c, ok := cs.sess.Context().Value(connStateID).(*connState); ok {
				_ = c.raw.Close()
			}
		}
	}()
	return func() { close(stopped) }
}

func closeReason(why, err error) string {
	switch {
	case errors.Is(why, errShutdown):
		return "shutdown"
	case errors.Is(why, errIdle):
		return "idle"
	case errors.Is(why, errRevoked):
		return "key revoked"
	case errors.Is(why, errDemoted):
		return "key demoted"
	case errors.Is(why, errClientGone):
		return "client gone"
	case err != nil:
		return err.Error()
	}
	return "quit"
}

// The largest terminal a console is drawn for. A console keeps cells for its
// whole screen, several times over (the frame, the last frame sent, the view's
// text): a client's 2000×2000 cost serve 500 MB and 10000×10000 gigabytes. At
// 500×200 (100,000 cells) a console costs about 30 MB, 80×24 about 7 MB; that
// is more than a person reads, and more than a 5K display shows in a legible
// font.
const (
	MaxTerminalWidth  = 500
	MaxTerminalHeight = 200
)

// clampSize is the size a console is drawn at in a client's window of w.
func clampSize(w ssh.Window) console.Size {
	return console.Size{Width: min(w.Width, MaxTerminalWidth), Height: min(w.Height, MaxTerminalHeight)}
}

// followChannel reads a session's window changes until its channel closes, and
// then ends the session (errClientGone): the channel's requests end when the
// client closes it or the connection goes. It passes each change to sizes,
// clamped, and only the latest while nobody takes it (a busy console, or no
// console): the SSH library holds the channel's other requests, its close among
// them, until a change is read. A change counts as activity.
func followChannel(ctx context.Context, end context.CancelCauseFunc, winch <-chan ssh.Window, sizes chan<- console.Size, act *activity) {
	if winch == nil {
		return // no pty: no window changes, and no way to see the close here
	}
	var next console.Size
	pending := false
	for {
		out := sizes
		if !pending || ctx.Err() != nil {
			out = nil
		}
		select {
		case w, ok := <-winch:
			if !ok {
				end(errClientGone)
				return
			}
			act.touch()
			next, pending = clampSize(w), true
		case out <- next:
			pending = false
		}
	}
}

// activity is when the client last sent a key or a resize. The console's own
// redraws do not count, which is why the SSH library's connection idle timeout
// (reset by any traffic) cannot be used.
type activity struct{ last atomic.Int64 }

func newActivity() *activity {
	a := &activity{}
	a.touch()
	return a
}

func (a *activity) touch()               { a.last.Store(time.Now().UnixNano()) }
func (a *activity) since() time.Duration { return time.Since(time.Unix(0, a.last.Load())) }

type activityReader struct {
	r   io.Reader
	act *activity
}

func (r activityReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.act.touch()
	}
	return n, err
}

// watchIdle ends the console (cause errIdle) once act has been quiet for d.
func watchIdle(ctx context.Context, cancel context.CancelCauseFunc, act *activity, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			idle := act.since()
			if idle >= d {
				cancel(errIdle)
				return
			}
			t.Reset(d - idle)
		}
	}
}
