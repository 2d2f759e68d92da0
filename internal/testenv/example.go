package testenv

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ExamplePool gives a runnable Example, which has no testing.TB, a migrated
// database of its own; call done when the example ends. A failure panics.
func ExamplePool() (pool *pgxpool.Pool, done func()) {
	t := &exampleT{}
	pool, _ = Pool(t)
	return pool, t.done
}

// exampleT is the part of testing.TB that Pool uses.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func (*exampleT) Helper()                   {}
func (*exampleT) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (*exampleT) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (e *exampleT) Cleanup(f func())        { e.cleanups = append(e.cleanups, f) }
func (e *exampleT) done() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
}
