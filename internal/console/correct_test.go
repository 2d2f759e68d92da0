package console

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// editWith makes the console's editor a function of the file's JSON.
func editWith(t *testing.T, change func(map[string]any) []byte) func(string, func(error) tea.Msg) tea.Cmd {
	return func(path string, done func(error) tea.Msg) tea.Cmd {
		return func() tea.Msg {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Error(err)
				return done(err)
			}
			var v map[string]any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Errorf("the editor got %q: %v", b, err)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("the payload file's mode: %v %v, want 0600", fi.Mode(), err)
			}
			if out := change(v); out != nil {
				if err := os.WriteFile(path, out, 0o600); err != nil {
					t.Error(err)
				}
			}
			return done(nil)
		}
	}
}

// e on a failed event opens its payload in the editor, shows the diff on the
// prompt with a reason to type, and enter, then yes and enter, send the copy: the original is
// archived, the copy waits in its place, and the temporary file is gone.
func TestCorrectFromTheFailedView(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.keys("4")
	r, ok := b.m.tables[viewFailed].current()
	if !ok {
		t.Fatal("no failed event listed")
	}
	var path string
	b.m.edit = editWith(t, func(v map[string]any) []byte {
		v["fixed"] = true
		out, _ := json.Marshal(v)
		return out
	})
	inner := b.m.edit
	b.m.edit = func(p string, done func(error) tea.Msg) tea.Cmd { path = p; return inner(p, done) }
	b.keys("e")
	if b.m.mode != modeConfirm {
		t.Fatalf("e did not reach the prompt:\n%s", b.text())
	}
	if s := b.text(); !strings.Contains(s, "Correct "+shortID(r.id)+" (fixed: added true)? reason:") {
		t.Fatalf("the prompt does not show the diff:\n%s", s)
	}
	b.keys("enter") // no reason yet: the prompt stays
	if b.m.mode != modeConfirm {
		t.Fatal("enter without a reason left the prompt")
	}
	b.typeText("add the flag")
	b.keys("enter")
	if s := b.text(); !strings.Contains(s, "Correct "+shortID(r.id)+"? type yes + enter: █ (fixed: added true) reason: add the flag") ||
		b.count(`SELECT count(*) FROM outbox_audit`) != 0 {
		t.Fatalf("enter after the reason did not ask for yes:\n%s", s)
	}
	b.keys("y", "e", "s", "enter")
	if n := b.count(`SELECT count(*) FROM outbox_event_archive WHERE event_id = $1 AND failed_at IS NOT NULL
		AND starts_with(last_error, 'corrected by tester as ')`, r.id); n != 1 {
		t.Errorf("the original is not archived as corrected (%d rows)", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox_event WHERE correction_of = $1 AND payload->>'fixed' = 'true' AND failed_at IS NULL`, r.id); n != 1 {
		t.Errorf("%d corrected copies in the outbox, want 1", n)
	}
	if n := b.count(`SELECT count(*) FROM outbox_audit WHERE action = 'correct' AND reason = 'add the flag' AND jsonb_array_length(diff) = 1`); n != 1 {
		t.Errorf("%d audit rows of the correction with its diff, want 1", n)
	}
	if s := b.text(); !strings.Contains(s, "corrected "+shortID(r.id)+" as ") {
		t.Errorf("the status line does not report the correction:\n%s", s)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the payload file %s is left behind: %v", path, err)
	}
	// In the archive the original is corrected, not skipped.
	b.keys("5", "v")
	if s := b.text(); !strings.Contains(s, shortID(r.id)) || !strings.Contains(s, "corrected") {
		t.Errorf("the archive does not list the original as corrected:\n%s", s)
	}
}

// An editor that changes nothing, or leaves invalid JSON, sends nothing; a
// read-only console refuses the key.
func TestCorrectSendsNothingUnlessChanged(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.keys("4")
	for _, c := range []struct {
		out  []byte
		want string
	}{
		{nil, "the payload was not changed; nothing sent"},
		{[]byte(`{"broken": `), "not valid JSON; nothing changed"},
	} {
		b.m.edit = editWith(t, func(map[string]any) []byte { return c.out })
		b.keys("e")
		if s := b.text(); b.m.mode == modeConfirm || !strings.Contains(s, c.want) {
			t.Errorf("editor output %q: want %q on the status line:\n%s", c.out, c.want, s)
		}
	}
	if n := b.count(`SELECT count(*) FROM outbox_audit WHERE action = 'correct'`); n != 0 {
		t.Errorf("%d corrections audited, want none", n)
	}
	ro := setup(t, Options{ReadOnly: true})
	ro.keys("4", "e")
	if s := ro.text(); !strings.Contains(s, "read-only console: actions are refused") {
		t.Errorf("a read-only console does not refuse e:\n%s", s)
	}
}

// Over SSH the payload opens in the console's own field editor, its text
// inert (every character outside printable ASCII a \u escape of the same
// JSON); ctrl+s takes it to the same review and enter sends it, esc cancels.
func TestCorrectOverSSHUsesTheFieldEditor(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{Terminal: &Terminal{}})
	const id = "0196b0c2-0000-7000-8000-00000000e001"
	if _, err := b.pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at, last_error)
		VALUES ($1, 'order', 'ssh-1', 'OrderPlaced', jsonb_build_object('note', e'\u202eevil\u001b[31m'), now(), 'boom')`, id); err != nil {
		t.Fatal(err)
	}
	b.run(b.m.startLoad())
	b.keys("4")
	for b.m.tables[viewFailed].cursor = 0; ; b.m.tables[viewFailed].cursor++ {
		r, ok := b.m.tables[viewFailed].current()
		if !ok {
			t.Fatal("the event is not listed")
		}
		if r.id == id {
			break
		}
	}
	b.keys("e")
	if b.m.mode != modeEdit {
		t.Fatalf("e over SSH did not open the field editor:\n%s", b.text())
	}
	text := b.m.field.ta.Value()
	if strings.ContainsAny(text, "\u202e\x1b") || !strings.Contains(text, `\u202eevil\u001b[31m`) {
		t.Errorf("the field editor's text is not inert: %q", text)
	}
	if s := b.text(); !strings.Contains(s, "CORRECT "+shortID(id)) || !strings.Contains(s, "ctrl+s") {
		t.Errorf("the field editor's screen:\n%s", s)
	}
	b.keys("ctrl+s")
	if s := b.text(); b.m.mode == modeEdit || !strings.Contains(s, "the payload was not changed; nothing sent") {
		t.Errorf("ctrl+s on an unchanged payload:\n%s", s)
	}
	b.keys("e")
	b.typeText("x") // keys reach the field
	if v := b.m.field.ta.Value(); !strings.HasPrefix(v, "x{") {
		t.Errorf("after typing x: %q", v)
	}
	b.keys("esc")
	if b.m.mode == modeEdit || b.count(`SELECT count(*) FROM outbox_audit`) != 0 {
		t.Fatal("esc did not cancel")
	}
	b.keys("e")
	b.m.field.ta.SetValue(`{"note": "fixed"}`)
	b.keys("ctrl+s")
	if p := b.m.confirm; b.m.mode != modeConfirm || p == nil || p.correction == nil || len(p.correction.diff) != 1 ||
		p.correction.diff[0].String() != "note: \"\u202eevil\\u001b[31m\" → \"fixed\"" {
		t.Fatalf("ctrl+s did not reach the review of one change:\n%s", b.text())
	}
	if s := b.text(); strings.ContainsAny(s, "\u202e") {
		t.Errorf("the review draws the payload's bidirectional control:\n%s", s)
	}
	b.typeText("drop the escape")
	b.keys("enter", "y", "e", "s", "enter")
	if n := b.count(`SELECT count(*) FROM outbox_event WHERE correction_of = $1 AND payload = '{"note": "fixed"}'`, id); n != 1 {
		t.Errorf("%d corrected copies, want 1:\n%s", n, b.text())
	}
}
