package cmd

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/console"
	"github.com/outboxtop/outboxtop/internal/consumerlag"
	"github.com/outboxtop/outboxtop/relay"
)

// lagFlags select the consumer groups whose lag status, the console and /metrics
// show (internal/consumerlag).
type lagFlags struct {
	groups, exclude, topics []string
	interval                time.Duration
}

func (f *lagFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.groups, "groups", nil, "consumer groups whose lag to show, comma-separated names or patterns (billing-*); default every group reading the outbox's topics")
	fs.StringSliceVar(&f.exclude, "exclude-groups", nil, "consumer groups (names or patterns) whose lag not to show")
	fs.StringSliceVar(&f.topics, "lag-topics", nil, "topics to measure consumer lag on besides those the latest published events went to")
}

// registerInterval adds the throttle of commands that ask the brokers repeatedly.
func (f *lagFlags) registerInterval(fs *pflag.FlagSet) {
	fs.DurationVar(&f.interval, "lag-interval", 15*time.Second, "least time between two consumer lag checks (at least 5s)")
}

func (f *lagFlags) options() consumerlag.Options {
	return consumerlag.Options{Groups: f.groups, Exclude: f.exclude}
}

// checker returns a lag checker reaching Kafka as k does (give the relay's
// settings before the metrics hooks are added: those are the relay client's own).
func (f *lagFlags) checker(k relay.KafkaConfig) (*consumerlag.Checker, error) {
	c, err := consumerlag.New(func(opts ...kgo.Opt) (*kgo.Client, error) {
		k := k
		k.Extra = append(slices.Clone(k.Extra), opts...)
		return relay.NewKafkaClient(k)
	}, f.options())
	if err != nil {
		return nil, usagef("%v", err)
	}
	return c, nil
}

// topicsOf returns where the lag is measured: the outbox's recent topics plus --lag-topics.
func (f *lagFlags) topicsOf(pool *pgxpool.Pool, schema string) func(context.Context) ([]string, error) {
	return consumerlag.OutboxTopics(pool, schema, f.topics)
}

// cache returns the throttled lag that the console and /metrics read, and the
// function that closes it; nil without brokers (k.Brokers empty).
func (f *lagFlags) cache(k relay.KafkaConfig, pool *pgxpool.Pool, schema string) (*consumerlag.Cache, func(), error) {
	if len(k.Brokers) == 0 {
		return nil, func() {}, nil
	}
	c, err := f.checker(k)
	if err != nil {
		return nil, nil, err
	}
	cache := consumerlag.NewCache(c, f.topicsOf(pool, schema), f.interval)
	return cache, func() { cache.Close(); c.Close() }, nil
}

// consoleLag sets opts.Consumers for a console reaching Kafka as k does.
func (f *lagFlags) consoleLag(opts *console.Options, k relay.KafkaConfig, pool *pgxpool.Pool, schema string) (func(), error) {
	lag, done, err := f.cache(k, pool, schema)
	if err == nil && lag != nil {
		opts.Consumers = lag
	}
	return done, err
}

// registerLagMetrics puts the consumer lag gauges on /metrics (the brokers asked
// at most once per --lag-interval however often it is scraped).
func (f *lagFlags) registerLagMetrics(reg prometheus.Registerer, k relay.KafkaConfig, pool *pgxpool.Pool, schema string) (func(), error) {
	lag, done, err := f.cache(k, pool, schema)
	if err == nil && lag != nil {
		reg.MustRegister(consumerlag.NewCollector(lag))
	}
	return done, err
}
