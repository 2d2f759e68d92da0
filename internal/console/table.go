package console

import (
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// table is a list of events with a cursor and marks. Marks are event ids, captured
// when marked: the list may re-sort or lose rows under them.
type table struct {
	columns       []column
	rows          []row
	cursor        int
	offset        int
	width, height int // height counts the header line
	marks         map[string]struct{}
	markOrder     []string // ids in the order they were marked, for the prompt
	sort          inspect.Sort
	desc          bool
	more          bool          // the database had more rows than were loaded
	total         inspect.Count // rows matching the state and filter
	scan          *inspect.Scan // a search inside payloads or headers read without an index
	want          int           // rows to load (grows a page at a time as the cursor reaches the end)
	loaded        bool          // a load has filled the table at least once
}

func newTable(cols []column) *table {
	return &table{columns: cols, marks: map[string]struct{}{}}
}

// SetSize sets the space the table draws in.
func (t *table) SetSize(w, h int) {
	t.width, t.height = w, h
	t.clamp()
}

// SetRows replaces the rows, keeping the cursor on the same event when it is still
// listed — except on the first row, where it stays: a newest-first list that grows
// at the top keeps showing the newest instead of following an event down the page
// until the user moves.
func (t *table) SetRows(rows []row) {
	var keep string
	if c, ok := t.current(); ok && t.cursor > 0 {
		keep = c.id
	}
	t.rows = rows
	if keep != "" {
		for i, r := range rows {
			if r.id == keep {
				t.cursor = i
				break
			}
		}
	}
	t.clamp()
}

func (t *table) current() (row, bool) {
	if t.cursor < 0 || t.cursor >= len(t.rows) {
		return row{}, false
	}
	return t.rows[t.cursor], true
}

func (t *table) bodyHeight() int { return max(t.height-1, 1) }

func (t *table) clamp() {
	t.cursor = min(max(t.cursor, 0), max(len(t.rows)-1, 0))
	h := t.bodyHeight()
	if t.cursor < t.offset {
		t.offset = t.cursor
	}
	if t.cursor >= t.offset+h {
		t.offset = t.cursor - h + 1
	}
	t.offset = min(max(t.offset, 0), max(len(t.rows)-h, 0))
}

// Update moves the cursor.
func (t *table) Update(msg tea.KeyPressMsg, k KeyMap) {
	switch {
	case key.Matches(msg, k.Up):
		t.cursor--
	case key.Matches(msg, k.Down):
		t.cursor++
	case key.Matches(msg, k.Top):
		t.cursor = 0
	case key.Matches(msg, k.Bottom):
		t.cursor = len(t.rows) - 1
	case key.Matches(msg, k.PageUp):
		t.cursor -= t.bodyHeight()
	case key.Matches(msg, k.PageDown):
		t.cursor += t.bodyHeight()
	}
	t.clamp()
}

// toggleMark marks or unmarks the event under the cursor.
func (t *table) toggleMark() {
	r, ok := t.current()
	if !ok {
		return
	}
	if _, on := t.marks[r.id]; on {
		delete(t.marks, r.id)
		for i, id := range t.markOrder {
			if id == r.id {
				t.markOrder = append(t.markOrder[:i], t.markOrder[i+1:]...)
				break
			}
		}
		return
	}
	t.marks[r.id] = struct{}{}
	t.markOrder = append(t.markOrder, r.id)
}

// markAll marks every listed row (the rows matching the filter).
func (t *table) markAll() int {
	for _, r := range t.rows {
		if _, on := t.marks[r.id]; !on {
			t.marks[r.id] = struct{}{}
			t.markOrder = append(t.markOrder, r.id)
		}
	}
	return len(t.rows)
}

func (t *table) clearMarks() {
	t.marks = map[string]struct{}{}
	t.markOrder = nil
}

// targets are the ids an action applies to: the marked ones, else the one under
// the cursor. Copied, so later marking cannot change them.
func (t *table) targets() []string {
	if len(t.markOrder) > 0 {
		return append([]string(nil), t.markOrder...)
	}
	if r, ok := t.current(); ok {
		return []string{r.id}
	}
	return nil
}

// widths shares the width left by fixed columns among the flexible ones.
func (t *table) widths() []int {
	ws := make([]int, len(t.columns))
	avail := t.width - 2 // cursor and mark gutter
	flex := 0
	for i, c := range t.columns {
		avail -= 1 // separator
		if c.width > 0 {
			ws[i] = c.width
			avail -= c.width
		} else {
			flex++
		}
	}
	// Share the room among the flexible columns; a capped column gives what it
	// cannot use to the uncapped ones.
	for flex > 0 {
		each := max(avail/flex, 4)
		capped := false
		for i, c := range t.columns {
			if c.width == 0 && ws[i] == 0 && c.maxWidth > 0 && c.maxWidth < each {
				ws[i] = c.maxWidth
				avail -= c.maxWidth
				flex--
				capped = true
			}
		}
		if capped {
			continue
		}
		extra := avail - each*flex
		for i, c := range t.columns {
			if c.width == 0 && ws[i] == 0 {
				ws[i] = each
				if extra > 0 {
					ws[i]++
					extra--
				}
			}
		}
		break
	}
	return ws
}

// View draws the header and the visible rows.
func (t *table) View(now time.Time, st styles) string {
	ws := t.widths()
	var b strings.Builder
	cells := make([]string, len(t.columns))
	for i, c := range t.columns {
		cells[i] = fit(c.title, ws[i], c.right)
	}
	b.WriteString(st.header.Render(ansi.Truncate("  "+strings.Join(cells, " "), t.width, "")))
	if len(t.rows) == 0 {
		if t.loaded {
			b.WriteString("\n" + st.dim.Render("  (none)"))
		} else {
			b.WriteString("\n" + st.dim.Render("  (loading…)"))
		}
		return b.String()
	}
	end := min(t.offset+t.bodyHeight(), len(t.rows))
	for i := t.offset; i < end; i++ {
		r := t.rows[i]
		for j, c := range t.columns {
			switch {
			case c.cut != nil:
				cells[j] = fit(c.cut(c.cell(r, now), ws[j]), ws[j], c.right)
			case c.keepEnd:
				cells[j] = fitEnd(c.cell(r, now), ws[j])
			default:
				cells[j] = fit(c.cell(r, now), ws[j], c.right)
			}
		}
		gutter := "  "
		_, marked := t.marks[r.id]
		switch {
		case i == t.cursor && marked:
			gutter = ">*"
		case i == t.cursor:
			gutter = "> "
		case marked:
			gutter = " *"
		}
		line := fit(gutter+strings.Join(cells, " "), t.width, false)
		switch {
		case i == t.cursor:
			line = st.cursor.Render(line)
		case marked:
			line = st.marked.Render(line)
		}
		b.WriteString("\n" + line)
	}
	return b.String()
}

// fitEnd is fit for values that differ at their end: cut at the start.
func fitEnd(s string, w int) string {
	if n := ansi.StringWidth(s); n > w && w > 1 {
		s = "…" + ansi.TruncateLeft(s, n-w+1, "")
	}
	return fit(s, w, false)
}

// fit pads or truncates s to exactly w cells.
func fit(s string, w int, right bool) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) > w {
		s = ansi.Truncate(s, w, "…")
	}
	pad := w - ansi.StringWidth(s)
	if right {
		return strings.Repeat(" ", pad) + s
	}
	return s + strings.Repeat(" ", pad)
}
