package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// AuditFilter selects outbox_audit rows. Zero fields match everything.
type AuditFilter struct {
	// Actor matches actors containing this text, case-insensitively ("alice"
	// matches "alice via ssh from 203.0.113.7").
	Actor string `json:"actor,omitempty"`
	// Action matches exactly: retry, reset-lease, park, skip, archive, replay,
	// pause, resume.
	Action string `json:"action,omitempty"`
	// NewerThan and OlderThan bound the row's age (now() − at).
	NewerThan time.Duration `json:"newer_than,omitempty"`
	OlderThan time.Duration `json:"older_than,omitempty"`
	// EventID matches rows whose event ids hold this one.
	EventID string `json:"event_id,omitempty"`
	// Before continues a listing: rows with audit_id below it.
	Before int64 `json:"before,omitempty"`
	// Limit bounds the rows returned (AuditLimit when 0 or more).
	Limit int `json:"limit,omitempty"`
}

// AuditLimit bounds one AuditLog page.
const AuditLimit = 1000

// AuditRecord is one outbox_audit row as the audit log shows it. What the
// database computed — the rows and the ids the action changed, a correction's
// Diff — is kept apart from CallerFilter, which only says what the caller
// asked for: a caller of the action functions may pass any JSON there, shaped
// like a diff or not, and it is stored as given.
type AuditRecord struct {
	AuditEntry
	// CallerFilter is the filter the action function was called with, as given
	// (the row's filter column): the caller's word, not checked by the database.
	CallerFilter json.RawMessage `json:"caller_filter"`
	// EventIDs are the ids the action touched (the audit row keeps at most 1,000).
	EventIDs []string `json:"event_ids"`
}

// Validate rejects what cannot be a filter.
func (f AuditFilter) Validate() error {
	if f.NewerThan < 0 || f.OlderThan < 0 {
		return fmt.Errorf("audit filter: ages must not be negative")
	}
	if f.EventID != "" {
		if err := (Filter{IDPrefix: f.EventID}).Validate(); err != nil || len(f.EventID) != 36 {
			return fmt.Errorf("audit filter: %q is not an event id", f.EventID)
		}
	}
	for _, r := range f.Action {
		if !(r >= 'a' && r <= 'z' || r == '-') {
			return fmt.Errorf("audit filter: action %q: lower-case letters and dashes only", f.Action)
		}
	}
	return nil
}

// AuditLog lists outbox_audit rows matching f, newest first. It reads along the
// primary key, so a page costs its rows however long the trail; with an EventID,
// along the event ids' index (009), so it costs the rows naming that event.
func (i *Inspector) AuditLog(ctx context.Context, f AuditFilter) ([]AuditRecord, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit <= 0 || limit > AuditLimit {
		limit = AuditLimit
	}
	q, args := i.auditLogSQL(f, limit)
	rows, err := i.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	recs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditRecord, error) {
		var a AuditRecord
		err := r.Scan(&a.ID, &a.At, &a.Actor, &a.Action, &a.Rows, &a.Reason, &a.DBUser, &a.Diff, &a.CallerFilter, &a.EventIDs)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	return recs, nil
}

// auditLogSQL is AuditLog's statement and its arguments. The event filter is
// event_ids @> ARRAY[id], the shape outbox_audit_event_ids_idx (GIN) serves;
// id = ANY (event_ids) would read every row.
func (i *Inspector) auditLogSQL(f AuditFilter, limit int) (string, []any) {
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	if f.Actor != "" {
		where = append(where, "strpos(lower(actor), lower("+arg(f.Actor)+")) > 0")
	}
	if f.Action != "" {
		where = append(where, "action = "+arg(f.Action))
	}
	if f.NewerThan > 0 {
		where = append(where, "at > now() - "+arg(f.NewerThan.String())+"::interval")
	}
	if f.OlderThan > 0 {
		where = append(where, "at <= now() - "+arg(f.OlderThan.String())+"::interval")
	}
	if f.EventID != "" {
		where = append(where, "event_ids @> ARRAY["+arg(strings.ToLower(f.EventID))+"::uuid]")
	}
	if f.Before > 0 {
		where = append(where, "audit_id < "+arg(f.Before))
	}
	return i.q.SQL("audit_log", map[string]any{"where": strings.Join(where, " AND "), "limit": limit}), args
}
