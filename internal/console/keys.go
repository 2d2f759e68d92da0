package console

import "charm.land/bubbles/v2/key"

// KeyMap is every key the console answers to. It is defined once and feeds the
// footer, the ? help screen and the tests.
type KeyMap struct {
	NextView, PrevView, JumpView key.Binding

	Up, Down, Top, Bottom, PageUp, PageDown key.Binding
	Detail, Back, Filter, Mark, MarkAll     key.Binding
	Sort, Reverse                           key.Binding
	Aggregate, AuditLog                     key.Binding
	// Archived toggles tab 5 between Published and Archived; Breakdowns cycles
	// the Overview's lower half: blocked aggregates, event types, error groups.
	Archived, Breakdowns key.Binding

	// Actions: absent from help and refused in read-only mode.
	Retry, ResetLease, Archive, Park, Skip, Replay, Pause key.Binding
	// Terminate ends the backend holding the xmin horizon (the Overview's
	// "horizon held" line). Correct edits a failed event's payload and sends
	// the corrected copy.
	Terminate, Correct key.Binding

	Faster, Slower, Help, Quit key.Binding
}

// DefaultKeyMap returns the console's keys.
func DefaultKeyMap() KeyMap {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return KeyMap{
		NextView: b([]string{"tab"}, "tab", "next view"),
		PrevView: b([]string{"shift+tab"}, "shift+tab", "previous view"),
		JumpView: b([]string{"1", "2", "3", "4", "5", "6"}, "1-6", "go to view"),

		Up:       b([]string{"k", "up"}, "k/↑", "up"),
		Down:     b([]string{"j", "down"}, "j/↓", "down"),
		Top:      b([]string{"g", "home"}, "g", "top"),
		Bottom:   b([]string{"G", "end"}, "G", "bottom"),
		PageUp:   b([]string{"pgup", "ctrl+b"}, "pgup", "page up"),
		PageDown: b([]string{"pgdown", "ctrl+f"}, "pgdn", "page down"),
		Detail:   b([]string{"enter"}, "enter", "detail"),
		Back:     b([]string{"esc"}, "esc", "back / clear marks"),
		Filter:   b([]string{"/"}, "/", "filter"),
		Mark:     b([]string{"space"}, "space", "mark"),
		// ctrl+a is GNU screen's prefix and often tmux's: * works under both.
		MarkAll: b([]string{"*", "ctrl+a"}, "*", "mark all listed"),
		Sort:    b([]string{"o"}, "o", "sort column"),
		Reverse: b([]string{"O"}, "O", "reverse sort"),
		// A, not a: a archives.
		Aggregate: b([]string{"A"}, "A", "aggregate timeline"),
		AuditLog:  b([]string{"L"}, "L", "audit log"),
		// v, t: b and i are the demo's fault keys.
		Archived:   b([]string{"v"}, "v", "Published ⇄ Archived (5)"),
		Breakdowns: b([]string{"t"}, "t", "overview: types, errors"),

		Retry:      b([]string{"r"}, "r", "retry"),
		ResetLease: b([]string{"l"}, "l", "reset lease"),
		Archive:    b([]string{"a"}, "a", "archive"),
		Park:       b([]string{"x"}, "x", "park"),
		Skip:       b([]string{"s"}, "s", "skip blocker"),
		Replay:     b([]string{"R"}, "R", "replay"),
		Pause:      b([]string{"p"}, "p", "pause/resume relay"),
		Terminate:  b([]string{"T"}, "T", "end xmin holder"),
		Correct:    b([]string{"e"}, "e", "correct payload ($EDITOR)"),

		Faster: b([]string{"+", "="}, "+", "refresh faster"),
		Slower: b([]string{"-"}, "-", "refresh slower"),
		Help:   b([]string{"?"}, "?", "help"),
		Quit:   b([]string{"q", "ctrl+c"}, "q", "quit"),
	}
}

// actionKeys are the bindings that change something.
func (k *KeyMap) actionKeys() []*key.Binding {
	return []*key.Binding{&k.Retry, &k.ResetLease, &k.Archive, &k.Park, &k.Skip, &k.Replay, &k.Pause, &k.Terminate, &k.Correct}
}

// readOnly disables the action keys: they vanish from help and no longer match.
func (k KeyMap) readOnly() KeyMap {
	for _, b := range k.actionKeys() {
		b.SetEnabled(false)
	}
	return k
}
