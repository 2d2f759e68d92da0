package tui

import (
	"errors"
	"os"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
)

// Run runs the console on the terminal until the operator quits or opts.Context
// ends. Any non-empty NO_COLOR turns colour off (Bubble Tea itself only honours
// true/false values); bold and reverse video remain.
func Run(opts Options) error {
	m := New(opts)
	po := []tea.ProgramOption{tea.WithContext(m.opts.Context)}
	if os.Getenv("NO_COLOR") != "" {
		po = append(po, tea.WithColorProfile(colorprofile.ASCII))
	}
	_, err := tea.NewProgram(m, po...).Run()
	if errors.Is(err, tea.ErrProgramKilled) && m.opts.Context.Err() != nil {
		return nil // the context ended (a signal): a normal way out
	}
	return err
}
