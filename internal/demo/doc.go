// Package demo holds the parts of `outboxtop demo` that are not wiring: its
// environment (a throwaway PostgreSQL cluster and an in-process Kafka broker
// unless it is given its own, with a switch that cuts the relay off Kafka),
// the demo's own tables, a simulated order service that writes each order change
// and its events in one transaction through package outbox, and a consumer
// group that applies the published events to a projection through package
// inbox. Counters count what each side did, for the console and for the
// end-to-end check; Verify checks the projection against the orders table.
//
// The relay is not the demo's: the command opens it through the application
// lifecycle every mode shares (internal/app), on the demo's database and
// brokers (Demo.Connect, Demo.RelayKafka), and attaches it (Demo.Attach), so
// the demo shows the relay that production runs, settings and checks included.
//
// Every order change bumps orders.version by one and writes one order event
// carrying the new version, so once everything is published and consumed the
// projection's events_applied equals the order's version exactly when each
// event was applied once, and its out_of_order counter stays zero when each
// order's events arrived in order.
package demo
