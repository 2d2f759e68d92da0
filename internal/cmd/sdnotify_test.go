package cmd

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// Under a Type=notify unit the headless relay tells systemd it is ready.
func TestHeadlessNotifiesSystemdWhenReady(t *testing.T) {
	t.Parallel()
	dsn := testenv.DB(t)
	k := testenv.NewKafka(t)
	sock := filepath.Join(t.TempDir(), "notify")
	l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	env := map[string]string{"NOTIFY_SOCKET": sock}
	r := run(t, env, "--headless", "--drain", "--dsn", dsn, "--brokers", strings.Join(k.Brokers, ","), "--log-level", "warn")
	if r.code != ExitOK {
		t.Fatalf("headless --drain: exit %d: %s", r.code, r.err)
	}
	if err := l.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	n, err := l.Read(buf)
	if err != nil || string(buf[:n]) != "READY=1" {
		t.Fatalf("notification %q, %v; want READY=1", buf[:n], err)
	}
	// Without NOTIFY_SOCKET nothing is sent and nothing fails.
	if err := sdNotify(IO{Getenv: func(string) string { return "" }}, "READY=1"); err != nil {
		t.Fatal(err)
	}
}
