package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// --topics is a comma-separated list of patterns, also from OUTBOXTOP_TOPICS; a
// bad pattern is a usage error naming the flag.
func TestTopicsFlagAndVariable(t *testing.T) {
	t.Parallel()
	resolve := func(env map[string]string, args ...string) (*relayFlags, error) {
		var errb bytes.Buffer
		io := IO{Out: &errb, Err: &errb, Getenv: func(k string) string { return env[k] }}
		fs := newFlagSet("relay", io)
		f := new(relayFlags)
		f.register(fs)
		if err := parse(fs, append([]string{"--brokers", "127.0.0.1:1"}, args...), io); err != nil {
			return nil, err
		}
		return f, f.resolve("public", io)
	}
	f, err := resolve(nil, "--topics", "orders.*, billing ,")
	if err != nil || !slices.Equal(f.cfg.Topics, []string{"orders.*", "billing"}) {
		t.Errorf("--topics: %q, %v", f.cfg.Topics, err)
	}
	f, err = resolve(map[string]string{"OUTBOXTOP_TOPICS": "audit.*"})
	if err != nil || !slices.Equal(f.cfg.Topics, []string{"audit.*"}) {
		t.Errorf("OUTBOXTOP_TOPICS: %q, %v", f.cfg.Topics, err)
	}
	f, err = resolve(nil)
	if err != nil || f.cfg.Topics != nil {
		t.Errorf("no --topics: %q, %v", f.cfg.Topics, err)
	}
	if _, err := resolve(nil, "--topics", "ok,bad topic"); err == nil || !strings.Contains(err.Error(), `--topics pattern "bad topic"`) {
		t.Errorf("a bad pattern: %v", err)
	}
}
