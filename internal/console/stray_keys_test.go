package console

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/console/internal/seed"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// No run of stray keys changes data: a console on a real, seeded outbox (failed,
// pending, leased, published and archived events; an embedded relay whose pause
// and resume are audited; a backend holding the xmin horizon that T could end)
// is driven by random key sequences, its commands run for real against the
// database, their results delivered in random order, late and twice. After each
// sequence outbox_event and outbox_event_archive are unchanged (an md5 of their
// rows), no outbox_audit row was written and the horizon's holder is alive.

// strayKeys are the keys a run of random keys presses: every letter, digit
// and a little punctuation, enter, esc, tab, arrows and the other named keys,
// and ctrl with every letter.
var strayKeys = func() []string {
	out := []string{"enter", "esc", "tab", "shift+tab", "space", "backspace", "delete", "up", "down", "left", "right",
		"home", "end", "pgup", "pgdown", "*", "/", "?", "+", "-", "=", ".", ",", ":", "\"", "'", "!", "<", ">", "_"}
	for c := 'a'; c <= 'z'; c++ {
		out = append(out, string(c), strings.ToUpper(string(c)), "ctrl+"+string(c))
	}
	for c := '0'; c <= '9'; c++ {
		out = append(out, string(c))
	}
	return out
}()

// dangerKeys are drawn as often as all the others together: the keys that
// reach a list with rows, mark them and open a prompt, and the keys that
// answer one (y, Y, enter, the letters of yes and new, digits).
var dangerKeys = []string{
	"2", "3", "4", "5", "v", "j", "space", "*", "enter", "A",
	"r", "l", "a", "x", "s", "R", "p", "T", "e",
	"y", "Y", "e", "s", "n", "w", "i", "enter", "enter", "1", "3", "esc",
}

// strayEnv is the seeded database every sequence runs against.
type strayEnv struct {
	pool  *pgxpool.Pool
	in    *inspect.Inspector
	snap  inspect.Snapshot
	base  time.Time
	state string
	// holder is the backend that holds the xmin horizon: T's target.
	holder *pgxpool.Conn
	cache  readCache
	// prompts counts the prompts the sequences reached, by action and step.
	prompts map[string]int
}

// fixedSnapshot is the Overview's snapshot, read once: every load re-reads the
// lists, not the whole Overview (the sequences are many and the data does not
// change unless the test fails).
type fixedSnapshot struct{ s inspect.Snapshot }

func (f fixedSnapshot) Snapshot(context.Context) (inspect.Snapshot, error) { return f.s, nil }

func newStrayEnv(t testing.TB) *strayEnv {
	t.Helper()
	ctx := context.Background()
	pool, _ := testenv.Pool(t)
	e := &strayEnv{pool: pool, base: time.Now().UTC().Truncate(time.Second),
		cache: readCache{msgs: map[string]tea.Msg{}, names: map[uintptr]string{}}, prompts: map[string]int{}}
	if err := seed.Seed(ctx, pool, "public", e.base); err != nil {
		t.Fatal(err)
	}
	in, err := inspect.New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	e.in = in
	// An archived event too: replay applies there.
	if _, err := in.Do(ctx, inspect.Request{Action: inspect.Archive, IDs: []string{seed.ID('e', 1)}, Actor: "setup"}); err != nil {
		t.Fatal(err)
	}
	if e.holder, err = pool.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.holder.Conn().Close(context.Background()); e.holder.Release() })
	var pid int32
	for _, q := range []string{`BEGIN ISOLATION LEVEL REPEATABLE READ`, `SELECT count(*) FROM outbox_event`} {
		if _, err := e.holder.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.holder.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if e.snap, err = in.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	// The horizon names this holder alone, held long enough to be offered.
	var holders []inspect.XminHolder
	for _, x := range e.snap.Health.Horizon.Holders {
		if x.PID == pid {
			x.Age = inspect.Age(2 * inspect.HorizonCritAfter)
			holders = append(holders, x)
		}
	}
	if len(holders) != 1 || !holders[0].Backend() {
		t.Fatalf("the horizon's holders do not name pid %d once: %+v", pid, e.snap.Health.Horizon.Holders)
	}
	e.snap.Health.Horizon.Holders = holders
	if _, err := pool.Exec(ctx, `DELETE FROM outbox_audit`); err != nil {
		t.Fatal(err)
	}
	e.state = e.read(t)
	return e
}

