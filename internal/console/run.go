package console

import (
	"context"
	"errors"
	"os"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
)

// Run runs the console on the terminal (opts.Terminal, else the process's own)
// until the operator quits or opts.Context ends. Any non-empty NO_COLOR turns
// colour off (Bubble Tea itself only honours true/false values); bold and reverse
// video remain.
func Run(opts Options) error {
	m := New(opts)
	return runProgram(m.opts.Context, m, opts.Terminal)
}

// runProgram runs a console model on terminal (nil: the process's own) until it
// quits or ctx ends; ctx ending is a normal way out (a signal), not an error.
func runProgram(ctx context.Context, m tea.Model, terminal *Terminal) error {
	po := []tea.ProgramOption{tea.WithContext(ctx)}
	switch {
	case terminal != nil:
		po = append(po, terminal.programOptions()...)
	case os.Getenv("NO_COLOR") != "":
		po = append(po, tea.WithColorProfile(colorprofile.ASCII))
	}
	p := tea.NewProgram(m, po...)
	if terminal != nil {
		done := make(chan struct{})
		defer close(done)
		go terminal.forwardResizes(p, done)
	}
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}
