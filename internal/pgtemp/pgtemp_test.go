package pgtemp

import (
	"context"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A restarted cluster keeps its port and its data.
func TestRestartKeepsPortAndData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := Start(ctx, Options{NoFsync: true})
	if err != nil {
		t.Skipf("no PostgreSQL: %v", err)
	}
	defer c.Close()
	exec := func(sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, c.DSN(""))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec(`CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)`)
	port := c.Port()
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Port() != port {
		t.Fatalf("port changed from %d to %d", port, c.Port())
	}
	exec(`DO $$ BEGIN IF (SELECT x FROM kept) <> 42 THEN RAISE 'lost'; END IF; END $$`)
}

// A port taken between choosing it and postgres binding it costs a retry on
// another port, not the start. Not parallel: it swaps freePort.
func TestStartRetriesWhenThePortIsTaken(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	taken := held.Addr().(*net.TCPAddr).Port
	real := freePort
	calls := 0
	freePort = func() (int, error) {
		calls++
		if calls == 1 {
			return taken, nil
		}
		return real()
	}
	defer func() { freePort = real }()
	c, err := Start(context.Background(), Options{NoFsync: true})
	if err != nil {
		t.Fatalf("start with its first port taken: %v", err)
	}
	defer c.Close()
	if c.Port() == taken || calls != 2 {
		t.Fatalf("port %d (the taken one is %d) after %d choices, want a second choice", c.Port(), taken, calls)
	}
	if ours, err := c.answers(context.Background()); err != nil || !ours {
		t.Fatalf("the server on %d: ours %v, %v", c.Port(), ours, err)
	}
}
