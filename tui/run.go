package tui

import (
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
	po := []tea.ProgramOption{tea.WithContext(m.opts.Context)}
	switch {
	case opts.Terminal != nil:
		po = append(po, opts.Terminal.programOptions()...)
	case os.Getenv("NO_COLOR") != "":
		po = append(po, tea.WithColorProfile(colorprofile.ASCII))
	}
	p := tea.NewProgram(m, po...)
	if opts.Terminal != nil {
		done := make(chan struct{})
		defer close(done)
		go opts.Terminal.forwardResizes(p, done)
	}
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && m.opts.Context.Err() != nil {
		return nil // the context ended (a signal): a normal way out
	}
	return err
}
