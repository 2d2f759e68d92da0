package sshserve

import (
	"context"

	"github.com/outboxtop/outboxtop/internal/console"
)

// Fleet is the fleet console served over SSH (outboxtop serve --fleet).
type Fleet struct {
	// Source supplies the fleet's rows (a *fleet.Poller shared by every
	// session: the databases are polled once however many consoles are open).
	Source console.FleetSource
	// Title names the fleet in the header.
	Title string
	// Open opens the console of the outbox named name. With operator false it
	// must return a read-only Inspector. The server sets Actor, ReadOnly,
	// Context, Name and Terminal.
	Open func(ctx context.Context, name string, operator bool) (console.Options, func(), error)
	// MayAct says whether the operator key with this fingerprint may act on the
	// outbox named name; nil lets an operator act on every outbox.
	MayAct func(fingerprint, name string) bool
}

// fleetOptions is the fleet console of one session: an outbox opens for acting
// only when the key is an operator's, the server is not read-only, and the
// fleet lets this key act on that outbox; its actions are audited in that
// outbox's database under the key's name.
func (s *Server) fleetOptions(ctx context.Context, id Identity, terminal *console.Terminal) console.FleetOptions {
	f := s.cfg.Fleet
	return console.FleetOptions{
		Source:   f.Source,
		Title:    f.Title,
		Context:  ctx,
		Terminal: terminal,
		Refresh:  s.cfg.Console.Refresh,
		Open: func(ctx context.Context, name string) (console.Options, func(), error) {
			operator := s.mayAct(id, name)
			o, closeFn, err := f.Open(ctx, name, operator)
			if err != nil {
				return o, closeFn, err
			}
			o.ReadOnly = !operator || o.ReadOnly
			o.Actor = id.Actor()
			o.Name = name
			s.log.Info("fleet outbox opened", "fingerprint", id.Fingerprint, "outbox", name, "may_act", !o.ReadOnly)
			return o, closeFn, nil
		},
	}
}

func (s *Server) mayAct(id Identity, name string) bool {
	if id.Role != Operator || s.cfg.Console.ReadOnly {
		return false
	}
	f := s.cfg.Fleet
	return f.MayAct == nil || f.MayAct(id.Fingerprint, name)
}
