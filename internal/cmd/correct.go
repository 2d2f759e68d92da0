package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/termtext"
)

// runCorrect replaces a failed event's payload with a corrected copy (see
// inspect.Correction): it shows the diff, asks, and then the database does the
// rest under the operator's grants.
func runCorrect(ctx context.Context, args []string, io IO) error {
	fs := newFlagSet("correct", io)
	var db dbFlags
	db.register(fs)
	id := fs.String("id", "", "the failed (or parked) event to correct: its id, or its start or end as trace takes it")
	file := fs.String("payload-file", "", "the corrected payload, a JSON file (- reads stdin; then pass --yes)")
	reason := fs.String("reason", "", "why, recorded in the audit row and the original's last_error (required)")
	dryRun := fs.Bool("dry-run", false, "only show what the correction would change")
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	readOnly := fs.Bool("read-only", false, "refuse to change anything (OUTBOXTOP_READ_ONLY=true for on-call accounts)")
	actor := fs.String("actor", "", "who acts, for the audit row (default: OS user, plus the SSH client from SSH_CONNECTION)")
	if err := parse(fs, args, io); err != nil {
		return err
	}
	switch {
	case *id == "":
		return usagef("correct: name the event with --id")
	case *file == "":
		return usagef("correct: give the corrected payload with --payload-file (a JSON file, or - for stdin)")
	case strings.TrimSpace(*reason) == "":
		return usagef("correct needs --reason")
	case *file == "-" && !*yes && !*dryRun:
		return usagef("correct: with the payload on stdin there is no one to ask: pass --yes")
	case *readOnly && !*dryRun:
		return exitError{code: ExitUsage, msg: "refusing to correct: read-only mode (--read-only or OUTBOXTOP_READ_ONLY); --dry-run still shows the diff"}
	}
	payload, err := readPayload(*file, io)
	if err != nil {
		return err
	}
	c := inspect.Correction{ID: strings.ToLower(strings.TrimSpace(*id)), Payload: payload, Reason: *reason, Actor: *actor}
	if c.Actor == "" {
		c.Actor = inspect.DefaultActor(io.Getenv)
	}
	in, pool, err := db.actingInspector(ctx, io, *readOnly)
	if err != nil {
		return err
	}
	defer pool.Close()
	ids := []string{c.ID}
	if err := resolveIDs(ctx, in, "--id", ids); err != nil {
		return err
	}
	c.ID = ids[0]
	diff, err := in.PreviewCorrection(ctx, c)
	if err != nil {
		return correctError(err)
	}
	fmt.Fprintf(io.Out, "correct %s: %d %s\n", c.ID, len(diff), plural(len(diff), "change", "changes"))
	for _, ch := range diff {
		fmt.Fprintln(io.Out, "  "+short(termtext.OneLine(termtext.Sanitize(ch.String())), 200))
	}
	if *dryRun {
		return nil
	}
	if !*yes {
		if !isTerminal(io.In) {
			return exitError{code: ExitUsage, msg: "refusing to correct without confirmation: stdin is not a terminal; pass --yes"}
		}
		if !confirm(io.In, io.Out, fmt.Sprintf("send the corrected copy of %s as %s?", c.ID, c.Actor)) {
			return exitError{code: ExitFailure, msg: "correct cancelled"}
		}
	}
	res, err := in.Correct(ctx, c)
	if err != nil {
		return correctError(err)
	}
	fmt.Fprintf(io.Out, "corrected %s as %s, in its place in the aggregate's order (audit #%d, actor %s); the original is archived, failed\n",
		c.ID, strings.Join(res.EventIDs, ", "), res.AuditID, clean(res.Actor))
	return nil
}

// readPayload reads and checks the corrected payload: JSON, within
// inspect.MaxCorrectionBytes.
func readPayload(file string, stdio IO) (json.RawMessage, error) {
	var r io.Reader = stdio.In
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, usagef("--payload-file: %v", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, inspect.MaxCorrectionBytes+1))
	if err != nil {
		return nil, usagef("--payload-file: %v", err)
	}
	if len(b) > inspect.MaxCorrectionBytes {
		return nil, usagef("--payload-file: over %d bytes", inspect.MaxCorrectionBytes)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, usagef("--payload-file: not valid JSON at byte %d: %v", se.Offset, err)
		}
		return nil, usagef("--payload-file: not valid JSON: %v", err)
	}
	return json.RawMessage(b), nil
}

// correctError is actionError for a correction, with its own refusal.
func correctError(err error) error {
	if errors.Is(err, inspect.ErrNotCorrectable) {
		return exitError{code: ExitUsage, msg: "correct: " + termtext.OneLine(termtext.Sanitize(err.Error()))}
	}
	return actionError("correct", err)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
