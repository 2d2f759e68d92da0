package sshserve

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"time"

	"charm.land/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// Why else a session ends, told to its client.
var (
	errRevoked  = errors.New("this key is no longer authorized")
	errDemoted  = errors.New("this key may no longer act: log in again for a read-only console")
	errTooMany  = errors.New("too many sessions for this key")
	connStateID = &struct{ name string }{"outboxtop-conn"}
)

// connState is one client connection: its sessions, and since when it has had
// none. A connection that holds no session (ssh -N, or after its sessions ended)
// does nothing a person sees, so it is closed after the idle timeout like an idle
// console: nothing may hold a connection open for ever.
type connState struct {
	raw      net.Conn
	ctx      ssh.Context
	sessions map[*sessionState]struct{}
	idle     time.Time // when the last session ended, the key was accepted, or the connection opened
	authed   bool      // the key was accepted: the handshake is over
	source   string    // the remote address's source (sourceOf), counted in preauth until authed or closed
	counted  bool      // the connection is in preauth
}

// handshakeGrace is the least time a connection gets to authenticate, however
// short the idle timeout: a handshake is not idleness (a loaded host takes a
// while over the key exchange), and an idle timeout shorter than a handshake
// would refuse every login.
const handshakeGrace = 10 * time.Second

// authenticated starts the connection's idle clock once its client has proved
// it holds an accepted key, and stops counting it as unauthenticated.
func (s *Server) authenticated(ctx ssh.Context) {
	c, _ := ctx.Value(connStateID).(*connState)
	if c == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.authed = true
	s.preauth.leave(c)
	if len(c.sessions) == 0 {
		c.idle = time.Now()
	}
}

type sessionState struct {
	role   Role
	cancel context.CancelCauseFunc
}

// key is the connection's authenticated key, nil before authentication.
func (c *connState) key() gossh.PublicKey {
	k, _ := c.ctx.Value(ssh.ContextKeyPublicKey).(gossh.PublicKey)
	return k
}

// accept registers a new connection and watches it for idleness, or refuses it
// (nil: the SSH library closes it at once) when the unauthenticated connections
// are at their bound.
func (s *Server) accept(ctx ssh.Context, raw net.Conn) net.Conn {
	c := &connState{raw: raw, ctx: ctx, sessions: map[*sessionState]struct{}{}, idle: time.Now(), source: sourceOf(raw.RemoteAddr())}
	s.mu.Lock()
	limit, over := s.preauth.enter(c, s.cfg.MaxUnauthenticated, s.cfg.MaxUnauthenticatedPerSource)
	if !over {
		s.conns[c] = struct{}{}
	}
	s.mu.Unlock()
	if over {
		s.refused(raw.RemoteAddr().String(), limit)
		return nil
	}
	ctx.SetValue(connStateID, c)
	go s.watchConn(c)
	return raw
}

// watchConn closes c once it has held no session for the idle limit, and forgets
// it when it closes.
func (s *Server) watchConn(c *connState) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.preauth.leave(c)
		s.mu.Unlock()
	}()
	limit := s.noSessionLimit()
	t := time.NewTimer(limit)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-s.base.Done():
			return
		case <-t.C:
			s.mu.Lock()
			open, since, authed := len(c.sessions), time.Since(c.idle), c.authed
			s.mu.Unlock()
			limit := limit
			if !authed {
				limit = max(limit, handshakeGrace)
			}
			if open == 0 && since >= limit {
				s.log.Info("closing a connection without a session", "remote", c.raw.RemoteAddr().String(), "idle", since.Round(time.Second))
				_ = c.raw.Close()
				return
			}
			next := limit
			if open == 0 {
				next = limit - since
			}
			t.Reset(next)
		}
	}
}

// noSessionLimit is how long a connection may hold no session: the idle timeout,
// or a minute when consoles never time out.
func (s *Server) noSessionLimit() time.Duration {
	if s.cfg.IdleTimeout > 0 {
		return s.cfg.IdleTimeout
	}
	return time.Minute
}

// openSession registers a session of role on the connection of ctx, unless the
// key already holds MaxSessionsPerKey sessions. done unregisters it.
func (s *Server) openSession(ctx ssh.Context, id Identity, cancel context.CancelCauseFunc) (done func(), err error) {
	c, _ := ctx.Value(connStateID).(*connState)
	if c == nil {
		return func() {}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if max := s.cfg.MaxSessionsPerKey; max > 0 {
		n := 0
		for other := range s.conns {
			if k := other.key(); k != nil && gossh.FingerprintSHA256(k) == id.Fingerprint {
				n += len(other.sessions)
			}
		}
		if n >= max {
			return nil, errTooMany
		}
	}
	st := &sessionState{role: id.Role, cancel: cancel}
	c.sessions[st] = struct{}{}
	return func() {
		s.mu.Lock()
		delete(c.sessions, st)
		if len(c.sessions) == 0 {
			c.idle = time.Now()
		}
		s.mu.Unlock()
	}, nil
}

// ReloadKeys reads the key files again and ends what they no longer allow: the
// sessions of a removed key (and its connections), and the operator sessions of
// a key that is now only read-only. serve calls it on SIGHUP; the server also
// calls it when a file's modification time or size changes. If a file cannot be
// read every login is refused, as at any other time, and open sessions are left
// alone until the files are fixed.
func (s *Server) ReloadKeys() {
	s.mu.Lock()
	conns := make([]*connState, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		k := c.key()
		if k == nil {
			continue
		}
		id, err := s.keys.identify(k)
		if err != nil {
			s.log.Error("cannot read the keys files: refusing logins until they are fixed", "err", err)
			return
		}
		s.mu.Lock()
		var ended int
		for st := range c.sessions {
			if id.Role < st.role {
				if id.Role == Refused {
					st.cancel(errRevoked)
				} else {
					st.cancel(errDemoted)
				}
				ended++
			}
		}
		empty := len(c.sessions) == 0
		s.mu.Unlock()
		if id.Role == Refused {
			s.log.Info("key removed: closing its connection", "fingerprint", id.Fingerprint, "sessions", ended)
			if empty {
				_ = c.raw.Close()
			}
		} else if ended > 0 {
			s.log.Info("key's rights reduced: closing its operator sessions", "fingerprint", id.Fingerprint, "sessions", ended)
		}
	}
}

// watchKeyFiles calls ReloadKeys when a key file's modification time or size
// changes, every interval, until the server stops.
func (s *Server) watchKeyFiles(interval time.Duration) {
	stamp := func() []byte {
		var b bytes.Buffer
		for _, p := range []string{s.cfg.AuthorizedKeysPath, s.cfg.OperatorsPath} {
			if p == "" {
				continue
			}
			if fi, err := os.Stat(p); err == nil {
				b.WriteString(fi.ModTime().String())
				b.WriteString(strconv.FormatInt(fi.Size(), 10))
			}
			b.WriteByte(0)
		}
		return b.Bytes()
	}
	last := stamp()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.base.Done():
			return
		case <-t.C:
			if now := stamp(); !bytes.Equal(now, last) {
				last = now
				s.log.Info("a key file changed: reloading the keys")
				s.ReloadKeys()
			}
		}
	}
}
