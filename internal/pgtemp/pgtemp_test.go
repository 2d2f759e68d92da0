package pgtemp

import (
	"context"
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
