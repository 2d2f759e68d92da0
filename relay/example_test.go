package relay_test

import (
	"context"
	"errors"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/relay"
)

// A Go service runs the relay in process: a pool of its own, a Kafka producer
// built for the config, and Run until the service stops. The pool's sessions
// search only the built-ins, as outboxtop's own do, so no role that may create
// in a schema on the database's search_path runs its code in the relay's
// statements. The schema is migrated beforehand (outboxtop migrate, or
// migrations.Migrate).
func Example_embedded() {
	ctx := context.Background()
	pcfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	pcfg.ConnConfig.RuntimeParams["search_path"] = "pg_catalog, pg_temp"
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
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
