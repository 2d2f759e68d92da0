package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/inbox"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/pgsql"
	"github.com/outboxtop/outboxtop/internal/pgtemp"
	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/outbox"
	"github.com/outboxtop/outboxtop/relay"
	"github.com/outboxtop/outboxtop/wire"
)

// Config configures a demo environment: where its database and brokers are,
// and what the order service and the consumer do. The relay is not the demo's:
// the caller opens it through the application's lifecycle, on the database and
// brokers the demo gives it (Connect, RelayKafka), and hands it to Attach.
type Config struct {
	// DSN is the database to use; empty starts a throwaway PostgreSQL cluster,
	// removed by Close.
	DSN string
	// Brokers are the Kafka seed brokers; empty starts an in-process kfake
	// cluster, stopped by Close.
	Brokers []string
	// Outbox is the schema holding outboxtop's tables; empty means
	// wire.DefaultSchema.
	Outbox string
	// TopicTemplate is the relay's topic template, which the consumer follows;
	// empty means the relay's default.
	TopicTemplate string
	// Schema holds the demo's own tables; empty means DefaultSchema.
	Schema string
	// Group is the consumer group; empty means "outboxtop-demo".
	Group string
	// Rate is the order service's target in events per second.
	Rate float64
	// Logger receives the consumer's and order service's logs; nil discards
	// them.
	Logger *slog.Logger
}

// Demo is a demo environment: database, brokers, and once attached to a relay
// the order service and the consumer group. Start builds it, Attach gives it
// its relay, Run runs it, Close tears it down.
type Demo struct {
	// Pool is the database pool given to Attach.
	Pool *pgxpool.Pool
	// Relay is the relay given to Attach.
	Relay *relay.Relay
	// Orders is the order service.
	Orders *Orders
	// Consumer applies the published events through the inbox.
	Consumer *Consumer
	// Counters count what the order service and the consumer did.
	Counters *Counters

	cfg      Config
	dsn      string
	cluster  *pgtemp.Cluster
	fake     *kfake.Cluster
	brokers  []string
	outage   outageSwitch
	produced producedHook
	kills    atomic.Int64
	startSeq int64

	mu         sync.Mutex
	stopOrders context.CancelFunc
	ordersDone chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// Start builds the demo environment: the database (migrated: outboxtop's
// tables and the demo's) and the brokers. On error everything it had started
// is stopped again; pgtemp.ErrNoBinaries is returned as is.
func Start(ctx context.Context, cfg Config) (_ *Demo, err error) {
	cfg = withDefaults(cfg)
	d := &Demo{cfg: cfg, Counters: &Counters{}, dsn: cfg.DSN}
	defer func() {
		if err != nil {
			_ = d.Close()
		}
	}()

	if d.dsn == "" {
		// Start reclaims what crashed runs left behind before it creates a cluster.
		if d.cluster, err = pgtemp.Start(ctx, pgtemp.Options{}); err != nil {
			return nil, err
		}
		d.dsn = d.cluster.DSN("")
	}
	if err := d.migrate(ctx); err != nil {
		return nil, err
	}

	d.brokers = cfg.Brokers
	if len(d.brokers) == 0 {
		opts := []kfake.Opt{kfake.NumBrokers(1), kfake.DefaultNumPartitions(3), kfake.AllowAutoTopicCreation()}
		if topics := seedTopics(cfg.TopicTemplate); len(topics) > 0 {
			opts = append(opts, kfake.SeedTopics(3, topics...))
		}
		if d.fake, err = kfake.NewCluster(opts...); err != nil {
			return nil, fmt.Errorf("starting the in-process Kafka broker: %w", err)
		}
		d.brokers = d.fake.ListenAddrs()
	}
	return d, nil
}

func withDefaults(cfg Config) Config {
	if cfg.Outbox == "" {
		cfg.Outbox = wire.DefaultSchema
	}
	if cfg.TopicTemplate == "" {
		cfg.TopicTemplate = relay.Config{}.WithDefaults().TopicTemplate
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// Connect opens a pool of at most maxConns connections to the demo's database,
// named "outboxtop demo" in pg_stat_activity unless its DSN names it, set up
// like every session outboxtop opens (pgsql.Session): outboxtop's search_path,
// and the actions' lock timeout (inspect.ActionLockTimeout), since the
// demo's console acts on this pool.
func (d *Demo) Connect(ctx context.Context, maxConns int32) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(d.dsn)
	if err != nil {
		return nil, fmt.Errorf("demo database: %w", err)
	}
	pcfg.MaxConns = maxConns
	pool, err := pgsql.Pool(ctx, pcfg, pgsql.Session{App: "outboxtop demo", LockTimeout: inspect.ActionLockTimeout})
	if err != nil {
		return nil, fmt.Errorf("demo database: %w", err)
	}
	return pool, nil
}

// Conns is the connections the order service's workers and the consumer use
// at most, besides the relay's and a console's.
const Conns = 12

// RelayKafka is k for the relay's client in this environment: the demo's
// brokers (topics created on first use when they are in process), dialled
// through the outage switch, with the acknowledgements counted. Only the
// relay's connections go through the switch: the consumer keeps reading what
// was published before an outage.
func (d *Demo) RelayKafka(k relay.KafkaConfig) relay.KafkaConfig {
	k.Brokers = d.brokers
	if d.fake != nil {
		k.AutoCreateTopics = true
	}
	k.Extra = append(append([]kgo.Opt(nil), k.Extra...), kgo.Dialer(d.outage.dial), kgo.WithHooks(&d.produced))
	return k
}

// Attach builds the order service and the consumer on pool, beside r, the
// relay opened on this environment (its client from RelayKafka).
func (d *Demo) Attach(pool *pgxpool.Pool, r *relay.Relay) (err error) {
	d.Pool, d.Relay = pool, r
	cfg := d.cfg
	w := outbox.Writer{Schema: cfg.Outbox}
	if d.Orders, err = NewOrders(pool, d.Counters, OrderConfig{Schema: cfg.Schema, Outbox: w, Rate: cfg.Rate, Logger: cfg.Logger}); err != nil {
		return err
	}
	d.Consumer, err = NewConsumer(pool, d.Counters, ConsumerConfig{
		Brokers: d.brokers,
		Group:   cfg.Group,
		Topics:  topicPattern(cfg.TopicTemplate),
		Schema:  cfg.Schema,
		Inbox:   inbox.Store{Schema: cfg.Outbox},
		Logger:  cfg.Logger,
	})
	return err
}

// migrate brings outboxtop's tables and the demo's up to date and notes where
// the outbox stood, so the summary counts only this run's events.
func (d *Demo) migrate(ctx context.Context) error {
	pool, err := d.Connect(ctx, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("demo database: %w", err)
	}
	defer conn.Release()
	if _, err := migrations.Apply(ctx, conn.Conn(), d.cfg.Outbox, nil); err != nil {
		return err
	}
	if err := conn.QueryRow(ctx, `SELECT COALESCE(max(seq), 0) FROM `+ident(d.cfg.Outbox)+`.outbox_event`).Scan(&d.startSeq); err != nil {
		return fmt.Errorf("reading the outbox: %w", err)
	}
	return Migrate(ctx, pool, d.cfg.Schema)
}

// Run runs the order service and the consumer until ctx ends, and returns the
// first error that stopped one of them early. The relay runs beside them, in
// the lifecycle that opened it.
func (d *Demo) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ordersCtx, stopOrders := context.WithCancel(ctx)
	d.mu.Lock()
	d.stopOrders, d.ordersDone = stopOrders, make(chan struct{})
	ordersDone := d.ordersDone
	d.mu.Unlock()

	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	start := func(name string, run func(context.Context) error, ctx context.Context, done chan struct{}) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if done != nil {
				defer close(done)
			}
			err := run(ctx)
			if err != nil && !errors.Is(err, context.Canceled) {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("%s: %w", name, err)
				}
				mu.Unlock()
				cancel()
			}
		}()
	}
	start("consumer", d.Consumer.Run, ctx, nil)
	start("order service", d.Orders.Run, ordersCtx, ordersDone)
	wg.Wait()
	return first
}

