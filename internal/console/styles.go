package console

import "charm.land/lipgloss/v2"

// styles use the 16 ANSI colours, which every terminal maps to its own light or
// dark palette, and carry meaning in text and attributes too (reverse, bold, "*",
// ">"), so nothing depends on colour: with NO_COLOR the console is the same minus
// the colours.
type styles struct {
	title, header, dim, cursor, marked lipgloss.Style
	tabOn, tabOff                      lipgloss.Style
	paused, warn, bad, good, prompt    lipgloss.Style
	section                            lipgloss.Style
}

func newStyles() styles {
	return styles{
		title:   lipgloss.NewStyle().Bold(true),
		header:  lipgloss.NewStyle().Bold(true).Underline(true),
		dim:     lipgloss.NewStyle().Faint(true),
		cursor:  lipgloss.NewStyle().Reverse(true),
		marked:  lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Magenta),
		tabOn:   lipgloss.NewStyle().Reverse(true).Bold(true),
		tabOff:  lipgloss.NewStyle(),
		paused:  lipgloss.NewStyle().Reverse(true).Bold(true).Foreground(lipgloss.Yellow),
		warn:    lipgloss.NewStyle().Foreground(lipgloss.Yellow).Bold(true),
		bad:     lipgloss.NewStyle().Foreground(lipgloss.Red).Bold(true),
		good:    lipgloss.NewStyle().Foreground(lipgloss.Green),
		prompt:  lipgloss.NewStyle().Reverse(true).Bold(true),
		section: lipgloss.NewStyle().Bold(true),
	}
}
