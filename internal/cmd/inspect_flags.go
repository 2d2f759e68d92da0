package cmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"github.com/charmbracelet/x/term"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/pflag"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// filterFlags are the event filters shared by events and the actions.
type filterFlags struct{ f inspect.Filter }

func (ff *filterFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&ff.f.EventType, "event-type", "", "only events of this event_type")
	fs.StringVar(&ff.f.AggregateType, "aggregate-type", "", "only events of this aggregate_type")
	fs.StringVar(&ff.f.AggregateID, "aggregate-id", "", "only events of this aggregate_id")
	fs.StringVar(&ff.f.IDPrefix, "id-prefix", "", "only events whose event_id starts with this")
	fs.StringVar(&ff.f.ErrorContains, "error-contains", "", "only events whose last_error holds this (any case)")
	fs.DurationVar(&ff.f.OlderThan, "older-than", 0, "older than this (published: since published_at)")
	fs.DurationVar(&ff.f.NewerThan, "newer-than", 0, "only events newer than this")
	fs.StringArrayVar(&ff.f.Payload, "payload", nil, "payload TERM, repeatable: PATH, PATH=VALUE, {JSON}")
	fs.StringArrayVar(&ff.f.Headers, "header", nil, "header TERM, repeatable: KEY or KEY=VALUE")
}

func (ff *filterFlags) filter() (inspect.Filter, error) {
	if err := ff.f.Validate(); err != nil {
		return inspect.Filter{}, usagef("%v", err)
	}
	return ff.f, nil
}

// noteSearch says on stderr, in one line, that a search inside payloads or
// headers stopped before the end of the state's events (no index served it).
func noteSearch(io IO, st wire.State, page inspect.Page) {
	if page.Scan == nil || !page.Scan.Stopped {
		return
	}
	fmt.Fprintf(io.Err, "outboxtop: searched %d %s events without an index on payload or headers and stopped there: narrow the search, go on with --after %s, or add the index (docs/triage.md)\n",
		page.Scan.Scanned, st, page.Next)
}

// inspector connects and returns an Inspector on the command's schema.
func (d *dbFlags) inspector(ctx context.Context, io IO, opts ...inspect.Option) (*inspect.Inspector, *pgxpool.Pool, error) {
	pool, err := d.pool(ctx, io, 2)
	if err != nil {
		return nil, nil, err
	}
	in, err := inspect.New(pool, d.schema, opts...)
	if err != nil {
		pool.Close()
		return nil, nil, usagef("--schema: %v", err)
	}
	return in, pool, nil
}

// actingInspector is inspector for a command that acts: read-only (every
// action refused by the Inspector itself) when readOnly is set.
func (d *dbFlags) actingInspector(ctx context.Context, io IO, readOnly bool) (*inspect.Inspector, *pgxpool.Pool, error) {
	var opts []inspect.Option
	if readOnly {
		opts = append(opts, inspect.ReadOnly())
	}
	return d.inspector(ctx, io, opts...)
}

// isTerminal reports whether r is a terminal a person can answer on.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// confirm asks question on out and reads one answer line from in; only y or yes
// (any case) is a yes, so Enter, EOF and anything else mean no.
func confirm(in io.Reader, out io.Writer, question string) bool {
	fmt.Fprintf(out, "%s [y/N] ", question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// clean makes untrusted text (event types, ids, errors) safe for a terminal: control
// characters, escape sequences included, are shown as \xNN and nothing is on two lines.
func clean(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == unicode.ReplacementChar {
			fmt.Fprintf(&b, `\x%02x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// short keeps s to n runes, marking a cut with "…".
func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
