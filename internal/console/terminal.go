package console

import (
	"io"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
)

// Terminal is a terminal other than the process's own: the console reads keys
// from In and draws on Out. The process's signals and its controlling terminal
// are left alone, so one process can serve many consoles.
type Terminal struct {
	In  io.Reader
	Out io.Writer
	// Environ is the client's environment ("TERM=xterm-256color", "NO_COLOR=1",
	// …); the colour profile is derived from it, not from the server's.
	Environ []string
	// Width and Height are the terminal's size when the console starts.
	Width, Height int
	// Resize delivers the terminal's later sizes; nil when it never changes.
	// The console stops reading it when it exits.
	Resize <-chan Size
}

// Size is a terminal's size in cells.
type Size struct{ Width, Height int }

// programOptions runs the console on t: its input, output, environment and size;
// no signal handling (the process's signals are the server's); and a suspend
// turned into a resume, so no key can stop the serving process.
func (t *Terminal) programOptions() []tea.ProgramOption {
	env := append([]string(nil), t.Environ...)
	profile := colorprofile.Env(env)
	if environValue(env, "NO_COLOR") != "" {
		profile = colorprofile.ASCII
	}
	return []tea.ProgramOption{
		tea.WithInput(t.In),
		tea.WithOutput(t.Out),
		tea.WithEnvironment(env),
		tea.WithColorProfile(profile),
		tea.WithWindowSize(t.Width, t.Height),
		tea.WithoutSignalHandler(),
		tea.WithFilter(func(_ tea.Model, msg tea.Msg) tea.Msg {
			if _, ok := msg.(tea.SuspendMsg); ok {
				return tea.ResumeMsg{}
			}
			return msg
		}),
	}
}

// forwardResizes sends t's sizes to p until done is closed.
func (t *Terminal) forwardResizes(p *tea.Program, done <-chan struct{}) {
	if t.Resize == nil {
		return
	}
	for {
		select {
		case <-done:
			return
		case s, ok := <-t.Resize:
			if !ok {
				return
			}
			p.Send(tea.WindowSizeMsg{Width: s.Width, Height: s.Height})
		}
	}
}

// environValue is the last value of name in env (later entries win, as in a
// process environment built by appending).
func environValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}