// read is the state no stray key may change: the rows of the outbox and its
// archive, the audit rows, and whether the horizon's holder is still there.
func (e *strayEnv) read(t testing.TB) string {
	t.Helper()
	var events, archive string
	var audits int
	err := e.pool.QueryRow(context.Background(), `SELECT
		(SELECT coalesce(md5(string_agg(e::text, '' ORDER BY seq)), '') FROM outbox_event e),
		(SELECT coalesce(md5(string_agg(a::text, '' ORDER BY a::text)), '') FROM outbox_event_archive a),
		(SELECT count(*) FROM outbox_audit)`).Scan(&events, &archive, &audits)
	if err != nil {
		t.Fatal(err)
	}
	alive := e.holder.Ping(context.Background()) == nil
	return fmt.Sprintf("outbox_event md5 %s · outbox_event_archive md5 %s · %d audit rows · horizon holder alive %v", events, archive, audits, alive)
}

// strayRun is one key sequence on a fresh console.
type strayRun struct {
	t     testing.TB
	env   *strayEnv
	m     *Model
	relay *fuzzRelay
	z     fuzzReader
	// queue are the commands returned and not run yet; held the messages of
	// those run and not delivered yet; sent the messages delivered.
	queue      []queued
	held, sent []tea.Msg
	trail      []string
}

// queued is a command and what the console showed when it was returned: the
// view, filter, sort, event, aggregate and audit filter a read reads.
type queued struct {
	cmd   tea.Cmd
	shown string
}

// shown is what a read command returned now would read.
func shown(m *Model) string {
	s := fmt.Sprintf("%d %q %q %q %q %q", m.view, m.filters[m.view].text, m.detail.id, m.aggregate.typ, m.aggregate.id, m.audit.text)
	if t := m.tables[m.view]; t != nil {
		s += fmt.Sprintf(" %v %v %d", t.sort, t.desc, t.want)
	}
	return s
}

// reads are the commands that only read: the same read on the same screen
// gives the same message while nothing changes (and a change fails the test),
// so a sequence reuses it rather than asking the database again. Every other
// command (the actions among them) runs.
var reads = []string{".startLoad.func1", ".openDetail.func1", ".openDetail.func2", ".loadAggregate.func1", ".loadAudit.func1"}

// readCache holds the messages of reads by command and screen, for every
// sequence of a test, and the names of commands by code.
type readCache struct {
	msgs  map[string]tea.Msg
	names map[uintptr]string
}

func (c *readCache) run(q queued) tea.Msg {
	pc := reflect.ValueOf(q.cmd).Pointer()
	name, ok := c.names[pc]
	if !ok {
		name = runtime.FuncForPC(pc).Name()
		c.names[pc] = name
	}
	if !slices.ContainsFunc(reads, func(r string) bool { return strings.HasSuffix(name, r) }) {
		return q.cmd()
	}
	k := name + "\x00" + q.shown
	if msg, ok := c.msgs[k]; ok {
		return msg
	}
	msg := q.cmd()
	if lm, ok := msg.(loadedMsg); ok {
		normalize(&lm)
		msg = lm
	}
	c.msgs[k] = msg
	return msg
}

// tickCode is the code of the commands tea.Tick returns: they only wait, and a
// sequence delivers its ticks itself.
var tickCode = reflect.ValueOf(tea.Tick(time.Hour, func(time.Time) tea.Msg { return nil })).Pointer()

// strayEditor stands in for $EDITOR: it rewrites the payload to another JSON
// value, so a correction reaches its reason and confirmation.
func strayEditor(path string, done func(error) tea.Msg) tea.Cmd {
	return func() tea.Msg {
		return done(os.WriteFile(path, []byte(`{"corrected":"by a stray key"}`), 0o600))
	}
}

