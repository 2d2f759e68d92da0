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
	"github.com/outboxtop/outboxtop/internal/pgtemp"
	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/outbox"
	"github.com/outboxtop/outboxtop/relay"
)

// Config configures a demo run: where its database and brokers are, and the
// embedded relay.
type Config struct {
	// DSN is the database to use; empty starts a throwaway PostgreSQL cluster,
	// removed by Close.
	DSN string
	// Kafka is how the relay and the consumer reach Kafka. Without Brokers an
	// in-process kfake cluster is started.
	Kafka relay.KafkaConfig
	// Relay configures the embedded relay; its Schema holds outboxtop's tables.
	Relay relay.Config
	// Schema holds the demo's own tables; empty means DefaultSchema.
	Schema string
	// Group is the consumer group; empty means "outboxtop-demo".
	Group string
	// Rate is the order service's target in events per second.
	Rate float64
	// Logger receives the relay's, consumer's and order service's logs; nil
	// discards them.
	Logger *slog.Logger
}

// Demo is a running demo environment: database, brokers, the order service,
// the embedded relay and the consumer group. Start builds it, Run runs it,
// Close tears it down.
type Demo struct {
	// Pool is the demo's database.
	Pool *pgxpool.Pool
	// Relay is the embedded relay.
	Relay *relay.Relay
	// Orders is the order service.
	Orders *Orders
	// Consumer applies the published events through the inbox.
	Consumer *Consumer
	// Counters count what the order service and the consumer did.
	Counters *Counters

	cfg      Config
	cluster  *pgtemp.Cluster
	fake     *kfake.Cluster
	client   *kgo.Client
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

// Start builds the demo environment. On error everything it had started is
// stopped again; pgtemp.ErrNoBinaries is returned as is.
func Start(ctx context.Context, cfg Config) (_ *Demo, err error) {
	cfg = withDefaults(cfg)
	d := &Demo{cfg: cfg, Counters: &Counters{}}
	defer func() {
		if err != nil {
			_ = d.Close()
		}
	}()

	dsn := cfg.DSN
	if dsn == "" {
		// Start reclaims what crashed runs left behind before it creates a cluster.
		if d.cluster, err = pgtemp.Start(ctx, pgtemp.Options{}); err != nil {
			return nil, err
		}
		dsn = d.cluster.DSN("")
	}
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("demo database: %w", err)
	}
	// Relay batches and claims, LISTEN, order-service workers, consumer,
	// console loads and actions.
	pcfg.MaxConns = int32(cfg.Relay.InFlight) + 16
	if pcfg.ConnConfig.RuntimeParams["application_name"] == "" {
		pcfg.ConnConfig.RuntimeParams["application_name"] = "outboxtop demo"
	}
	if d.Pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return nil, fmt.Errorf("demo database: %w", err)
	}
	if err := d.migrate(ctx); err != nil {
		return nil, err
	}
	if err := d.Pool.QueryRow(ctx, `SELECT COALESCE(max(seq), 0) FROM `+ident(cfg.Relay.Schema)+`.outbox_event`).Scan(&d.startSeq); err != nil {
		return nil, fmt.Errorf("reading the outbox: %w", err)
	}

	d.brokers = cfg.Kafka.Brokers
	if len(d.brokers) == 0 {
		opts := []kfake.Opt{kfake.NumBrokers(1), kfake.DefaultNumPartitions(3), kfake.AllowAutoTopicCreation()}
		if topics := seedTopics(cfg.Relay.TopicTemplate); len(topics) > 0 {
			opts = append(opts, kfake.SeedTopics(3, topics...))
		}
		if d.fake, err = kfake.NewCluster(opts...); err != nil {
			return nil, fmt.Errorf("starting the in-process Kafka broker: %w", err)
		}
		d.brokers = d.fake.ListenAddrs()
		cfg.Kafka.AutoCreateTopics = true
	}
	kc := cfg.Kafka
	kc.Brokers = d.brokers
	// Only the relay's connections go through the outage switch: the consumer
	// keeps reading what was published before the outage.
	kc.Extra = append(append([]kgo.Opt(nil), kc.Extra...), kgo.Dialer(d.outage.dial), kgo.WithHooks(&d.produced))
	if d.client, err = relay.NewKafkaClient(kc); err != nil {
		return nil, err
	}
	rcfg := cfg.Relay
	rcfg.Logger = cfg.Logger
	if d.Relay, err = relay.New(d.Pool, d.client, rcfg); err != nil {
		return nil, err
	}
	w := outbox.Writer{Schema: cfg.Relay.Schema}
	if d.Orders, err = NewOrders(d.Pool, d.Counters, OrderConfig{Schema: cfg.Schema, Outbox: w, Rate: cfg.Rate, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	d.Consumer, err = NewConsumer(d.Pool, d.Counters, ConsumerConfig{
		Brokers: d.brokers,
		Group:   cfg.Group,
		Topics:  topicPattern(cfg.Relay.TopicTemplate),
		Schema:  cfg.Schema,
		Inbox:   inbox.Store{Schema: cfg.Relay.Schema},
		Logger:  cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

func withDefaults(cfg Config) Config {
	cfg.Relay = cfg.Relay.WithDefaults()
	cfg.Kafka = cfg.Relay.Kafka(cfg.Kafka)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg
}

func (d *Demo) migrate(ctx context.Context) error {
	conn, err := d.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("demo database: %w", err)
	}
	defer conn.Release()
	if _, err := migrations.Apply(ctx, conn.Conn(), d.cfg.Relay.Schema, nil); err != nil {
		return err
	}
	return Migrate(ctx, d.Pool, d.cfg.Schema)
}

// Run runs the order service, the relay and the consumer until ctx ends, and
// returns the first error that stopped one of them early.
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
	start("relay", d.Relay.Run, ctx, nil)
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

// Close stops the Kafka client, the in-process brokers and the throwaway
// cluster, and removes the cluster's directory. Call it after Run returned;
// it is safe to call more than once.
func (d *Demo) Close() error {
	d.closeOnce.Do(func() {
		if d.client != nil {
			d.client.Close()
		}
		if d.Pool != nil {
			d.Pool.Close()
		}
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
