package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// psqlSession is a psql process the test types into, as an application's
// session would be: its transactions stay open between statements.
type psqlSession struct {
	in  io.WriteCloser
	out *bufio.Scanner
	cmd *exec.Cmd
}

func psqlPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("psql"); err == nil {
		return p
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/psql"); len(m) > 0 {
		return m[len(m)-1]
	}
	t.Fatal("psql is not installed (scripts/test installs PostgreSQL, which brings it)")
	return ""
}

func startPsql(t *testing.T, dsn string) *psqlSession {
	t.Helper()
	cmd := exec.Command(psqlPath(t), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return &psqlSession{in: in, out: bufio.NewScanner(out), cmd: cmd}
}

// run types sql and waits until psql has run it.
func (p *psqlSession) run(t *testing.T, sql string) {
	t.Helper()
	if _, err := fmt.Fprintf(p.in, "%s\n\\echo __ran__\n", sql); err != nil {
		t.Fatal(err)
	}
	var said []string
	for p.out.Scan() {
		if p.out.Text() == "__ran__" {
			return
		}
		said = append(said, p.out.Text())
	}
	t.Fatalf("psql ended running %q: %s", sql, strings.Join(said, "\n"))
}

// The application's writers never wait for work they do not share, with the
// table in its default commit order and a relay claiming beside them: while
// psql sessions hold a one-event transaction idle, insert 65 and 10,000
// events in transactions that stay open, a role with no outboxtop grant
// holds advisory locks (every key the enforcing trigger would use, and
// more), and a producer sets every outboxtop.* parameter it can think of,
// an unrelated writer's inserts each give up after 100 ms of waiting for a
// lock, and none does. The idle writer's event and the bulk ones are
// published once they commit, and status still says what it said.
func TestApplicationWritersNeverWaitOnEachOther(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dsn := testenv.Pool(t)
	in, err := inspect.New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	mode := func() string {
		s, err := in.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s.Order.Mode
	}
	if m := mode(); m != string(migrations.OrderDetect) {
		t.Fatalf("a table migrate created is in commit order %q, want detect", m)
	}
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order")
	startRelay(t, dsn, k)

	insert := `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload) `
	idle := startPsql(t, dsn)
	idle.run(t, "BEGIN; "+insert+"VALUES (gen_random_uuid(), 'order', 'idle-1', 'OrderConfirmed', '{}');")
	bulk65 := startPsql(t, dsn)
	bulk65.run(t, "BEGIN; "+insert+"SELECT gen_random_uuid(), 'order', 'b65-' || g, 'OrderConfirmed', '{}' FROM generate_series(1, 65) g;")
	bulk10k := startPsql(t, dsn)
	bulk10k.run(t, "BEGIN; "+insert+"SELECT gen_random_uuid(), 'order', 'b10k-' || (g % 5000), 'OrderConfirmed', '{}' FROM generate_series(1, 10000) g;")

	// A role with no grant on anything of outboxtop's: advisory locks need none.
	intruder := fmt.Sprintf("intruder_%d", time.Now().UnixNano())
	if _, err := pool.Exec(ctx, "CREATE ROLE "+intruder+" LOGIN PASSWORD 'pw-3vq'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+intruder) })
	icfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	icfg.User, icfg.Password = intruder, "pw-3vq"
	holder, err := pgx.ConnectConfig(ctx, icfg)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	key := migrations.OrderLockKey("public")
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1, 0), pg_advisory_lock($1, hashtext('5:orderunrelated-1')),
		pg_advisory_lock(hashtext('outboxtop')), pg_advisory_lock(1, 1)`, key); err != nil {
		t.Fatal(err)
	}

	// The unrelated writer: the seed's insert, its aggregate nobody else's;
	// each insert gives up after 100 ms of waiting for a lock.
	wcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	wcfg.ConnConfig.RuntimeParams["lock_timeout"] = "100ms"
	writer, err := pgxpool.NewWithConfig(ctx, wcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	forged := []string{"outboxtop.order_rows", "outboxtop.order", "outboxtop.commit_order", "outboxtop.lock"}
	var slowest time.Duration
	for i := range 100 {
		began := time.Now()
		err := pgx.BeginFunc(ctx, writer, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT set_config($1, '65', true)", forged[i%len(forged)]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, insert+"VALUES (gen_random_uuid(), 'order', $1, 'OrderConfirmed', '{}')", fmt.Sprintf("unrelated-%d", i%7))
			return err
		})
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
			t.Fatalf("insert %d waited more than 100 ms for a lock: %v", i, err)
		}
		if err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(began))
	}
	if m := mode(); m != string(migrations.OrderDetect) {
		t.Errorf("after producers set outboxtop.* parameters, status says commit order %q", m)
	}

	// The open transactions commit; everything is published.
	idle.run(t, "COMMIT;")
	bulk65.run(t, "COMMIT;")
	bulk10k.run(t, "COMMIT;")
	want := 1 + 65 + 10000 + 100
	testenv.WaitFor(t, 2*time.Minute, "everything published", func() bool {
		return count(t, pool, "published_at IS NOT NULL") == want
	})
	if n := count(t, pool, "unserialized AND aggregate_id LIKE 'unrelated-%'"); n != 0 {
		t.Errorf("%d events of one writer marked of unknown order", n)
	}
	t.Logf("100 unrelated inserts beside an idle writer, 65- and 10,000-event transactions and a role holding advisory locks: none waited for a lock; the slowest took %v", slowest)
}