func (e *strayEnv) newRun(t testing.TB, data []byte) *strayRun {
	r := &strayRun{t: t, env: e, z: fuzzReader{data}, relay: &fuzzRelay{}}
	r.relay.st.BrokerReachable = true
	r.m = New(Options{
		Inspector: e.in, Snapshots: fixedSnapshot{e.snap}, Actor: "stray", Limit: 2,
		Relay: AuditedRelay{Relay: r.relay, Inspector: e.in, Actor: "stray"},
		Now:   func() time.Time { return e.base },
	})
	r.m.edit = strayEditor
	r.deliver(tea.WindowSizeMsg{Width: 80, Height: 24}, "size 80x24")
	r.queue = append(r.queue, queued{r.m.startLoad(), shown(r.m)})
	r.runQueued(0, false)
	return r
}

// straySteps bounds a sequence.
const straySteps = 200

// run plays the sequence, then runs every command left and delivers every
// message held, as the program would before it exits.
func (r *strayRun) run() {
	for i := 0; i < straySteps && !r.z.empty(); i++ {
		r.step()
	}
	for i := 0; len(r.queue) > 0 || len(r.held) > 0; i++ {
		if i == 100_000 {
			r.t.Fatalf("the commands never settle\nsequence: %s", strings.Join(r.trail, " · "))
		}
		if len(r.queue) > 0 {
			r.runQueued(0, false)
			continue
		}
		msg := r.held[0]
		r.held = r.held[1:]
		r.deliver(msg, fmt.Sprintf("late %T", msg))
	}
}

func (r *strayRun) step() {
	z := &r.z
	switch op := z.byte(); {
	case op < 170:
		k := z.byte()
		name := strayKeys[int(k)%len(strayKeys)]
		if k < 128 {
			name = dangerKeys[int(k)%len(dangerKeys)]
		}
		r.deliver(keyMsg(name), "key "+name)
	case op < 220:
		// A command finishes: the oldest one or another, its message
		// delivered now or held back.
		i, hold := int(z.byte()), z.n(4) == 3
		if len(r.queue) > 0 {
			r.runQueued(i%len(r.queue), hold)
		}
	case op < 235:
		if len(r.held) > 0 {
			i := z.n(len(r.held))
			msg := r.held[i]
			r.held = append(r.held[:i], r.held[i+1:]...)
			r.deliver(msg, fmt.Sprintf("late %T", msg))
		}
	case op < 250:
		if len(r.sent) > 0 {
			msg := r.sent[z.n(len(r.sent))]
			r.deliver(msg, fmt.Sprintf("again %T", msg))
		}
	default:
		r.deliver(tickMsg{gen: r.m.tickGen}, "tick")
	}
}

// runQueued runs the i-th queued command (a batch queues its parts), and
// delivers its message or holds it back.
func (r *strayRun) runQueued(i int, hold bool) {
	q := r.queue[i]
	r.queue = append(r.queue[:i], r.queue[i+1:]...)
	if q.cmd == nil || reflect.ValueOf(q.cmd).Pointer() == tickCode {
		return
	}
	switch msg := r.env.cache.run(q).(type) {
	case nil, tea.QuitMsg:
	case tea.BatchMsg:
		for _, c := range msg {
			r.queue = append(r.queue, queued{c, q.shown})
		}
	default:
		if hold {
			r.held = append(r.held, msg)
			return
		}
		r.deliver(msg, fmt.Sprintf("%T", msg))
	}
}

func (r *strayRun) deliver(msg tea.Msg, what string) {
	r.trail = append(r.trail, what)
	_, cmd := r.m.Update(msg)
	if cmd != nil {
		r.queue = append(r.queue, queued{cmd, shown(r.m)})
	}
	if p := r.m.confirm; p != nil && r.m.mode == modeConfirm {
		r.env.prompts[promptKind(p)+" "+[]string{"reason", "count", "yes"}[p.stage()]]++
	}
	switch msg.(type) {
	case tea.KeyPressMsg, tea.WindowSizeMsg, tickMsg:
	default:
		r.sent = append(r.sent, msg)
	}
}

// promptKind names what a prompt would do.
func promptKind(p *pendingAction) string {
	switch {
	case p.pause != "":
		return p.pause
	case p.terminate != nil:
		return "terminate"
	case p.bulk:
		return "bulk " + string(p.action)
	}
	return string(p.action)
}

