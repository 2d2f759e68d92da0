package sshserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

type levelExit struct {
	code int
	msg  string
}

func (e levelExit) Error() string   { return e.msg }
func (e levelExit) ExitStatus() int { return e.code }

// A status session ends with the exit status its Status says (a monitoring
// check run over SSH reads its level from it): an ExitStatus error's own code,
// 1 for any other error, 0 without one; the text is written either way.
func TestStatusSessionCarriesTheExitStatus(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var result error
	b := setup(t, func(c *Config) {
		c.Status = func(_ context.Context, w io.Writer) error {
			fmt.Fprintln(w, "OUTBOXTOP LEVEL - text | perf=1")
			mu.Lock()
			defer mu.Unlock()
			return result
		}
	})
	client, err := b.dial(b.viewer)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for _, c := range []struct {
		err  error
		code int
	}{
		{nil, 0},
		{levelExit{1, "WARNING: failed 1 > 0"}, 1},
		{levelExit{2, "CRITICAL: oldest publishable 10m0s > 5m0s"}, 2},
		{levelExit{3, "UNKNOWN: the database did not answer"}, 3},
		{errors.New("something else"), 1},
	} {
		mu.Lock()
		result = c.err
		mu.Unlock()
		sess, err := client.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		var stdout, stderr strings.Builder
		sess.Stdout, sess.Stderr = &stdout, &stderr
		err = sess.Run("status")
		code := 0
		var exit *gossh.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitStatus()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || stdout.String() != "OUTBOXTOP LEVEL - text | perf=1\n" {
			t.Errorf("%v: exit status %d, want %d; stdout %q", c.err, code, c.code, stdout.String())
		}
		if c.err != nil && !strings.Contains(stderr.String(), c.err.Error()) {
			t.Errorf("%v: stderr %q", c.err, stderr.String())
		}
	}
}
