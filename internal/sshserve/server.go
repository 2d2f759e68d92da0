package sshserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"charm.land/ssh"
	"charm.land/wish/v2"
	gossh "golang.org/x/crypto/ssh"

	"github.com/outboxtop/outboxtop/internal/console"
	"github.com/outboxtop/outboxtop/internal/inspect"
)

// Config configures the server.
type Config struct {
	// HostKeyPath is the server's private host key; an Ed25519 key is generated
	// there (mode 0600) when the file does not exist.
	HostKeyPath string
	// AuthorizedKeysPath lists the keys that may log in (OpenSSH authorized_keys
	// format). Required.
	AuthorizedKeysPath string
	// OperatorsPath lists the keys that may act (same format); optional. Its keys
	// need not be repeated in AuthorizedKeysPath.
	OperatorsPath string
	// IdleTimeout closes a console after this long without a key press or a
	// resize; 0 never does.
	IdleTimeout time.Duration
	// Console is the console every session gets. Its Inspector serves operators;
	// the server sets Actor, ReadOnly, Context and Terminal per session.
	// Console.ReadOnly makes every session read-only. Unless Console.Snapshots is
	// set, every session reads one shared Overview snapshot, refreshed once per
	// Console.Refresh (default 1 s), however many sessions are open.
	Console console.Options
	// ReadOnlyInspector serves every other key (made with inspect.ReadOnly()).
	ReadOnlyInspector *inspect.Inspector
	// Status writes the text a session without a terminal gets (outboxtop
	// status). An error it returns ends the session with exit status 1, or with
	// the error's own when it is an ExitStatus (status's monitoring-plugin
	// levels: 1 WARNING, 2 CRITICAL, 3 UNKNOWN), its text on stderr.
	Status func(ctx context.Context, w io.Writer) error
	// Logger receives the server's log lines (default: slog.Default()).
	Logger *slog.Logger
	// MaxSessionsPerKey bounds the sessions one key may hold open at once (over
	// all its connections); 0 means no bound.
	MaxSessionsPerKey int
	// KeysPollInterval is how often the key files are checked for changes
	// (modification time or size); a change ends the sessions of keys no longer
	// listed. Default 2 s; ReloadKeys does the same at once (serve: SIGHUP).
	KeysPollInterval time.Duration
	// Fleet, when set, makes every console session the fleet console
	// (outboxtop serve --fleet): Console's Inspector and ReadOnlyInspector are
	// then not used and may be nil.
	Fleet *Fleet
	// ShutdownGrace bounds how long open sessions get to close when the server
	// stops (default 5 s); connections still open then are cut. It also bounds
	// how long a console whose session has ended (client gone, idle, key
	// revoked) gets to stop before its connection is cut.
	ShutdownGrace time.Duration
	// MaxUnauthenticated bounds the connections that have not yet authenticated,
	// over all sources; 0 means no bound. More are closed at once.
	MaxUnauthenticated int
	// MaxUnauthenticatedPerSource bounds them per source: an IPv4 address, an
	// IPv6 /64; 0 means no bound.
	MaxUnauthenticatedPerSource int
}

// Server is the console over SSH.
type Server struct {
	cfg     Config
	keys    keyFiles
	log     *slog.Logger
	ssh     *ssh.Server
	hostFP  string
	base    context.Context // ends when the server stops; every session derives from it
	stop    context.CancelCauseFunc
	mu      sync.Mutex
	closing bool
	open    sync.WaitGroup
	conns   map[*connState]struct{} // under mu
	preauth preauthCount            // under mu
	ptys    sync.Map                // ssh.Session → sessionPty, from its shell or exec request to its handler
}

// Why a console closes, told to its client.
var (
	errShutdown = errors.New("outboxtop serve is shutting down")
	errIdle     = errors.New("idle for too long")
	// errClientGone ends a console whose channel closed or whose connection
	// went: there is nobody left to tell.
	errClientGone = errors.New("the client closed the session")
)

