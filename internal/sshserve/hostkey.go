package sshserve

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"

	gossh "golang.org/x/crypto/ssh"

	"github.com/outboxtop/outboxtop/internal/securefile"
)

// maxHostKey bounds the host key file: an OpenSSH private key is a few KiB.
const maxHostKey = 64 << 10

// hostKey loads the server's private key from path, or, when path does not
// exist, generates an Ed25519 key there (mode 0600, OpenSSH format) with its
// public half in path.pub. A key file that others can read is refused, as
// OpenSSH refuses one, and so is anything but a regular file of at most
// maxHostKey bytes (a device such as /dev/zero would never end, a named pipe
// never open).
func hostKey(path string) (signer gossh.Signer, created bool, err error) {
	data, err := securefile.Read("host key", path, securefile.Secret, maxHostKey)
	if securefile.IsNotExist(err) {
		signer, err := generateHostKey(path)
		return signer, err == nil, err
	}
	if err != nil {
		return nil, false, err
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
	// Created exclusively, not following a link: never overwrite a key another
	// process wrote in the meantime, nor write through a link planted there.
	if err := securefile.CreateExclusive(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, fmt.Errorf("writing host key: %w", err)
	}
	sshPub, err := gossh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	// The public half, for known_hosts; a failure here does not stop the server.
	// Written to a new file renamed into place: a link planted at path.pub is
	// replaced, not followed, and a stale .pub of an earlier key is replaced too.
	_ = securefile.WriteNew(path+".pub", gossh.MarshalAuthorizedKey(sshPub), 0o644)
	return gossh.NewSignerFromKey(priv)
}