// StopOrders stops the order service of a running demo and returns once its
// last transaction is committed and counted, so Counters.Committed is final.
func (d *Demo) StopOrders() {
	d.mu.Lock()
	stop, done := d.stopOrders, d.ordersDone
	d.mu.Unlock()
	if stop == nil {
		return
	}
	stop()
	<-done
}

// Brokers are the seed brokers the demo uses.
func (d *Demo) Brokers() []string { return d.brokers }

// InProcessKafka reports whether the brokers are the demo's own kfake cluster.
func (d *Demo) InProcessKafka() bool { return d.fake != nil }

// ClusterDir is the throwaway PostgreSQL cluster's directory, or "" when the
// demo runs on a database it was given.
func (d *Demo) ClusterDir() string {
	if d.cluster == nil {
		return ""
	}
	return d.cluster.Dir()
}

// Close stops the in-process brokers and the throwaway cluster, and removes the
// cluster's directory; the pool and the relay given to Attach are their
// opener's to close, first. Call it after Run returned; it is safe to call
// more than once.
func (d *Demo) Close() error {
	d.closeOnce.Do(func() {
		if d.fake != nil {
			d.fake.Close()
		}
		if d.cluster != nil {
			d.closeErr = d.cluster.Close()
		}
	})
	return d.closeErr
}

// seedTopics are the topics the relay will write to, when the template names
// them by aggregate type only.
func seedTopics(template string) []string {
	if strings.Contains(template, "{event_type}") {
		return nil
	}
	var topics []string
	for _, agg := range []string{AggregateOrder, AggregatePayment} {
		topics = append(topics, strings.ReplaceAll(template, "{aggregate_type}", agg))
	}
	return topics
}

// topicPattern is a regular expression for the topics the relay writes the
// demo's events to under template.
func topicPattern(template string) string {
	p := regexp.QuoteMeta(template)
	p = strings.ReplaceAll(p, regexp.QuoteMeta("{aggregate_type}"), "(?:"+AggregateOrder+"|"+AggregatePayment+")")
	p = strings.ReplaceAll(p, regexp.QuoteMeta("{event_type}"), "[^.]+")
	return "^" + p + "$"
}
