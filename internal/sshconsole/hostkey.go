package sshconsole

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"

	gossh "golang.org/x/crypto/ssh"
)

// maxHostKey bounds the host key file: an OpenSSH private key is a few KiB.
const maxHostKey = 64 << 10

// hostKey loads the server's private key from path, or, when path does not
// exist, generates an Ed25519 key there (mode 0600, OpenSSH format) with its
// public half in path.pub. A key file that others can read is refused, as
// OpenSSH refuses one.
func hostKey(path string) (signer gossh.Signer, created bool, err error) {
	fi, err := os.Stat(path)
	if err == nil && (!fi.Mode().IsRegular() || fi.Size() > maxHostKey) {
		return nil, false, fmt.Errorf("host key %s: not a regular file of at most %d bytes", path, maxHostKey)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		signer, err := generateHostKey(path)
		return signer, err == nil, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("host key: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, false, fmt.Errorf("host key %s is readable by others (mode %04o): chmod 600 it", path, fi.Mode().Perm())
	}
	signer, err = gossh.ParsePrivateKey(data)
	if err != nil {
		var missing *gossh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, false, fmt.Errorf("host key %s is encrypted: the server needs it without a passphrase", path)
		}
		return nil, false, fmt.Errorf("host key %s: %w", path, err)
	}
	return signer, false, nil
}

func generateHostKey(path string) (gossh.Signer, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating host key: %w", err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "outboxtop serve host key")
	if err != nil {
		return nil, fmt.Errorf("encoding host key: %w", err)
	}
	// O_EXCL: never overwrite a key another process wrote in the meantime.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("writing host key: %w", err)
	}
	if _, err := f.Write(pem.EncodeToMemory(block)); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("writing host key: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("writing host key: %w", err)
	}
	sshPub, err := gossh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	// The public half, for known_hosts; a failure here does not stop the server.
	_ = os.WriteFile(path+".pub", gossh.MarshalAuthorizedKey(sshPub), 0o644)
	return gossh.NewSignerFromKey(priv)
}
