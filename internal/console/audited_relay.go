package console

import (
	"context"
	"log/slog"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// AuditedRelay is a console's relay whose pause and resume are recorded in
// outbox_audit with the actor first, like every other action: pausing a shared
// relay stops publishing for everyone, so it must leave a trace naming who. When
// the audit row cannot be written, nothing changes and the error is logged; the
// console sees the relay's state unchanged.
type AuditedRelay struct {
	Relay     Relay
	Inspector *inspect.Inspector
	Actor     string
	Context   context.Context
	Logger    *slog.Logger
}

// Pause records the pause, then pauses.
func (a AuditedRelay) Pause() { a.toggle(true) }

// Resume records the resume, then resumes.
func (a AuditedRelay) Resume() { a.toggle(false) }

// Status is the relay's.
func (a AuditedRelay) Status() RelayStatus { return a.Relay.Status() }

func (a AuditedRelay) toggle(pause bool) {
	ctx := a.Context
	if ctx == nil {
		ctx = context.Background()
	}
	log := a.Logger
	if log == nil {
		log = slog.Default()
	}
	what := "resumed"
	if pause {
		what = "paused"
	}
	id, err := a.Inspector.AuditRelay(ctx, a.Actor, pause)
	if err != nil {
		log.Error("relay not "+what+": the audit row could not be written", "actor", a.Actor, "err", err)
		return
	}
	if pause {
		a.Relay.Pause()
	} else {
		a.Relay.Resume()
	}
	log.Info("relay "+what, "actor", a.Actor, "audit_id", id)
}