// New checks cfg, loads (or generates) the host key and builds the server.
func New(cfg Config) (*Server, error) {
	if cfg.AuthorizedKeysPath == "" {
		return nil, errors.New("an authorized keys file is required")
	}
	if cfg.HostKeyPath == "" {
		return nil, errors.New("a host key path is required")
	}
	if cfg.Fleet != nil && (cfg.Fleet.Source == nil || cfg.Fleet.Open == nil) {
		return nil, errors.New("a fleet needs its rows and a way to open an outbox")
	}
	if cfg.Fleet == nil && (cfg.Console.Inspector == nil || cfg.ReadOnlyInspector == nil || !cfg.ReadOnlyInspector.IsReadOnly()) {
		return nil, errors.New("an inspector and a read-only inspector are required")
	}
	if cfg.Status == nil {
		return nil, errors.New("a status writer is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 5 * time.Second
	}
	if cfg.KeysPollInterval <= 0 {
		cfg.KeysPollInterval = 2 * time.Second
	}
	if cfg.Console.Snapshots == nil && cfg.Fleet == nil {
		refresh := cfg.Console.Refresh
		if refresh <= 0 {
			refresh = time.Second
		}
		cfg.Console.Snapshots = newSharedSnapshots(cfg.Console.Inspector, refresh)
	}
	if cfg.MaxSessionsPerKey < 0 {
		return nil, errors.New("the session limit per key must not be negative")
	}
	if cfg.MaxUnauthenticated < 0 || cfg.MaxUnauthenticatedPerSource < 0 {
		return nil, errors.New("the limits on unauthenticated connections must not be negative")
	}
	s := &Server{cfg: cfg, log: cfg.Logger, conns: map[*connState]struct{}{}, preauth: preauthCount{bySource: map[string]int{}},
		keys: keyFiles{authorized: cfg.AuthorizedKeysPath, operators: cfg.OperatorsPath}}
	for _, p := range []string{cfg.AuthorizedKeysPath, cfg.OperatorsPath} {
		if p == "" {
			continue
		}
		if _, err := readAuthorizedKeys(p); err != nil {
			return nil, err
		}
	}
	signer, created, err := hostKey(cfg.HostKeyPath)
	if err != nil {
		return nil, err
	}
	s.hostFP = gossh.FingerprintSHA256(signer.PublicKey())
	if created {
		s.log.Info("generated a new SSH host key", "path", cfg.HostKeyPath, "fingerprint", s.hostFP, "type", signer.PublicKey().Type())
	} else {
		s.log.Info("SSH host key", "path", cfg.HostKeyPath, "fingerprint", s.hostFP, "type", signer.PublicKey().Type())
	}
	s.base, s.stop = context.WithCancelCause(context.Background())
	s.ssh, err = wish.NewServer(
		func(srv *ssh.Server) error { srv.AddHostKey(signer); return nil },
		wish.WithVersion("outboxtop"),
		wish.WithPublicKeyAuth(s.authorize),
		wish.WithMiddleware(func(ssh.Handler) ssh.Handler { return s.handle }),
		func(srv *ssh.Server) error {
			srv.HandshakeTimeout = 30 * time.Second
			srv.ConnCallback = s.accept
			srv.SessionRequestCallback = s.sessionStarts
			srv.ServerConfigCallback = func(ctx ssh.Context) *gossh.ServerConfig {
				return &gossh.ServerConfig{
					MaxAuthTries: 6,
					// Called only once the client's signature proved it holds
					// the key: authorize also answers mere queries ("would
					// this public key do?"), which anyone can ask of a listed
					// key.
					VerifiedPublicKeyCallback: func(_ gossh.ConnMetadata, _ gossh.PublicKey, p *gossh.Permissions, _ string) (*gossh.Permissions, error) {
						s.authenticated(ctx)
						return p, nil
					},
				}
			}
			return nil
		},
	)
	if err != nil {
		return nil, fmt.Errorf("building the SSH server: %w", err)
	}
	return s, nil
}

// HostKeyFingerprint is the host key's SHA256 fingerprint, for known_hosts checks.
func (s *Server) HostKeyFingerprint() string { return s.hostFP }

// authorize is the public key callback: unknown keys are refused here, before
// any session exists.
func (s *Server) authorize(ctx ssh.Context, key ssh.PublicKey) bool {
	id, err := s.keys.identify(key)
	if err != nil {
		s.log.Error("cannot read the keys files: refusing logins until they are fixed", "err", err)
		return false
	}
	if id.Role == Refused {
		s.log.Info("refused an unknown key", "fingerprint", id.Fingerprint, "user", ctx.User(), "remote", ctx.RemoteAddr().String())
		return false
	}
	return true
}

// Serve accepts connections on ln until ctx ends, then stops accepting, tells
// every open session that the server is shutting down, waits up to
// ShutdownGrace for them to close, and cuts what is left. It returns nil after
// a shutdown, or the listener's error.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- s.ssh.Serve(ln) }()
	go s.watchKeyFiles(s.cfg.KeysPollInterval)
	var err error
	select {
	case <-ctx.Done():
		// Closing the listener ourselves, rather than through the SSH server,
		// cannot race with Serve registering it: Accept simply fails.
		_ = ln.Close()
		<-errc
	case err = <-errc:
	}
	s.shutdown()
	return err
}

func (s *Server) shutdown() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.stop(errShutdown)
	done := make(chan struct{})
	go func() { s.open.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.cfg.ShutdownGrace):
		s.log.Warn("sessions did not close in time: cutting their connections", "grace", s.cfg.ShutdownGrace)
	}
	_ = s.ssh.Close()
}

// track registers a session unless the server is stopping.
func (s *Server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.open.Add(1)
	return true
}

// ExitStatus is an error of Config.Status that says the session's exit status.
type ExitStatus interface {
	error
	ExitStatus() int
}
