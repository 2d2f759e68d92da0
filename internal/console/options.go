package console

import (
	"context"
	"github.com/outboxtop/outboxtop/relay"
	"time"

	"charm.land/bubbles/v2/key"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// Options configure the console.
type Options struct {
	// Name names the outbox in the header (the fleet console sets it); empty
	// for a console on one outbox.
	Name string
	// Inspector reads the outbox and performs the actions. Required. A read-only
	// Inspector makes the console read-only.
	Inspector *inspect.Inspector
	// Relay is the relay embedded in this process; nil when there is none
	// (--no-relay), and the Overview says so.
	Relay Relay
	// ReadOnly hides and refuses the action keys (also implied by a read-only
	// Inspector).
	ReadOnly bool
	// Actor is recorded in the audit rows of actions; inspect.DefaultActor when empty.
	Actor string
	// Refresh is the interval between loads (default 1 s; + and - change it).
	Refresh time.Duration
	// Now is the clock ages and countdowns are computed against (default time.Now).
	// Tests fix it.
	Now func() time.Time
	// Context bounds every load and action (default context.Background()).
	Context context.Context
	// Limit is the number of rows a list view loads (default 500).
	Limit int
	// MissingTopics, when set, reads with every load the Kafka topics that do
	// not exist while events wait for them, as the rows say: for a console
	// without an embedded relay (one with a relay takes them from its status).
	// It must be bounded and quick.
	MissingTopics func(ctx context.Context) ([]MissingTopic, error)
	// Extras are additional keys, for example the demo's fault switches. They appear
	// in the help screen under "extras" only when present.
	Extras []Extra
	// Consumers is where the Consumers view reads the consumer groups' lag; nil
	// when no brokers are known (the view then shows the inboxes alone).
	Consumers ConsumerLag
	// Kafka, when set, reads an event's record back from Kafka in its detail view
	// (once when the detail opens); nil: the detail says it was not read.
	Kafka inspect.KafkaClient
	// Terminal is a remote terminal to run on instead of the process's own (an SSH
	// session under outboxtop serve); nil for the local terminal.
	Terminal *Terminal
	// Snapshots supplies the Overview's snapshot, which every load reads (the
	// tabs show its counts); Inspector when nil. outboxtop serve shares one
	// source among all its sessions, so the database sees one snapshot per
	// refresh however many consoles are open; lists and detail stay per session.
	Snapshots SnapshotSource
}

// SnapshotSource supplies the Overview's snapshot; *inspect.Inspector is one.
// A snapshot may be shared between consoles: the console never changes one.
type SnapshotSource interface {
	Snapshot(ctx context.Context) (inspect.Snapshot, error)
}

// Relay is what the console needs of an embedded relay; *relay.Relay is one.
type Relay interface {
	Pause()
	Resume()
	Status() RelayStatus
}

// RelayStatus is a point-in-time view of the embedded relay: the relay's own
// Status, not a copy of it, so every figure the relay reports reaches the
// console.
type RelayStatus = relay.Status

// MissingTopic is a Kafka topic that does not exist while events wait for it,
// as the relay or the rows count them.
type MissingTopic = relay.MissingTopic

// Extra is one additional key binding and what it does.
type Extra struct {
	// Key is the binding; its help text is shown in the help screen.
	Key key.Binding
	// Run is called off the UI loop when the key is pressed; its message (or error)
	// is shown in the status line.
	Run func(ctx context.Context) (string, error)
	// State, when set, is read with every load and shown in the Overview under
	// the key's help text ("broker outage: on"). It must be quick.
	State func() string
}

func (o *Options) defaults() {
	if o.Refresh <= 0 {
		o.Refresh = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	if o.Limit <= 0 {
		o.Limit = 500
	}
	if o.Inspector != nil && o.Inspector.IsReadOnly() {
		o.ReadOnly = true
	}
	if o.Snapshots == nil && o.Inspector != nil {
		o.Snapshots = o.Inspector
	}
}
