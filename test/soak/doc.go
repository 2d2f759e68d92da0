// Command soak proves, with numbers, that outboxtop loses nothing and keeps
// per-aggregate order while things break.
//
//	go run ./test/soak --duration 2m --brokers 127.0.0.1:19092   (scripts/soak starts the broker)
//
// It starts a throwaway PostgreSQL (internal/pgtemp), builds the outboxtop binary
// and runs three `outboxtop --headless` relays against a real Kafka broker while
// the demo's order service commits a few hundred events a second. Meanwhile a
// fault schedule runs: a relay is SIGKILLed and restarted; one is SIGSTOPped past
// its lease and continued (a zombie lease holder whose marks must be fenced); the
// broker is stopped and restarted (scripts/kafka restart) after --broker-outage
// (3 s; `--duration 6m --broker-outage 3m` keeps it away for minutes while the
// writers go on); PostgreSQL is restarted
// with a fast shutdown; poison events are injected; and the operator's CLI actions
// (retry, reset-lease, archive, skip) run mid-flight. Then the load stops, the
// relays drain, and `soak check` — a separate process with its own Kafka client —
// reads every record of the run's topics, compares them with the database
// (outbox_event and outbox_event_archive) and prints one table. It exits non-zero
// when an event is lost, an aggregate's events were first delivered out of seq
// order, a record is not in the database, or an event other than a poison one is
// dead.
//
//	go run ./test/soak rss --events 1000000 --brokers 127.0.0.1:19092
//
// measures the resident memory of `outboxtop --headless --drain` draining a
// backlog of that many events.
package main
