package console

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// BenchmarkFleetConsole20 is the fleet console over 20 outboxes on one
// PostgreSQL server while one of them hangs: a session holds outbox o00's
// table locked, sleeping in pg_sleep, so every poll of o00 takes its timeout
// (1 s). Numbers belong in BENCHMARKS.md, measured on a quiet machine:
//
//	go test ./internal/console -run XXX -bench FleetConsole20 -benchtime 10x
//
// "refresh": a poll round of all 20 (the Poller, as serve and the console
// run it), the table taking each outbox's row as it comes (Update, Render on
// every Poller.Updated). Metrics: refresh19-ms, from the round's start to a
// rendered table whose 19 healthy rows are all from this round (it must stay
// far below the hung outbox's 1 s timeout, or the hang held the others up);
// round-ms, the whole round (the hung outbox's timeout); render-us, one Update
// and Render of the 20-row table.
//
// "drill-in": key-ms, from enter on a healthy outbox to its console rendered
// with its first snapshot (a pool of its own, connect, first load), with the
// Poller polling all 20 around it; then esc.
func BenchmarkFleetConsole20(b *testing.B) {
	const n = 20
	ctx := context.Background()
	env := map[string]string{}
	var text strings.Builder
	text.WriteString("timeout = \"1s\"\npoll_interval = \"1h\"\n")
	var first *pgxpool.Pool
	for k := range n {
		pool, dsn := testenv.Pool(b)
		if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			SELECT gen_random_uuid(), 'order', (g % 200)::text, 'OrderPlaced', '{}' FROM generate_series(1, 1000) g;
			INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, attempts, failed_at, last_error)
			SELECT gen_random_uuid(), 'invoice', g::text, 'InvoiceIssued', '{}', 5, now(), 'boom' FROM generate_series(1, 10) g;
			ANALYZE outbox_event`); err != nil {
			b.Fatal(err)
		}
		if k == 0 {
			first = pool
		}
		env[fmt.Sprintf("DSN_%d", k)] = dsn
		fmt.Fprintf(&text, "[[outbox]]\nname = \"o%02d\"\ndsn_env = \"DSN_%d\"\n", k, k)
	}
	f, err := fleet.Parse(filepath.Join(b.TempDir(), "fleet.toml"), text.String(), func(k string) string { return env[k] })
	if err != nil {
		b.Fatal(err)
	}
	p, err := fleet.NewPoller(f, fleet.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	p.Poll(ctx) // connect
	release := holdTableLock(b, first)
	b.Cleanup(release)
	m := NewFleet(FleetOptions{
		Source: p,
		Title:  "fleet.toml",
		Open: func(ctx context.Context, name string) (Options, func(), error) {
			pool, o, err := p.Open(ctx, name, 4)
			if err != nil {
				return Options{}, nil, err
			}
			in, err := inspect.New(pool, o.Schema)
			if err != nil {
				pool.Close()
				return Options{}, nil, err
			}
			return Options{Inspector: in}, pool.Close, nil
		},
	})
	b.Cleanup(m.Close)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})

	b.Run("refresh", func(b *testing.B) {
		var fresh, round, render time.Duration
		renders := 0
		for b.Loop() {
			for len(p.Updated()) > 0 {
				<-p.Updated()
			}
			start := time.Now()
			done := make(chan struct{})
			go func() { p.Poll(ctx); close(done) }()
			seen := false
			for !seen {
				select {
				case <-p.Updated():
				case <-done:
				}
				t0 := time.Now()
				m.Update(fleetTickMsg{})
				screen := m.Render()
				render += time.Since(t0)
				renders++
				healthy := 0
				for _, r := range m.rows {
					if r.Reachable && r.PolledAt.After(start) {
						healthy++
					}
				}
				if healthy == n-1 {
					fresh += time.Since(start)
					seen = true
					if !strings.Contains(screen, "o19") {
						b.Fatalf("the table does not show the fleet:\n%s", screen)
					}
				}
			}
			<-done
			round += time.Since(start)
			m.Update(fleetTickMsg{})
			if r := m.rows[0]; r.Name != "o00" || r.Reachable {
				b.Fatalf("o00 is not the hung one at the top: %+v", r)
			}
		}
		b.ReportMetric(float64(fresh.Microseconds())/1000/float64(b.N), "refresh19-ms")
		b.ReportMetric(float64(round.Microseconds())/1000/float64(b.N), "round-ms")
		b.ReportMetric(float64(render.Microseconds())/float64(renders), "render-us")
		if fresh/time.Duration(b.N) > 500*time.Millisecond {
			b.Errorf("the 19 healthy rows took %s a round: the hung outbox held them up", fresh/time.Duration(b.N))
		}
	})

	b.Run("drill-in", func(b *testing.B) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go p.Run(ctx) // polling around the console: o00 hangs on every poll
		msgs := make(chan tea.Msg, 1024)
		exec := func(cmd tea.Cmd) {
			if cmd != nil {
				go func() { msgs <- cmd() }()
			}
		}
		var took time.Duration
		for b.Loop() {
			m.Update(fleetTickMsg{})
			m.selected = "o07"
			m.setRows(m.rows)
			start := time.Now()
			_, cmd := m.Update(keyMsg("enter"))
			exec(cmd)
			for loaded := false; !loaded; {
				var msg tea.Msg
				select {
				case msg = <-msgs:
				case <-time.After(30 * time.Second):
					b.Fatal("the console did not open")
				}
				switch msg := msg.(type) {
				case nil, fleetTickMsg:
					continue
				case tea.BatchMsg:
					for _, c := range msg {
						exec(c)
					}
					continue
				case fleetOpenedMsg:
					if msg.err != nil {
						b.Fatal(msg.err)
					}
				case innerMsg:
					if _, ok := msg.msg.(tickMsg); ok {
						continue
					}
					if _, ok := msg.msg.(loadedMsg); ok && msg.gen == m.gen {
						loaded = true
					}
				}
				_, next := m.Update(msg)
				exec(next)
			}
			screen := m.Render()
			took += time.Since(start)
			if !strings.Contains(screen, "o07") || m.inner == nil {
				b.Fatalf("o07's console not shown:\n%s", screen)
			}
			m.Update(keyMsg("esc"))
			if m.inner != nil {
				b.Fatal("esc did not return to the fleet")
			}
		}
		b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "key-ms")
	})
}

// holdTableLock has a session of pool take outbox_event's ACCESS EXCLUSIVE
// lock and sleep in pg_sleep holding it, until release.
func holdTableLock(b *testing.B, pool *pgxpool.Pool) (release func()) {
	ctx := context.Background()
	hctx, cancel := context.WithCancel(ctx)
	holder, err := pool.Acquire(hctx)
	if err != nil {
		b.Fatal(err)
	}
	held := make(chan struct{})
	go func() {
		defer close(held)
		_, _ = holder.Exec(hctx, `BEGIN; LOCK TABLE outbox_event IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3600); COMMIT`)
	}()
	testenv.WaitFor(b, 10*time.Second, "the lock to be held", func() bool {
		var locked bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE c.relname = 'outbox_event' AND l.mode = 'AccessExclusiveLock' AND l.granted)`).Scan(&locked)
		return err == nil && locked
	})
	return func() { cancel(); <-held; holder.Release() }
}
