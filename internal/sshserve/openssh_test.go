package sshserve

import (
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

// TestOpenSSHClient connects with the real ssh(1), as docs/ssh.md shows: the
// key files and host key formats are OpenSSH's own.
func TestOpenSSHClient(t *testing.T) {
	t.Parallel()
	sshPath, err := exec.LookPath("ssh")
	if err != nil {
		t.Skip("no OpenSSH client:", err)
	}
	b := setup(t, nil)
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "id")
	block, err := gossh.MarshalPrivateKey(b.operatorKey, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(b.addr)
	knownHosts := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(knownHosts, []byte("["+host+"]:"+port+" "+string(gossh.MarshalAuthorizedKey(b.hostKey))), 0o644); err != nil {
		t.Fatal(err)
	}
	ssh := func(args ...string) *exec.Cmd {
		return exec.Command(sshPath, append([]string{"-F", "/dev/null", "-p", port, "-i", keyPath,
			"-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "UserKnownHostsFile=" + knownHosts,
			"-o", "StrictHostKeyChecking=yes", host}, args...)...)
	}
	out, err := ssh("status").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "outboxtop status — pending 0  failed 1") {
		t.Fatalf("ssh host status: %v\n%s", err, out)
	}
	// A forced terminal: the console starts; q quits it.
	cmd := ssh("-tt")
	cmd.Stdin = strings.NewReader("q")
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\x1b]2;outboxtop\x07") {
		t.Fatalf("ssh -tt host: %v\n%q", err, out)
	}
}
