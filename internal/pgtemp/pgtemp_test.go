package pgtemp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestStartServesAndCloseRemovesEverything(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Options{NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := c.Dir()
	conn, err := pgx.Connect(ctx, c.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("query: %v %d", err, one)
	}
	conn.Close(ctx)
	pm, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	serverPID, _ := strconv.Atoi(string(pm[:indexByte(pm, '\n')]))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s still exists after Close", dir)
	}
	if processAlive(serverPID) {
		t.Fatalf("postgres pid %d still running after Close", serverPID)
	}
}

func TestReclaimsClusterOfDeadOwner(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Options{NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Pretend the owner died: a pid that exited already.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	if err := os.WriteFile(filepath.Join(c.Dir(), "owner.pid"), []byte(strconv.Itoa(dead)), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := c.Dir()
	ReclaimStale()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("stale cluster %s not reclaimed", dir)
	}
	cctx, cancel := context.WithTimeout(ctx, 2e9)
	defer cancel()
	if conn, err := pgx.Connect(cctx, c.DSN("")); err == nil {
		conn.Close(ctx)
		t.Fatal("stale cluster's server still accepts connections")
	}
}

func indexByte(b []byte, c byte) int {
	for i := range b {
		if b[i] == c {
			return i
		}
	}
	return len(b)
}
