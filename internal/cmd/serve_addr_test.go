package cmd

import (
	"net"
	"testing"

	"github.com/spf13/pflag"
)

// serve listens on loopback unless told otherwise: exposing the console to other
// hosts is a decision the command line must show.
func TestServeListensOnLoopbackByDefault(t *testing.T) {
	t.Parallel()
	var f serveFlags
	f.register(pflag.NewFlagSet("serve", pflag.ContinueOnError))
	host, _, err := net.SplitHostPort(f.addr)
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("--ssh-addr defaults to %q, want a loopback address", f.addr)
	}
	if f.maxPerKey <= 0 {
		t.Errorf("--max-sessions-per-key defaults to %d, want a bound", f.maxPerKey)
	}
}
