package testenv

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/outboxtop/outboxtop/internal/pgtemp"
)

// ServerPID is the postmaster pid of the throwaway cluster in dir.
func ServerPID(t testing.TB, dir string) int {
	t.Helper()
	pid, err := pgtemp.ServerPID(dir)
	if err != nil {
		t.Fatalf("reading the postmaster pid in %s: %v", dir, err)
	}
	return pid
}

// ClusterGone fails the test unless the throwaway cluster in dir was removed and
// its postmaster pid no longer exists.
func ClusterGone(t testing.TB, dir string, pid int) {
	t.Helper()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cluster directory %s still there (%v)", dir, err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("postmaster %d still exists (kill 0: %v)", pid, err)
	}
}
