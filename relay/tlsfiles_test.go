//go:build unix

package relay

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The TLS files are read through securefile: a named pipe as the CA bundle is
// refused at once (not waited on), and a client key others may read is refused.
func TestTLSFilesAreCheckedBeforeTheyAreRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "ca.pem")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "client.key")
	if err := os.WriteFile(key, []byte("-----BEGIN PRIVATE KEY-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	cert := filepath.Join(dir, "client.pem")
	if err := os.WriteFile(cert, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg  KafkaConfig
		want string
	}{
		{KafkaConfig{TLS: true, TLSCAFile: fifo}, "TLSCAFile " + fifo + ": not a regular file (a named pipe)"},
		{KafkaConfig{TLS: true, TLSCertFile: cert, TLSKeyFile: key}, "TLSKeyFile " + key + ": readable or writable by group or others (mode 0644): chmod 600"},
	} {
		done := make(chan error, 1)
		go func() { _, err := tlsConfig(c.cfg); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%+v: still reading after 5s", c.cfg)
		}
	}
}
