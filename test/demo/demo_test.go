// Package demo runs the outboxtop binary's demo command as a separate
// process and checks that however it is stopped — SIGTERM, SIGINT (ctrl+c
// without a terminal), q or ctrl+c in the console — it leaves no PostgreSQL
// process and no temp directory behind.
package demo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "outboxtop-demo-test-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "outboxtop")
	build := exec.Command("go", "build", "-o", binary, "github.com/outboxtop/outboxtop")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building outboxtop:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestSignalLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(binary, "demo", "--no-tui", "--duration", "10m", "--rate", "200")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			lines := bufio.NewScanner(stdout)
			// The banner names the cluster directory; the first progress line
			// says the pipeline runs.
			var dir string
			for lines.Scan() && !strings.Contains(lines.Text(), "committed") {
				if _, rest, ok := strings.Cut(lines.Text(), "throwaway PostgreSQL in "); ok {
					dir, _, _ = strings.Cut(rest, ";")
				}
			}
			go func() {
				_, _ = io.Copy(io.Discard, stdout)
				exited <- cmd.Wait()
			}()
			if dir == "" {
				_ = cmd.Process.Kill()
				<-exited
				t.Fatalf("no cluster directory announced; stderr:\n%s", stderr.String())
			}
			pid := testenv.ServerPID(t, dir)

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				// Interrupted before settling: exit 1, not a crash.
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 1 {
					t.Errorf("exit: %v, want exit status 1; stderr:\n%s", err, stderr.String())
				}
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("demo did not exit within 30 s of %v", sig)
			}
			testenv.ClusterGone(t, dir, pid)
		})
	}
}

// q, ctrl+c and SIGTERM while the console runs in a real terminal (tmux).
func TestConsoleQuitLeavesNothingBehind(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	t.Parallel()
	for _, quit := range []string{"q", "C-c", "SIGTERM"} {
		t.Run(quit, func(t *testing.T) {
			t.Parallel()
			tm := newTmux(t, binary+" demo --rate 100")
			tm.waitFor(t, "RELAY")
			pid := tm.panePID(t)
			dir := clusterOwnedBy(t, pid)
			pg := testenv.ServerPID(t, dir)

			// The fault switches are there and answer.
			tm.send(t, "b")
			tm.waitFor(t, "broker outage: ON")
			tm.send(t, "b")
			tm.waitFor(t, "broker outage: off")

			if quit == "SIGTERM" {
				owner, _ := os.ReadFile(filepath.Join(dir, "owner.pid"))
				demoPID, _ := strconv.Atoi(strings.TrimSpace(string(owner)))
				if err := syscall.Kill(demoPID, syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			} else {
				tm.send(t, quit)
			}
			tm.waitExit(t)
			testenv.ClusterGone(t, dir, pg)
		})
	}
}

// tmux is a tmux server of the test's own. Its socket lives in a directory
// the test removes: tmux leaves its socket file behind when the server exits,
// and -L would leave one per run in /tmp/tmux-UID.
type tmux struct{ sock string }

func newTmux(t *testing.T, command string) *tmux {
	t.Helper()
	// os.MkdirTemp, not t.TempDir: a socket path must stay under 108 bytes.
	dir, err := os.MkdirTemp("", "tmux-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tm := &tmux{sock: filepath.Join(dir, "sock")}
	// remain-on-exit is off: the session ends when the demo exits.
	if out, err := exec.Command("tmux", "-S", tm.sock, "-f", "/dev/null", "new-session", "-d", "-s", "demo",
		"-x", "100", "-y", "30", command).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", tm.sock, "kill-server").Run() })
	return tm
}

func (tm *tmux) run(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-S", tm.sock}, args...)...).CombinedOutput()
	return string(out), err
}

func (tm *tmux) send(t *testing.T, keys string) {
	t.Helper()
	if out, err := tm.run("send-keys", "-t", "demo", keys); err != nil {
		t.Fatalf("send-keys %s: %v: %s", keys, err, out)
	}
}

// waitFor waits until the screen shows want.
func (tm *tmux) waitFor(t *testing.T, want string) {
	t.Helper()
	var screen string
	defer func() {
		if t.Failed() {
			t.Logf("the screen:\n%s", screen)
		}
	}()
	testenv.WaitFor(t, 60*time.Second, fmt.Sprintf("the screen to show %q", want), func() bool {
		var err error
		screen, err = tm.run("capture-pane", "-p", "-t", "demo")
		return err == nil && strings.Contains(screen, want)
	})
}

// waitExit waits until the session is gone, which is when the demo exited.
func (tm *tmux) waitExit(t *testing.T) {
	t.Helper()
	var screen string
	defer func() {
		if t.Failed() {
			t.Logf("the screen:\n%s", screen)
		}
	}()
	testenv.WaitFor(t, 30*time.Second, "the demo to exit", func() bool {
		if _, err := tm.run("has-session", "-t", "demo"); err != nil {
			return true
		}
		screen, _ = tm.run("capture-pane", "-p", "-t", "demo")
		return false
	})
}

func (tm *tmux) panePID(t *testing.T) int {
	t.Helper()
	out, err := tm.run("display-message", "-p", "-t", "demo", "#{pane_pid}")
	if err != nil {
		t.Fatalf("pane pid: %v: %s", err, out)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// clusterOwnedBy finds the throwaway cluster whose owner is pid or a child
// of pid (the shell tmux starts may or may not exec the command).
func clusterOwnedBy(t *testing.T, pid int) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "outboxtop-pg-*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner.pid"))
		if err != nil {
			continue
		}
		owner, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			continue
		}
		if owner == pid || parentPID(owner) == pid {
			return dir
		}
	}
	t.Fatalf("no cluster directory owned by %d", pid)
	return ""
}

func parentPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid …; comm may hold spaces, so split after ')'.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// The shipped binary holds no benchmark lever: relay.MeasureCeiling marks
// events published with made-up Kafka coordinates, and nothing the binary
// runs may reach it (the linker leaves out what nothing calls).
func TestBinaryHoldsNoBenchmarkLever(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "tool", "nm", binary).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "outboxtop/relay.New") {
		t.Fatal("go tool nm lists no relay symbol: the check would pass on anything")
	}
	if strings.Contains(string(out), "relay.MeasureCeiling") {
		t.Error("the outboxtop binary contains relay.MeasureCeiling, a benchmark lever")
	}
}
