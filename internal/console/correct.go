package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"unicode/utf16"

	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"github.com/outboxtop/outboxtop/wire"
)

// Correcting a failed event from the console (e, in the Failed view or a
// failed event's detail): the event's payload, pretty-printed, is written to
// a private temporary file and opened in $VISUAL or $EDITOR (vi when neither
// is set); once the editor exits the file is read back and removed, checked as
// JSON, and the database's diff of the two payloads is shown on the prompt
// line with a reason to type; enter moves on to the confirmation, where yes
// and enter send the copy (inspect.Correction); esc cancels. Nothing is
// changed before that. Over SSH (outboxtop serve)
// an editor would run on the server, so the payload opens in a field editor
// inside the console instead (fieldEditor): ctrl+s takes the text to the same
// review, esc cancels. Its text is the payload with every character outside
// printable ASCII written as a JSON \u escape, the same JSON, so no payload
// can draw anything but its own characters on the operator's terminal.

// actionCorrect names a correction on the prompt and in the status line; it is
// not one of inspect's filter-wide Actions (a correction is one event).
const actionCorrect inspect.Action = "correct"

// pendingCorrection is a correction waiting for its reason and its yes.
type pendingCorrection struct {
	id      string
	payload json.RawMessage
	diff    []inspect.Change
}

func (c *pendingCorrection) prompt(reason []rune) string {
	return fmt.Sprintf("Correct %s (%s)? reason: %s█", shortID(c.id), c.changes(), string(reason))
}

// changes are the first two changes of the diff and how many more.
func (c *pendingCorrection) changes() string {
	var changes []string
	for k, ch := range c.diff {
		if k == 2 {
			changes = append(changes, fmt.Sprintf("+%d more", len(c.diff)-k))
			break
		}
		changes = append(changes, termtext.OneLine(termtext.Sanitize(ch.String())))
	}
	return strings.Join(changes, "; ")
}

// The steps of a correction, each a message back from a command that ran off
// the UI loop.
type (
	correctFileMsg struct {
		id, path string
		written  []byte
		err      error
	}
	correctEditedMsg struct {
		id, path string
		written  []byte
		err      error
	}
	correctPreviewMsg struct {
		id      string
		payload json.RawMessage
		diff    []inspect.Change
		err     error
	}
	correctFieldMsg struct {
		id   string
		text []byte
		err  error
	}
	correctDoneMsg struct {
		id     string
		result inspect.Result
		err    error
	}
)

// correctKey starts a correction of the failed event under the cursor or in
// the detail.
func (m *Model) correctKey() tea.Cmd {
	if m.opts.ReadOnly {
		m.setStatus("read-only console: actions are refused", true)
		return nil
	}
	id := ""
	switch {
	case m.mode == modeDetail:
		id = m.detail.id
	case m.mode == modeNormal && m.view == viewFailed:
		if r, ok := m.tables[m.view].current(); ok {
			id = r.id
		}
	}
	if id == "" {
		m.setStatus("e corrects a failed event: open 4 Failed, or a failed event's detail", true)
		return nil
	}
	in, ctx := m.opts.Inspector, m.opts.Context
	if m.opts.Terminal != nil {
		m.setStatus("correct "+shortID(id)+": reading the payload…", false)
		return func() tea.Msg { return readPayloadText(ctx, in, id) }
	}
	m.setStatus("correct "+shortID(id)+": opening the payload in the editor…", false)
	return func() tea.Msg { return writePayloadFile(ctx, in, id) }
}

// failedPayload is the failed event's payload, pretty-printed, for editing.
func failedPayload(ctx context.Context, in *inspect.Inspector, id string) ([]byte, error) {
	pretty, _, err := failedPayloadSized(ctx, in, id)
	return pretty, err
}

// failedPayloadSized is failedPayload and the payload's size as the console
// gives it (payloadSize: inspect.Event.PayloadBytes).
func failedPayloadSized(ctx context.Context, in *inspect.Inspector, id string) ([]byte, int, error) {
	d, err := in.Detail(ctx, id)
	switch {
	case err != nil:
		return nil, 0, err
	case d.State != wire.Failed:
		return nil, 0, fmt.Errorf("%w: it is %s", inspect.ErrNotCorrectable, d.State)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, d.Payload, "", "  "); err != nil {
		return nil, 0, err
	}
	pretty.WriteByte('\n')
	return pretty.Bytes(), d.PayloadBytes, nil
}

