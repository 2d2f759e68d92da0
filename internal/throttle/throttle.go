// Package throttle spaces out a read of the database that a scrape asks for:
// the /metrics collectors would otherwise read on every scrape, however slow
// the read and however many scrapers there are.
package throttle

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Read is a read done at most every Min, and at least 20 times as long apart
// as it last took, so a slow table costs at most about a twentieth of a database
// backend. Between reads Get returns the last result, error included. With
// Denied set, a read refused for lack of privilege (SQLSTATE 42501, or an error
// that matches ErrDenied) is tried again only after Denied, so the server's log
// does not fill with the same permission error. The zero value reads every time.
type Read[T any] struct {
	Min, Timeout, Denied time.Duration

	mu     sync.Mutex
	readAt time.Time
	wait   time.Duration
	last   T
	err    error
}

// ErrDenied marks a read that the caller counts as refused, like 42501.
var ErrDenied = errors.New("read refused")

// Get returns the last result while it is fresh enough, else reads again.
func (r *Read[T]) Get(read func(context.Context) (T, error)) (T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.readAt.IsZero() && time.Since(r.readAt) < r.wait {
		return r.last, r.err
	}
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if r.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
	}
	defer cancel()
	start := time.Now()
	r.last, r.err = read(ctx)
	r.readAt = time.Now()
	r.wait = max(r.Min, 20*r.readAt.Sub(start))
	if r.Denied > 0 && denied(r.err) {
		r.wait = r.Denied
	}
	return r.last, r.err
}

func denied(err error) bool {
	var pgErr *pgconn.PgError
	return errors.Is(err, ErrDenied) || errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// Wait is how long after the last read the next one is due.
func (r *Read[T]) Wait() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wait
}

// Expire makes the next Get read again, as if the wait had passed.
func (r *Read[T]) Expire() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.readAt = time.Time{}
}
