package relay_test

import (
	"context"
	"errors"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/relay"
)

// A Go service runs the relay in process: a pool, a Kafka producer built for
// the config, and Run until the service stops. The schema is migrated
// beforehand (outboxtop migrate, or migrations.Migrate).
func Example_embedded() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	cfg := relay.Config{Schema: "public"} // zero fields take relay.DefaultConfig
	client, err := relay.NewKafkaClient(cfg.Kafka(relay.KafkaConfig{Brokers: []string{"kafka-1:9092"}}))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	r, err := relay.New(pool, client, cfg)
	var bad *relay.ConfigError
	if errors.As(err, &bad) {
		log.Fatalf("relay setting %s: %s", bad.Field, bad.Problem)
	} else if err != nil {
		log.Fatal(err)
	}
	if err := r.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
