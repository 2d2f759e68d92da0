package testenv

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// MainLeakChecked is Main followed by a goroutine leak check
// (go.uber.org/goleak): once every test has ended and the shared database
// server is gone, no goroutine a test started may still run. Extra options
// ignore goroutines a package knowingly leaves behind.
func MainLeakChecked(m *testing.M, opts ...goleak.Option) {
	code := m.Run()
	shutdown()
	if code == 0 {
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines leaked by the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
