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
// line with a reason to type; enter sends the copy (inspect.Correction), esc
// cancels. Nothing is changed before that enter. Over SSH (outboxtop serve)
// the editor would run on the server, so the console says to use `outboxtop
// correct --payload-file` instead.

// actionCorrect names a correction on the prompt and in the status line; it is
// not one of inspect's filter-wide Actions (a correction is one event).
const actionCorrect inspect.Action = "correct"

// pendingCorrection is a correction waiting for its reason and enter.
type pendingCorrection struct {
	id      string
	payload json.RawMessage
	diff    []inspect.Change
}

func (c *pendingCorrection) prompt(reason []rune) string {
	var changes []string
	for k, ch := range c.diff {
		if k == 2 {
			changes = append(changes, fmt.Sprintf("+%d more", len(c.diff)-k))
			break
		}
		changes = append(changes, termtext.OneLine(termtext.Sanitize(ch.String())))
	}
	return fmt.Sprintf("Correct %s (%s)? reason: %s█", shortID(c.id), strings.Join(changes, "; "), string(reason))
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
	if m.opts.Terminal != nil {
		m.setStatus("over SSH the editor would run on the server: correct with `outboxtop correct --id ID --payload-file FILE`", true)
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
	m.setStatus("correct "+shortID(id)+": opening the payload in the editor…", false)
	return func() tea.Msg { return writePayloadFile(ctx, in, id) }
}

// writePayloadFile writes the failed event's payload to a private temporary
// file for the editor.
func writePayloadFile(ctx context.Context, in *inspect.Inspector, id string) tea.Msg {
	d, err := in.Detail(ctx, id)
	switch {
	case err != nil:
		return correctFileMsg{id: id, err: err}
	case d.State != wire.Failed:
		return correctFileMsg{id: id, err: fmt.Errorf("%w: it is %s", inspect.ErrNotCorrectable, d.State)}
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, d.Payload, "", "  "); err != nil {
		return correctFileMsg{id: id, err: err}
	}
	pretty.WriteByte('\n')
	f, err := os.CreateTemp("", "outboxtop-correct-*.json") // mode 0600
	if err != nil {
		return correctFileMsg{id: id, err: err}
	}
	defer f.Close()
	if _, err := f.Write(pretty.Bytes()); err != nil {
		os.Remove(f.Name())
		return correctFileMsg{id: id, err: err}
	}
	return correctFileMsg{id: id, path: f.Name(), written: pretty.Bytes()}
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
	in, ctx := m.opts.Inspector, m.opts.Context
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
		c := inspect.Correction{ID: msg.id, Payload: json.RawMessage(bytes.TrimSpace(b)), Reason: "preview", Actor: m.opts.Actor}
		return func() tea.Msg {
			diff, err := in.PreviewCorrection(ctx, c)
			return correctPreviewMsg{id: msg.id, payload: c.Payload, diff: diff, err: err}
		}
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
