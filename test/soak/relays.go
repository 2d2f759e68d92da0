package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// relay is one slot of the relay fleet: the process in it may be killed and
// replaced. A process that exits without the harness asking is recorded and
// replaced after a second, as a supervisor (systemd, Kubernetes) would.
type relay struct {
	name string
	args []string
	bin  string
	dir  string
	logf func(format string, args ...any)

	mu         sync.Mutex
	cmd        *exec.Cmd
	exited     chan struct{}
	exitErr    error
	expectExit bool
	stopping   bool
	starts     int
	unexpected []string
}

func (r *relay) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts++
	logPath := filepath.Join(r.dir, fmt.Sprintf("%s.%d.log", r.name, r.starts))
	lf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(r.bin, r.args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("starting %s: %w", r.name, err)
	}
	exited := make(chan struct{})
	r.cmd, r.exited, r.expectExit = cmd, exited, false
	go func() {
		err := cmd.Wait()
		lf.Close()
		r.mu.Lock()
		r.exitErr = err
		expected, stopping := r.expectExit, r.stopping
		if !expected {
			r.unexpected = append(r.unexpected, fmt.Sprintf("%s (pid %d) exited by itself: %v; log %s", r.name, cmd.Process.Pid, err, logPath))
		}
		r.mu.Unlock()
		close(exited)
		if !expected && !stopping && len(r.unexpected) > 10 {
			r.logf("%s exited by itself more than ten times: not restarting it again, see %s", r.name, logPath)
		} else if !expected && !stopping {
			r.logf("%s exited by itself (%v): restarting it, see %s", r.name, err, logPath)
			time.Sleep(time.Second)
			if err := r.start(); err != nil {
				r.logf("%v", err)
			}
		}
	}()
	return nil
}

func (r *relay) signal(sig syscall.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sig == syscall.SIGKILL || sig == syscall.SIGTERM {
		r.expectExit = true
	}
	return r.cmd.Process.Signal(sig)
}

func (r *relay) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd.Process.Pid
}

// kill SIGKILLs the current process and waits for it to be gone.
func (r *relay) kill() error {
	if err := r.signal(syscall.SIGKILL); err != nil {
		return err
	}
	r.mu.Lock()
	exited := r.exited
	r.mu.Unlock()
	<-exited
	return nil
}

// stop sends SIGTERM and waits up to timeout; a relay must exit 0.
func (r *relay) stop(timeout time.Duration) error {
	r.mu.Lock()
	r.stopping = true
	exited := r.exited
	r.mu.Unlock()
	// A process continued after SIGSTOP would ignore nothing, but make sure.
	_ = r.signal(syscall.SIGCONT)
	if err := r.signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-exited:
	case <-time.After(timeout):
		_ = r.signal(syscall.SIGKILL)
		<-exited
		return fmt.Errorf("%s did not exit within %v of SIGTERM", r.name, timeout)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.exitErr != nil {
		return fmt.Errorf("%s exited with %v after SIGTERM", r.name, r.exitErr)
	}
	return nil
}
