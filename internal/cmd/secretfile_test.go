package cmd

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe given as the SASL password file is refused at once: opening it
// would block until a writer came, and a blocked open ignores SIGTERM's handler.
func TestSASLPasswordFileThatIsAPipeIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "password")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() {
		done <- run(t, nil, "--headless", "--dsn", "postgres://u@127.0.0.1:1/db", "--brokers", "127.0.0.1:1",
			"--kafka-sasl-mechanism", "scram-sha-512", "--kafka-sasl-user", "relay", "--kafka-sasl-password-file", fifo)
	}()
	select {
	case r := <-done:
		if want := "--kafka-sasl-password-file " + fifo + ": not a regular file (a named pipe)"; r.code != ExitUsage || !strings.Contains(r.err, want) {
			t.Errorf("exit %d, stderr %q; want a usage error with %q", r.code, r.err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still opening the pipe after 5s")
	}
}
