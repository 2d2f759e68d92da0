package throttle

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestReadSpacesReads(t *testing.T) {
	t.Parallel()
	r := Read[int]{Min: time.Hour, Timeout: time.Second}
	n := 0
	read := func(ctx context.Context) (int, error) {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("no deadline on the read's context")
		}
		n++
		return n, nil
	}
	for range 3 {
		if got, _ := r.Get(read); got != 1 {
			t.Fatalf("got %d within Min, want the first read's 1", got)
		}
	}
	if r.Wait() != time.Hour {
		t.Errorf("wait %v, want Min", r.Wait())
	}
	r.Expire()
	if got, _ := r.Get(read); got != 2 {
		t.Fatalf("got %d after Expire, want a new read", got)
	}
}

func TestReadWaitsTwentyTimesItsDuration(t *testing.T) {
	t.Parallel()
	r := Read[int]{Min: time.Millisecond}
	_, _ = r.Get(func(context.Context) (int, error) { time.Sleep(20 * time.Millisecond); return 0, nil })
	if w := r.Wait(); w < 400*time.Millisecond {
		t.Errorf("wait %v after a 20 ms read, want at least 20 times it", w)
	}
}

func TestReadBacksOffWhenDenied(t *testing.T) {
	t.Parallel()
	for _, err := range []error{&pgconn.PgError{Code: "42501"}, fmt.Errorf("%w: no grant on outbox_relay", ErrDenied)} {
		r := Read[int]{Min: time.Millisecond, Denied: time.Hour}
		if _, got := r.Get(func(context.Context) (int, error) { return 0, err }); got != err {
			t.Fatalf("error %v, want %v", got, err)
		}
		if r.Wait() != time.Hour {
			t.Errorf("%v: wait %v, want Denied", err, r.Wait())
		}
	}
	r := Read[int]{Min: time.Millisecond, Denied: time.Hour}
	_, _ = r.Get(func(context.Context) (int, error) { return 0, &pgconn.PgError{Code: "57P01"} })
	if r.Wait() >= time.Hour {
		t.Errorf("an error other than a refusal waited %v", r.Wait())
	}
}