// writePayloadFile writes the failed event's payload to a private temporary
// file for the editor.
func writePayloadFile(ctx context.Context, in *inspect.Inspector, id string) tea.Msg {
	pretty, err := failedPayload(ctx, in, id)
	if err != nil {
		return correctFileMsg{id: id, err: err}
	}
	f, err := os.CreateTemp("", "outboxtop-correct-*.json") // mode 0600
	if err != nil {
		return correctFileMsg{id: id, err: err}
	}
	defer f.Close()
	if _, err := f.Write(pretty); err != nil {
		os.Remove(f.Name())
		return correctFileMsg{id: id, err: err}
	}
	return correctFileMsg{id: id, path: f.Name(), written: pretty}
}

// editCommand opens path in the user's editor, through the shell so that an
// EDITOR with arguments ("code --wait") works as it does for git.
func editCommand(getenv func(string) string, path string) *exec.Cmd {
	editor := getenv("VISUAL")
	if editor == "" {
		editor = getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	return exec.Command("/bin/sh", "-c", editor+` "$1"`, "outboxtop-editor", path)
}

// editPayload runs the editor on the file, the console suspended meanwhile.
func (m *Model) editPayload(msg correctFileMsg) tea.Cmd {
	done := func(err error) tea.Msg {
		return correctEditedMsg{id: msg.id, path: msg.path, written: msg.written, err: err}
	}
	if m.edit != nil {
		return m.edit(msg.path, done)
	}
	return tea.ExecProcess(editCommand(os.Getenv, msg.path), done)
}

// correctStep moves a correction on by one of its messages.
func (m *Model) correctStep(msg tea.Msg) tea.Cmd {
	fail := func(id string, err error) tea.Cmd {
		m.setStatus("correct "+shortID(id)+": "+termtext.OneLine(termtext.Sanitize(err.Error())), true)
		return nil
	}
	switch msg := msg.(type) {
	case correctFileMsg:
		if msg.err != nil {
			return fail(msg.id, msg.err)
		}
		return m.editPayload(msg)
	case correctEditedMsg:
		b, readErr := os.ReadFile(msg.path)
		os.Remove(msg.path)
		switch {
		case msg.err != nil:
			return fail(msg.id, fmt.Errorf("the editor failed: %w; nothing changed", msg.err))
		case readErr != nil:
			return fail(msg.id, readErr)
		case bytes.Equal(b, msg.written):
			m.setStatus("correct "+shortID(msg.id)+": the payload was not changed; nothing sent", false)
			return nil
		case !json.Valid(b):
			return fail(msg.id, errors.New("the edited payload is not valid JSON; nothing changed"))
		}
		return m.previewCorrection(msg.id, b)
	case correctFieldMsg:
		if msg.err != nil {
			return fail(msg.id, msg.err)
		}
		return m.openFieldEditor(msg)
	case correctPreviewMsg:
		if msg.err != nil {
			return fail(msg.id, msg.err)
		}
		m.confirm = &pendingAction{action: actionCorrect, view: m.view, ids: []string{msg.id},
			correction: &pendingCorrection{id: msg.id, payload: msg.payload, diff: msg.diff}}
		m.mode = modeConfirm
		m.setStatus("", false)
		return nil
	case correctDoneMsg:
		if msg.err != nil {
			m.setStatus("correct failed: "+termtext.OneLine(termtext.Sanitize(msg.err.Error())), true)
			return m.startLoad()
		}
		copyID := ""
		if len(msg.result.EventIDs) > 0 {
			copyID = msg.result.EventIDs[0]
		}
		m.setStatus(fmt.Sprintf("corrected %s as %s (audit #%d): the copy waits in its place; the original is archived",
			shortID(msg.id), shortID(termtext.Sanitize(copyID)), msg.result.AuditID), false)
		if m.mode == modeDetail && m.detail.id == msg.id && copyID != "" {
			return tea.Batch(m.startLoad(), m.openDetail(copyID))
		}
		return m.startLoad()
	}
	return nil
}

// previewCorrection asks the database for the diff of an edited payload.
func (m *Model) previewCorrection(id string, edited []byte) tea.Cmd {
	in, ctx := m.opts.Inspector, m.opts.Context
	c := inspect.Correction{ID: id, Payload: json.RawMessage(bytes.TrimSpace(edited)), Reason: "preview", Actor: m.opts.Actor}
	return func() tea.Msg {
		diff, err := in.PreviewCorrection(ctx, c)
		return correctPreviewMsg{id: id, payload: c.Payload, diff: diff, err: err}
	}
}

// runCorrection sends the confirmed correction.
func (m *Model) runCorrection(c pendingCorrection, reason string) tea.Cmd {
	in, ctx := m.opts.Inspector, m.opts.Context
	req := inspect.Correction{ID: c.id, Payload: c.payload, Reason: reason, Actor: m.opts.Actor}
	m.setStatus("correct "+shortID(c.id)+"…", false)
	return func() tea.Msg {
		res, err := in.Correct(ctx, req)
		return correctDoneMsg{id: c.id, result: res, err: err}
	}
}

// fieldEditorMax bounds the payload the field editor opens, by its size as
// JSON text (payloadSize): it redraws its whole text on every key.
const fieldEditorMax = 256 << 10

// fieldEditor is the payload being edited inside the console (over SSH).
type fieldEditor struct {
	id       string
	original string
	ta       textarea.Model
	// from is the mode to go back to (the list or the detail).
	from mode
}

// readPayloadText reads the failed event's payload for the field editor,
// every character outside printable ASCII written as a \u escape.
func readPayloadText(ctx context.Context, in *inspect.Inspector, id string) tea.Msg {
	pretty, size, err := failedPayloadSized(ctx, in, id)
	switch {
	case err != nil:
		return correctFieldMsg{id: id, err: err}
	case size > fieldEditorMax:
		return correctFieldMsg{id: id, err: fmt.Errorf("the payload is %s, over the %d the field editor opens: correct it with `outboxtop correct --id %s --payload-file FILE`",
			payloadSize(size), fieldEditorMax, id)}
	}
	return correctFieldMsg{id: id, text: asciiJSON(pretty)}
}

// asciiJSON writes every rune of JSON text outside printable ASCII (and the
// line breaks and indentation kept) as a \u escape: the same JSON value, since
// such runes can only stand inside strings, with nothing for a terminal to
// act on or draw misleadingly (bidirectional controls, look-alike spaces).
func asciiJSON(b []byte) []byte {
	var out bytes.Buffer
	for _, r := range string(b) {
		switch {
		case r == '\n' || r >= 0x20 && r < 0x7f:
			out.WriteRune(r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&out, "\\u%04x\\u%04x", hi, lo)
		default:
			fmt.Fprintf(&out, "\\u%04x", r)
		}
	}
	return out.Bytes()
}

// openFieldEditor shows the payload in the field editor.
func (m *Model) openFieldEditor(msg correctFieldMsg) tea.Cmd {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.CharLimit = 0
	ta.MaxHeight = 0
	ta.MaxWidth = 0
	ta.SetValue(string(msg.text))
	ta.MoveToBegin()
	w, h := m.bodySize()
	ta.SetWidth(w)
	ta.SetHeight(max(h-1, 1))
	m.field = &fieldEditor{id: msg.id, original: ta.Value(), ta: ta, from: m.mode}
	m.mode = modeEdit
	m.setStatus("", false)
	return m.field.ta.Focus()
}

// fieldKey edits the payload: ctrl+s takes it to the review, esc cancels.
func (m *Model) fieldKey(msg tea.KeyPressMsg) tea.Cmd {
	f := m.field
	switch msg.String() {
	case "esc":
		m.field, m.mode = nil, f.from
		m.setStatus("correct "+shortID(f.id)+": cancelled; nothing sent", false)
		return nil
	case "ctrl+s":
		text := f.ta.Value()
		m.field, m.mode = nil, f.from
		switch {
		case text == f.original:
			m.setStatus("correct "+shortID(f.id)+": the payload was not changed; nothing sent", false)
			return nil
		case !json.Valid([]byte(text)):
			m.setStatus("correct "+shortID(f.id)+": the edited payload is not valid JSON; nothing changed", true)
			return nil
		}
		return m.previewCorrection(f.id, []byte(text))
	}
	var cmd tea.Cmd
	f.ta, cmd = f.ta.Update(msg)
	return cmd
}

// fieldView is the field editor's screen: what is edited, then the text.
func (m *Model) fieldView(w int) string {
	title := m.styles.section.Render(fit("CORRECT "+shortID(m.field.id)+" · the payload as JSON · ctrl+s review the diff · esc cancel", w, false))
	return title + "\n" + m.field.ta.View()
}
