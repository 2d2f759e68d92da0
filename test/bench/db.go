package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/migrations"
)

// backlog describes a loaded outbox.
type backlog struct {
	Events     int     `json:"events"`
	Payload    int     `json:"payload_bytes"`
	Aggregates int     `json:"aggregates"`
	HotShare   float64 `json:"hot_share"` // share of events in one hot aggregate
}

func (b backlog) key() string {
	return fmt.Sprintf("tmpl_%d_%d_%d_%d", b.Events, b.Payload, b.Aggregates, int(b.HotShare*100))
}

func (b backlog) String() string {
	s := fmt.Sprintf("%s events, %d B payloads, %d aggregates", human(b.Events), b.Payload, b.Aggregates)
	if b.HotShare > 0 {
		s += fmt.Sprintf(", %.0f%% in one hot aggregate", b.HotShare*100)
	}
	return s
}

func (e *env) admin(ctx context.Context) (*pgx.Conn, error) {
	return pgx.Connect(ctx, e.cluster.DSN("postgres"))
}

// template returns a database holding b, loading it the first time.
func (e *env) template(ctx context.Context, b backlog) (string, error) {
	return e.templateOf(ctx, b, "")
}

// templateOf returns a database holding b with the schema of the binary rev
// relays ("" this tree, else the baseline, whose own migrate made its schema:
// it may refuse a newer one), loading it the first time. The rows are the same.
func (e *env) templateOf(ctx context.Context, b backlog, rev string) (string, error) {
	name := b.key()
	if rev != "" {
		name += "_" + rev
	}
	if name, ok := e.templates[name]; ok {
		return name, nil
	}
	tc, err := e.migratedDBBy(ctx, name, rev)
	if err != nil {
		return "", err
	}
	defer tc.Close(ctx)
	start := time.Now()
	hot := int(float64(b.Events) * b.HotShare)
	if b.Events > 0 {
		// Events in seq order; the hot aggregate's are spread through the backlog.
		if _, err := tc.Exec(ctx, `
			INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			SELECT gen_random_uuid(), 'order',
			       CASE WHEN $4 > 0 AND g % ($1 / greatest($4, 1)) = 0 THEN 'hot' ELSE 'o-' || (g % $2) END,
			       'OrderPlaced',
			       jsonb_build_object('n', g, 'pad', repeat('x', greatest($3 - 40, 0)))
			FROM generate_series(1, $1) g ORDER BY g`, b.Events, b.Aggregates, b.Payload, hot); err != nil {
			return "", err
		}
	}
	if _, err := tc.Exec(ctx, "VACUUM ANALYZE outbox_event"); err != nil {
		return "", err
	}
	if _, err := tc.Exec(ctx, "CHECKPOINT"); err != nil {
		return "", err
	}
	logf("loaded %s%s in %v", b, forRev(rev), time.Since(start).Round(time.Millisecond))
	e.templates[name] = name
	return name, nil
}

// clone copies a template into a fresh database and returns its DSN and a drop
// function.
func (e *env) clone(ctx context.Context, b backlog) (string, func(), error) {
	return e.cloneFor(ctx, b, "")
}

// cloneFor is clone with the schema of the binary rev (templateOf).
func (e *env) cloneFor(ctx context.Context, b backlog, rev string) (string, func(), error) {
	tmpl, err := e.templateOf(ctx, b, rev)
	if err != nil {
		return "", nil, err
	}
	return e.cloneOf(ctx, tmpl)
}

// onCopy runs fn with a pool on a fresh copy of the template database tmpl; the
// pool is closed and the copy dropped when fn returns.
func (e *env) onCopy(ctx context.Context, tmpl string, fn func(*pgxpool.Pool) error) error {
	dsn, drop, err := e.cloneOf(ctx, tmpl)
	if err != nil {
		return err
	}
	defer drop()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	return fn(pool)
}

// cloneOf copies the template database tmpl into a fresh one.
func (e *env) cloneOf(ctx context.Context, tmpl string) (string, func(), error) {
	e.dbs++
	name := fmt.Sprintf("run_%d", e.dbs)
	conn, err := e.admin(ctx)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+tmpl); err != nil {
		return "", nil, err
	}
	// Start every run from the same state: no dirty buffers from the previous one.
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return "", nil, err
	}
	drop := func() {
		c, err := e.admin(context.Background())
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	}
	return e.cluster.DSN(name), drop, nil
}

// migratedDB creates database name with outboxtop's schema and returns a
// connection to it.
func (e *env) migratedDB(ctx context.Context, name string) (*pgx.Conn, error) {
	return e.migratedDBBy(ctx, name, "")
}

// migratedDBBy is migratedDB with the schema of the binary rev: this tree's
// migrations.Apply for "", else `outboxtop-REV migrate --dsn`, the baseline's
// own migrations (it may refuse a schema newer than it knows).
func (e *env) migratedDBBy(ctx context.Context, name, rev string) (*pgx.Conn, error) {
	conn, err := e.admin(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, err
	}
	if rev != "" {
		if err := e.base.migrate(ctx, e.cluster.DSN(name)); err != nil {
			return nil, err
		}
	}
	tc, err := pgx.Connect(ctx, e.cluster.DSN(name))
	if err != nil {
		return nil, err
	}
	if rev == "" {
		if _, err := migrations.Apply(ctx, tc, "public", nil); err != nil {
			tc.Close(ctx)
			return nil, err
		}
	}
	return tc, nil
}

func (e *env) serverInfo(ctx context.Context, settings map[string]string) error {
	conn, err := e.admin(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var v, fsync, sb string
	if err := conn.QueryRow(ctx, "SELECT version(), current_setting('fsync'), current_setting('shared_buffers')").Scan(&v, &fsync, &sb); err != nil {
		return err
	}
	e.results.Server = fmt.Sprintf("%s; fsync=%s, shared_buffers=%s", v, fsync, sb)
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		var got string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&got); err != nil {
			return fmt.Errorf("--pg-set %s: %w", name, err)
		}
		e.results.Server += fmt.Sprintf(", %s=%s", name, got)
	}
	return nil
}

func human(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
