// Package relayceiling measures what the database allows the relay — for the
// benchmarks (test/bench, relay's BenchmarkDrain, test/bench/walprobe) —
// without that measurement being part of package relay's API, where an
// application could run it by mistake: it marks events published with made-up
// Kafka coordinates.
//
// Package relay installs Measure when it is initialised, so it is set in any
// program that imports relay.
package relayceiling

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Result is what Measure measured.
type Result struct {
	// Events is how many events were marked published.
	Events int
	// Elapsed is how long that took, from the first claim to the last mark.
	Elapsed time.Duration
	// Claims holds the duration of every claim that returned events.
	Claims []time.Duration
}

// Measure runs, in loops goroutines, the relay's own claim and mark statements
// (cfg's ordering and batch size) with no broker in between, until nothing is
// claimable. It marks events published with made-up Kafka coordinates, so run
// it only on a copy of an outbox. cfg must be a relay.Config (relayceiling
// cannot name the type: relay imports it).
var Measure func(ctx context.Context, pool *pgxpool.Pool, cfg any, loops int) (Result, error)
