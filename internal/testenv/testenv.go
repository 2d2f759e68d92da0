// Package testenv gives tests real infrastructure: a PostgreSQL database of their
// own (migrated, cloned from a template) and Kafka brokers (franz-go's kfake in
// process, or a real cluster named by OUTBOXTOP_TEST_KAFKA_BROKERS).
//
// A test binary that uses DB must call Main from its TestMain so the cluster it
// starts is stopped afterwards:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// With OUTBOXTOP_TEST_DATABASE_URL set, no cluster is started: that server (whose
// role must be allowed to create databases) hosts the template and test databases.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/pgtemp"
	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/wire"
)

// EnvDatabaseURL names an existing server to use instead of a throwaway cluster.
const EnvDatabaseURL = "OUTBOXTOP_TEST_DATABASE_URL"

var server struct {
	once     sync.Once
	err      error
	cluster  *pgtemp.Cluster
	admin    string // DSN of a maintenance database on the server
	template string // name of the migrated template database
	runID    string
}

// Main runs the tests and then stops the cluster, if one was started, drops the
// template database, and runs cleanups (last registered first) before it exits.
// A TestMain hands its own cleanups to Main rather than deferring them: Main ends
// the process with os.Exit, which runs no deferred call.
func Main(m *testing.M, cleanups ...func()) {
	code := m.Run()
	shutdown()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	os.Exit(code)
}

func shutdown() {
	if server.admin != "" && server.template != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if conn, err := pgx.Connect(ctx, server.admin); err == nil {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{server.template}.Sanitize()+" WITH (FORCE)")
			conn.Close(ctx)
		}
		cancel()
	}
	if server.cluster != nil {
		_ = server.cluster.Close()
	}
}

func startServer() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	server.runID = randomHex(4)
	if url := os.Getenv(EnvDatabaseURL); url != "" {
		server.admin = url
	} else {
		c, err := pgtemp.Start(ctx, pgtemp.Options{NoFsync: true})
		if err != nil {
			server.err = err
			return
		}
		server.cluster = c
		server.admin = c.DSN("postgres")
	}
	server.template = "outboxtop_tmpl_" + server.runID
	conn, err := pgx.Connect(ctx, server.admin)
	if err != nil {
		server.err = fmt.Errorf("connecting to test server: %w", err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{server.template}.Sanitize()); err != nil {
		server.err = fmt.Errorf("creating template database: %w", err)
		return
	}
	tconn, err := pgx.Connect(ctx, withDatabase(server.admin, server.template))
	if err != nil {
		server.err = err
		return
	}
	defer tconn.Close(ctx)
	if _, err := migrations.Apply(ctx, tconn, wire.DefaultSchema, nil); err != nil {
		server.err = fmt.Errorf("migrating template: %w", err)
	}
}

// Server returns the admin DSN of the test server, starting it on first use.
func Server(t testing.TB) string {
	t.Helper()
	server.once.Do(startServer)
	if server.err != nil {
		t.Fatalf("test PostgreSQL: %v", server.err)
	}
	return server.admin
}

// Cluster is the throwaway cluster behind the tests, or nil when
// OUTBOXTOP_TEST_DATABASE_URL names the server.
func Cluster(t testing.TB) *pgtemp.Cluster {
	Server(t)
	return server.cluster
}

// EmptyDB creates a database of the test's own with nothing in it and returns its DSN.
// It is dropped when the test ends.
func EmptyDB(t testing.TB) string { return createDB(t, "") }

// DB creates a migrated database (schema "public") of the test's own and returns its
// DSN. It is dropped when the test ends.
func DB(t testing.TB) string {
	Server(t)
	return createDB(t, server.template)
}

// Pool is DB plus a pool on it, closed when the test ends.
func Pool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	dsn := DB(t)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool, dsn
}

func createDB(t testing.TB, template string) string {
	t.Helper()
	admin := Server(t)
	name := "t_" + server.runID + "_" + randomHex(6)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connecting to test server: %v", err)
	}
	defer conn.Close(ctx)
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	// Cloning a template fails while another session is connected to it; the template
	// is only ever connected to during start-up, so a retry covers a racing clone.
	for attempt := 0; ; attempt++ {
		_, err = conn.Exec(ctx, sql)
		if err == nil || attempt == 20 || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("creating test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	return withDatabase(admin, name)
}

// withDatabase replaces the database in a URL-style DSN.
func withDatabase(dsn, db string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return dsn
	}
	u := fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, db)
	if cfg.Password != "" {
		u = fmt.Sprintf("postgres://%s:%s@%s:%d/%s", cfg.User, cfg.Password, cfg.Host, cfg.Port, db)
	}
	if cfg.TLSConfig == nil {
		u += "?sslmode=disable"
	}
	return u
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CommitOrder puts the public schema of pool's database in mode. A database
// of Pool or DB detects the commit order, as every table migrate creates or
// adopts does: no trigger, the writers never wait for each other. A test of
// the enforced order switches to migrations.OrderEnforce first.
func CommitOrder(t testing.TB, pool *pgxpool.Pool, mode migrations.CommitOrder) {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, _, err := migrations.MigrateWith(ctx, conn.Conn(), wire.DefaultSchema, migrations.Options{CommitOrder: mode}); err != nil {
		t.Fatal(err)
	}
}
