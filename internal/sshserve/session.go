package sshserve

import (
	"context"
	"errors"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"charm.land/ssh"

	"github.com/outboxtop/outboxtop/internal/console"
)

// handle serves one session: the console on a terminal, the status text without
// one.
func (s *Server) handle(sess ssh.Session) {
	pty, winch, hasPty := s.ptyOf(sess) // first: every session takes its entry
	if !s.track() {
		fmt.Fprintf(sess.Stderr(), "%s\r\n", errShutdown)
		_ = sess.Exit(1)
		return
	}
	defer s.open.Done()
	ctx, cancel := context.WithCancelCause(sess.Context())
	defer cancel(nil)
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
		return
	case !hasPty || len(cmd) == 1:
		log.Info("status session")
		go drain(ctx, winch)
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
		return
	}

	act := newActivity()
	sizes := make(chan console.Size)
	go forwardSizes(ctx, winch, sizes, act)
	if s.cfg.IdleTimeout > 0 {
		go watchIdle(ctx, cancel, act, s.cfg.IdleTimeout)
	}
	terminal := &console.Terminal{
		In:      activityReader{sess, act},
		Out:     sess,
		Environ: append(sess.Environ(), "TERM="+pty.Term),
		Width:   pty.Window.Width,
		Height:  pty.Window.Height,
		Resize:  sizes,
	}
	log.Info("console session opened", "term", termtext.Sanitize(pty.Term), "width", pty.Window.Width, "height", pty.Window.Height)
	start := time.Now()
	if s.cfg.Fleet != nil {
		err = console.RunFleet(s.fleetOptions(ctx, id, terminal))
	} else {
		opts := s.cfg.Console
		opts.ReadOnly = opts.ReadOnly || id.Role != Operator
		if opts.ReadOnly {
			opts.Inspector = s.cfg.ReadOnlyInspector
		}
		opts.Actor = id.Actor()
		opts.Context = ctx
		if opts.Relay != nil && !opts.ReadOnly {
			opts.Relay = console.AuditedRelay{Relay: opts.Relay, Inspector: opts.Inspector, Actor: opts.Actor, Context: ctx, Logger: log}
		}
		opts.Terminal = terminal
		err = console.Run(opts)
	}

	code := 0
	why := context.Cause(ctx)
	switch {
	case sess.Context().Err() != nil:
		log.Info("console session closed by the client", "duration", time.Since(start).Round(time.Second))
		return
	case errors.Is(why, errShutdown):
		fmt.Fprintf(sess, "\r\n%s: this session is closing.\r\n", errShutdown)
		code = 1
	case errors.Is(why, errIdle):
		fmt.Fprintf(sess, "\r\noutboxtop: no key pressed for %s: this session is closing.\r\n", s.cfg.IdleTimeout)
		code = 1
	case errors.Is(why, errRevoked), errors.Is(why, errDemoted):
		fmt.Fprintf(sess, "\r\noutboxtop: %s: this session is closing.\r\n", why)
		code = 1
	case err != nil:
		fmt.Fprintf(sess.Stderr(), "\r\noutboxtop: %s\r\n", termtext.Sanitize(termtext.OneLine(err.Error())))
		code = 1
	}
	log.Info("console session closed", "duration", time.Since(start).Round(time.Second), "reason", closeReason(why, err))
	done()
	_ = sess.Exit(code)
	if errors.Is(why, errRevoked) {
		// A removed key keeps no connection either (a key only demoted to
		// read-only may open a new, read-only session on it).
		if id, err := s.keys.identify(sess.PublicKey()); err == nil && id.Role == Refused {
			if c, ok := sess.Context().Value(connStateID).(*connState); ok {
				_ = c.raw.Close()
			}
		}
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
	case err != nil:
		return err.Error()
	}
	return "quit"
}

// drain empties the window changes of a session that does not draw: the SSH
// library blocks the session's requests until they are read.
func drain(ctx context.Context, winch <-chan ssh.Window) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-winch:
			if !ok {
				return
			}
		}
	}
}

// forwardSizes passes the client's window changes to the console. A resize
// counts as activity.
func forwardSizes(ctx context.Context, winch <-chan ssh.Window, sizes chan<- console.Size, act *activity) {
	for {
		select {
		case <-ctx.Done():
			return
		case w, ok := <-winch:
			if !ok {
				return
			}
			act.touch()
			select {
			case sizes <- console.Size{Width: w.Width, Height: w.Height}:
			case <-ctx.Done():
				return
			}
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
