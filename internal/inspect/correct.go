package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxtop/outboxtop/wire"
)

// Correction replaces a failed event's payload: the schema's outboxtop_correct
// inserts a copy with the new payload in the original's place in its
// aggregate's order (the same seq, a fresh id, correction_of = the original)
// and moves the original to the archive, failed, saying who corrected it. Its
// audit row names both ids and holds the payload's diff, computed by the
// database. The caller needs EXECUTE on outboxtop_correct, which `outboxtop
// grants --role operator` prints and an upgrade does not give by itself.
type Correction struct {
	ID      string
	Payload json.RawMessage
	Reason  string
	Actor   string
}

// Change is one path of a payload that a correction changes: Old is absent
// where the path is added, New where it is removed.
type Change struct {
	Path []string        `json:"path"`
	Old  json.RawMessage `json:"old,omitempty"`
	New  json.RawMessage `json:"new,omitempty"`
}

// CorrectedPrefix begins the last_error outboxtop_correct gives the original
// it archives ("corrected by <actor> as <copy id>: <reason>…"): only that
// function writes it, so an archived, unpublished event whose error begins
// so was corrected, not skipped.
const CorrectedPrefix = "corrected by "

// UnpublishedLabel names an archived event that was never published, for a
// listing: "corrected" (a correction replaced it) or "skipped".
func UnpublishedLabel(lastError string) string {
	if strings.HasPrefix(lastError, CorrectedPrefix) {
		return "corrected"
	}
	return "skipped"
}

// MaxCorrectionBytes bounds a corrected payload.
const MaxCorrectionBytes = 8 << 20

// ErrNotCorrectable: the event is not failed (a correction replaces a failed
// or parked event only), or is gone.
var ErrNotCorrectable = errors.New("only a failed or parked event can be corrected")

func (c Correction) validate() error {
	if f := (Filter{IDPrefix: c.ID}); f.Validate() != nil || len(c.ID) != 36 {
		return invalidf("%q is not an event id", c.ID)
	}
	if len(c.Payload) > MaxCorrectionBytes {
		return invalidf("the corrected payload is %d bytes, over the %d a correction takes", len(c.Payload), MaxCorrectionBytes)
	}
	if !json.Valid(c.Payload) {
		return invalidf("the corrected payload is not valid JSON")
	}
	if strings.TrimSpace(c.Reason) == "" {
		return fmt.Errorf("correct: %w", ErrReasonRequired)
	}
	return checkActor(c.Actor)
}

// PreviewCorrection is what c would change, path by path, without changing
// anything; it works in read-only mode. An event that is not failed is
// ErrNotCorrectable.
func (i *Inspector) PreviewCorrection(ctx context.Context, c Correction) ([]Change, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	var state string
	var diff []Change
	err := i.pool.QueryRow(ctx, i.q.SQL("correction_diff"), c.ID, string(c.Payload)).Scan(&state, &diff)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("%w: event %s is not in the outbox", ErrNotCorrectable, c.ID)
	case err != nil:
		return nil, correctionError(err)
	case wire.State(state) != wire.Failed:
		return nil, fmt.Errorf("%w: event %s is %s", ErrNotCorrectable, c.ID, state)
	case len(diff) == 0:
		return nil, invalidf("the payload is unchanged (retry the event to send it again as it is)")
	}
	return diff, nil
}

// Correct carries c out (see Correction). Result.EventIDs holds the copy's id.
func (i *Inspector) Correct(ctx context.Context, c Correction) (Result, error) {
	if i.readOnly {
		return Result{}, ErrReadOnly
	}
	if err := c.validate(); err != nil {
		return Result{}, err
	}
	if c.Actor == "" {
		c.Actor = DefaultActor(nil)
	}
	filter, err := json.Marshal(map[string]string{"id": c.ID})
	if err != nil {
		return Result{}, err
	}
	res := Result{Action: "correct", Actor: c.Actor, EventIDs: []string{}}
	if err := i.call(ctx, i.pool, "outboxtop_correct", []any{c.Actor, c.Reason, c.ID, string(c.Payload), filter}, &res); err != nil {
		return Result{}, correctionError(err)
	}
	return res, nil
}

// correctionError turns the function's refusals into the package's errors,
// keeping PostgreSQL's text.
func correctionError(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return fmt.Errorf("correct: %w", err)
	}
	switch pgErr.Code {
	case "55000":
		return fmt.Errorf("%w (%s)", ErrNotCorrectable, pgErr.Message)
	case "22P05":
		return invalidf("the corrected payload cannot be stored: %s (PostgreSQL's jsonb holds no \\u0000)", pgErr.Message)
	case "22023", "22P02":
		return invalidf("%s", pgErr.Message)
	case "42501", "42883":
		return fmt.Errorf("correct refused: this role may not correct events (apply `outboxtop grants --role operator`, which grants EXECUTE on outboxtop_correct): %w", err)
	}
	return fmt.Errorf("correct: %w", lockedRows(err))
}
