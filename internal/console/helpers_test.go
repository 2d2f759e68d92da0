package console

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/console/internal/seed"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestMain(m *testing.M) { testenv.Main(m) }

// testBundle is a console over a seeded database of the test's own, with the
// clock fixed at base.
type testBundle struct {
	t    *testing.T
	m    *Model
	pool *pgxpool.Pool
	in   *inspect.Inspector
	base time.Time
	// clock is what the console reads as now; tests move it.
	clock time.Time
}

func setup(t *testing.T, opts Options) *testBundle {
	t.Helper()
	pool, _ := testenv.Pool(t)
	// A whole second, a little in the past: the database's now() is after it, so
	// the seeded states hold, and every age the console prints is a whole number.
	base := time.Now().UTC().Truncate(time.Second)
	if err := seed.Seed(context.Background(), pool, "public", base); err != nil {
		t.Fatal(err)
	}
	var io []inspect.Option
	if opts.ReadOnly {
		io = append(io, inspect.ReadOnly())
	}
	in, err := inspect.New(pool, "public", io...)
	if err != nil {
		t.Fatal(err)
	}
	opts.Inspector = in
	b := &testBundle{t: t, pool: pool, in: in, base: base, clock: base}
	opts.Now = func() time.Time { return b.clock }
	if opts.Actor == "" {
		opts.Actor = "tester"
	}
	b.m = New(opts)
	b.size(80, 24)
	b.run(b.m.startLoad())
	return b
}

func (b *testBundle) size(w, h int) { b.m.Update(tea.WindowSizeMsg{Width: w, Height: h}) }

// run executes cmd and feeds its messages back into Update, as the program would,
// until no command is left. Ticks are dropped: the tests drive loads themselves.
func (b *testBundle) run(cmd tea.Cmd) {
	b.t.Helper()
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case nil, tickMsg:
		case tea.BatchMsg:
			queue = append(queue, msg...)
		case loadedMsg:
			normalize(&msg)
			_, next := b.m.Update(msg)
			queue = append(queue, next)
		default:
			if _, ok := msg.(tea.QuitMsg); ok {
				continue
			}
			_, next := b.m.Update(msg)
			queue = append(queue, next)
		}
	}
}

// normalize replaces what depends on PostgreSQL's background work (statistics,
// sizes, vacuum) with fixed numbers, so golden files hold still.
func normalize(msg *loadedMsg) {
	for i := range msg.overview.tables {
		tb := &msg.overview.tables[i]
		tb.LiveTuples, tb.DeadTuples, tb.TableBytes, tb.IndexBytes = 42, 0, 8192, 16384
		tb.LastVacuum, tb.LastAutovacuum, tb.LastAutoanalyze = nil, nil, nil
	}
	msg.overview.xmin = nil
}

// keys presses each key in turn (names as in key.Binding: "j", "enter", "space",
// "ctrl+a", "esc"), running the commands they return.
func (b *testBundle) keys(keys ...string) {
	b.t.Helper()
	for _, k := range keys {
		_, cmd := b.m.Update(keyMsg(k))
		b.run(cmd)
	}
}

// typeText types s into the filter line.
func (b *testBundle) typeText(s string) {
	for _, r := range s {
		b.m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "home":
		return tea.KeyPressMsg{Code: tea.KeyHome}
	case "end":
		return tea.KeyPressMsg{Code: tea.KeyEnd}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "delete":
		return tea.KeyPressMsg{Code: tea.KeyDelete}
	}
	if c, ok := strings.CutPrefix(k, "ctrl+"); ok {
		return tea.KeyPressMsg{Code: rune(c[0]), Mod: tea.ModCtrl}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// screen is the rendered content with the ASCII colour profile: no colours, bold
// and reverse kept.
func (b *testBundle) screen() string {
	var buf bytes.Buffer
	w := &colorprofile.Writer{Forward: &buf, Profile: colorprofile.ASCII}
	_, _ = w.WriteString(b.m.View().Content)
	return buf.String()
}

var goldenMu sync.Mutex

// timestamps are the absolute times the detail view shows next to the relative
// ones; the golden files keep the relative ones only.
var timestamps = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}Z`)

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	got = timestamps.ReplaceAllString(got, "YYYY-MM-DD hh:mm:ss.mmmZ")
	if *update {
		goldenMu.Lock()
		defer goldenMu.Unlock()
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/console -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (go test ./internal/console -update rewrites it)\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

func keyBinding(k, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(k), key.WithHelp(k, desc))
}