// check fails the test when the sequence changed anything.
func (r *strayRun) check() {
	r.t.Helper()
	if got := r.env.read(r.t); got != r.env.state {
		r.t.Fatalf("a run of stray keys changed data:\nbefore: %s\nafter:  %s\nsequence: %s\nstatus: %s",
			r.env.state, got, strings.Join(r.trail, " · "), r.m.status)
	}
}

// FuzzStrayKeys: no key sequence changes data (see above). The input is a
// program of operations: a key, a command finishing (its message delivered or
// held back), a held message delivered late, a message delivered again, a
// tick.
func FuzzStrayKeys(f *testing.F) {
	for _, s := range straySeeds() {
		f.Add(s)
	}
	e := newStrayEnv(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := e.newRun(t, data)
		r.run()
		r.check()
	})
}

// TestStrayKeys runs a few thousand random sequences from a fixed seed (and the
// fuzz seeds) on every go test.
func TestStrayKeys(t *testing.T) {
	t.Parallel()
	e := newStrayEnv(t)
	for _, s := range straySeeds() {
		r := e.newRun(t, s)
		r.run()
		r.check()
	}
	n := 2000
	switch {
	case testing.Short():
		n = 200
	case raceOn:
		n = 400
	}
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	for range n {
		data := make([]byte, 2*(10+rng.IntN(50)))
		for j := 0; j < len(data); j += 8 {
			var w [8]byte
			binary.LittleEndian.PutUint64(w[:], rng.Uint64())
			copy(data[j:], w[:])
		}
		r := e.newRun(t, data)
		r.run()
		r.check()
	}
	t.Logf("%d sequences in %s; prompts reached: %v", n, time.Since(start).Round(time.Millisecond), e.prompts)
	// The sequences reach the last step of every action's prompt, where the
	// whole answer and enter would run it.
	for _, kind := range []string{"retry", "reset-lease", "archive", "park", "skip", "replay", "correct", "pause", "terminate", "bulk retry"} {
		if e.prompts[kind+" yes"] == 0 {
			t.Errorf("no sequence reached the yes of %s: %v", kind, e.prompts)
		}
	}
}

// strayProgram writes a sequence: keys by name, and command results.
type strayProgram []byte

func (p strayProgram) keys(names ...string) strayProgram {
	for _, k := range names {
		i := indexOf(dangerKeys, k)
		if i < 0 {
			// A byte of 128 or more picks strayKeys[byte % len(strayKeys)].
			i = indexOf(strayKeys, k)
			for i < 128 {
				i += len(strayKeys)
			}
		}
		if i < 0 || i > 255 {
			panic("no key " + k)
		}
		p = append(p, 0, byte(i))
	}
	return p
}

// done lets the oldest command finish and delivers its message.
func (p strayProgram) done(n int) strayProgram {
	for range n {
		p = append(p, 170, 0, 0)
	}
	return p
}

func indexOf(s []string, k string) int {
	for i, x := range s {
		if x == k {
			return i
		}
	}
	return -1
}

// straySeeds are the sequences that came closest: each opens a prompt and then
// presses what a careless hand would.
func straySeeds() [][]byte {
	return [][]byte{
		strayProgram(nil).keys("4").done(3).keys("r", "y", "enter", "Y"),
		strayProgram(nil).keys("2").done(3).keys("x", "j", "u", "n", "k", "enter", "y", "enter"),
		strayProgram(nil).keys("4").done(3).keys("s", "y", "enter", "y", "y", "enter"),
		strayProgram(nil).keys("4").done(3).keys("*", "*", "r", "3", "enter", "y", "enter"),
		strayProgram(nil).keys("5").done(3).keys("R", "i", "n", "e", "w", "enter"),
		strayProgram(nil).keys("5", "v").done(3).keys("R", "y", "e", "s", "x", "enter"),
		strayProgram(nil).keys("5").done(3).keys("a", "y", "e", "s", "s", "enter", "a", "Y", "e", "s", "enter"),
		strayProgram(nil).keys("p", "y", "e", "enter", "T", "y", "enter", "Y", "E", "S", "enter"),
		strayProgram(nil).keys("4").done(3).keys("e").done(4).keys("f", "i", "x", "enter", "y", "enter", "n", "o"),
		strayProgram(nil).keys("3").done(3).keys("enter").done(3).keys("l", "ctrl+y", "enter", "A").done(2).keys("s", "1", "enter", "y"),
	}
}
