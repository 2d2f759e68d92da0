// Package pgtemp runs a throwaway PostgreSQL cluster from the PostgreSQL binaries
// installed on this machine: the tests use one per test binary and `outboxtop demo`
// uses one when no --dsn is given.
//
// A cluster lives in its own temp directory (data, Unix socket, log) and listens on a
// free loopback port. When the process runs as root, which initdb refuses, the
// cluster runs as the "postgres" user. Close stops the server and removes the
// directory. A process that dies without Close leaves its directory behind with an
// owner file naming its pid; the next Start reclaims any such directory whose owner
// is gone, stopping its server first, so killed runs do not pile up.
package pgtemp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoBinaries means no PostgreSQL server binaries were found.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, postgres) not found in PATH or /usr/lib/postgresql/*/bin: install them (Debian: apt-get install postgresql) or pass --dsn")

const dirPrefix = "outboxtop-pg-"

// Options tune a cluster. The zero value is a durable cluster (fsync on).
type Options struct {
	// NoFsync turns fsync off: faster, for tests only.
	NoFsync bool
	// Settings are extra server settings (name → value), passed as -c name=value.
	Settings map[string]string
	// BinDir overrides where initdb and postgres are looked up.
	BinDir string
}

// Cluster is a running throwaway PostgreSQL server.
type Cluster struct {
	dir  string
	port int
	cmd  *exec.Cmd
	bin  string
	cred *syscall.Credential
	done chan struct{}
	opts Options
}

// Start initialises and starts a new cluster and waits until it accepts connections.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	bin, err := findBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	ReclaimStale()

	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("creating cluster directory: %w", err)
	}
	c := &Cluster{dir: dir, bin: bin, cred: cred, done: make(chan struct{}), opts: opts}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		c.removeDir()
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			c.removeDir()
			return nil, fmt.Errorf("handing %s to the postgres user: %w", dir, err)
		}
	}
	if err := c.initdb(ctx); err != nil {
		c.removeDir()
		return nil, err
	}
	if err := c.start(ctx, opts); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// DSN is a connection string for the cluster's superuser on database dbname
// ("postgres" when empty).
func (c *Cluster) DSN(dbname string) string {
	if dbname == "" {
		dbname = "postgres"
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, dbname)
}

// Port is the TCP port the server listens on (127.0.0.1).
func (c *Cluster) Port() int { return c.port }

// Dir is the cluster's directory.
func (c *Cluster) Dir() string { return c.dir }

// BinDir is the directory holding the server binaries this cluster runs.
func (c *Cluster) BinDir() string { return c.bin }

// Close stops the server (fast shutdown, then immediate, then kill) and removes the
// cluster's directory. It is safe to call more than once.
func (c *Cluster) Close() error {
	if c.cmd != nil && c.cmd.Process != nil {
		stopProcess(c.cmd.Process, c.done)
	}
	return c.removeDir()
}

// Restart stops the server with a fast shutdown (SIGINT, what `pg_ctl restart -m
// fast` sends: open transactions are rolled back, clients disconnected) and starts
// it again on the same port and data directory. Fault-injection runs use it; the
// server runs as a child process, so pg_ctl's own restart cannot be used.
func (c *Cluster) Restart(ctx context.Context) error {
	if c.dir == "" || c.cmd == nil || c.cmd.Process == nil {
		return errors.New("pgtemp: restart of a cluster that is not running")
	}
	stopProcess(c.cmd.Process, c.done)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		return errors.New("pgtemp: server did not stop for a restart")
	}
	c.done = make(chan struct{})
	return c.start(ctx, c.opts)
}

func (c *Cluster) removeDir() error {
	if c.dir == "" {
		return nil
	}
	err := os.RemoveAll(c.dir)
	c.dir = ""
	return err
}

func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.cred}
	return cmd
}

func (c *Cluster) initdb(ctx context.Context) error {
	cmd := c.command(ctx, "initdb", "-D", c.dataDir(), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb failed: %v: %s", err, lastLines(string(out), 5))
	}
	return nil
}

// start starts the server. A first start picks a port that was free a moment
// ago; postgres cannot be handed a listener, so when another process takes the
// port first (postgres then fails to bind, or a client reaches the other
// server), it tries again on another port. A restart keeps its port.
func (c *Cluster) start(ctx context.Context, opts Options) error {
	if c.port != 0 {
		return c.launch(ctx, opts)
	}
	var err error
	for range 5 {
		if c.port, err = freePort(); err != nil {
			return err
		}
		if err = c.launch(ctx, opts); !errors.Is(err, errPortTaken) {
			return err
		}
		c.done = make(chan struct{})
	}
	return err
}

// errPortTaken is a start that lost its port to another process.
var errPortTaken = errors.New("pgtemp: the port was taken by another process")

func (c *Cluster) launch(ctx context.Context, opts Options) error {
	args := []string{"-D", c.dataDir(), "-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + c.dir,
		"-c", "max_connections=200",
		"-c", "logging_collector=off",
	}
	if opts.NoFsync {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	keys := make([]string, 0, len(opts.Settings))
	for k := range opts.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-c", k+"="+opts.Settings[k])
	}
	// Appended to, so a restart keeps the log of the run before it.
	logFile, err := os.OpenFile(filepath.Join(c.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	var logStart int64
	if fi, err := logFile.Stat(); err == nil {
		logStart = fi.Size()
	}
	// Not CommandContext: the server must outlive the start-up context.
	cmd := c.command(context.Background(), "postgres", args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	c.cmd = cmd
	done := c.done
	go func() { _ = cmd.Wait(); close(done) }()

	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-c.done:
			log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
			if len(log) > int(logStart) {
				log = log[logStart:] // this start's lines only
			}
			if strings.Contains(string(log), "Address already in use") {
				return errPortTaken
			}
			return fmt.Errorf("postgres exited during start-up: %s", lastLines(string(log), 5))
		default:
		}
		ours, err := c.answers(ctx)
		if err == nil {
			if !ours {
				// Another server answers on the port: ours cannot bind it.
				stopProcess(c.cmd.Process, c.done)
				return errPortTaken
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept connections within 60 s: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// answers reports whether a server accepts connections on the cluster's port,
// and whether it is this cluster's (its data directory is ours).
func (c *Cluster) answers(ctx context.Context) (ours bool, err error) {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(pctx, c.DSN(""))
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var dir string
	if err := conn.QueryRow(pctx, "SHOW data_directory").Scan(&dir); err != nil {
		return false, err
	}
	theirs, err1 := os.Stat(dir)
	mine, err2 := os.Stat(c.dataDir())
	return err1 == nil && err2 == nil && os.SameFile(theirs, mine), nil
}

// stopProcess asks postgres for a fast shutdown, escalating to immediate shutdown
// and then SIGKILL if it does not exit.
func stopProcess(p *os.Process, done <-chan struct{}) {
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGINT, 10 * time.Second}, {syscall.SIGQUIT, 5 * time.Second}, {syscall.SIGKILL, 5 * time.Second}} {
		if err := p.Signal(step.sig); err != nil {
			return // already gone
		}
		select {
		case <-done:
			return
		case <-time.After(step.wait):
		}
	}
}

// ReclaimStale stops and removes clusters left behind by processes that no longer
// exist. Start calls it; it is exported for commands that want to tidy up only.
func ReclaimStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		owner, err := os.ReadFile(filepath.Join(dir, "owner.pid"))
		if err != nil {
			continue // not ours, or still being created
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(owner)))
		if err != nil || processAlive(pid) {
			continue
		}
		if spid, err := ServerPID(dir); err == nil && processAlive(spid) {
			if p, err := os.FindProcess(spid); err == nil {
				_ = p.Signal(syscall.SIGQUIT)
				for i := 0; i < 100 && processAlive(spid); i++ {
					time.Sleep(50 * time.Millisecond)
				}
				if processAlive(spid) {
					_ = p.Signal(syscall.SIGKILL)
				}
			}
		}
		_ = os.RemoveAll(dir)
	}
}

// ServerPID reads the postmaster's pid from a cluster directory (Dir()).
func ServerPID(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func findBinDir(override string) (string, error) {
	has := func(dir string) bool {
		for _, n := range []string{"initdb", "postgres"} {
			if st, err := os.Stat(filepath.Join(dir, n)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if override != "" {
		if has(override) {
			return override, nil
		}
		return "", fmt.Errorf("no initdb and postgres in %s", override)
	}
	if p, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// serverCredential returns the identity to run the server as: nil (this process's)
// unless running as root, where it is the postgres user's.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("running as root, and PostgreSQL refuses to run as root: create a \"postgres\" user (Debian's postgresql package does) or run as another user")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort is a port free at the time of asking; a variable so a test can hand
// out a taken one.
var freePort = func() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
