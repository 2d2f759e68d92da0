// Package relayfault makes a running relay fail on purpose — for the demo's
// fault keys and for tests in other packages — without that lever being part of
// package relay's API, where an application could pull it by mistake.
//
// Package relay installs the functions when it is initialised, so they are set
// in any program that holds a *relay.Relay.
package relayfault

// AbandonNextBatch makes the next batch that Kafka acknowledges end as if the
// relay process died right then: nothing is marked or released, the lease runs
// out, and a later claim publishes the events again. It shows the
// mark-after-ack gap every at-least-once relay has, and the duplicates
// consumers' inboxes absorb. r must be a *relay.Relay (relayfault cannot name
// the type: relay imports it).
var AbandonNextBatch func(r any)
