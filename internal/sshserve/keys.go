package sshserve

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"strings"

	gossh "golang.org/x/crypto/ssh"

	"github.com/outboxtop/outboxtop/internal/securefile"
)

// Role is what a key may do.
type Role int

// Roles.
const (
	// Refused keys are in neither file.
	Refused Role = iota
	// Viewer keys are in the authorized keys file only: a read-only console.
	Viewer
	// Operator keys are in the operators file: they may act.
	Operator
)

func (r Role) String() string {
	switch r {
	case Viewer:
		return "read-only"
	case Operator:
		return "operator"
	}
	return "refused"
}

// Identity is an authenticated key.
type Identity struct {
	Role Role
	// Fingerprint is the key's SHA256 fingerprint as OpenSSH prints it
	// ("SHA256:…", ssh-keygen -lf).
	Fingerprint string
	// Comment is the authorized_keys line's comment, sanitized ("" when none).
	Comment string
}

// Actor is the name the audit rows record: the fingerprint, then the comment.
func (id Identity) Actor() string {
	if id.Comment == "" {
		return id.Fingerprint
	}
	return id.Fingerprint + " " + id.Comment
}

// keyFiles are the authorized keys file and the optional operators file.
type keyFiles struct {
	authorized, operators string
}

// identify reads both files and says who key is. A key in both files is an
// operator; the comment comes from the operators file then. Either file failing
// to read fails the whole identification: no login on a half-read configuration.
func (f keyFiles) identify(key gossh.PublicKey) (Identity, error) {
	var ops, viewers []authorizedKey
	var err error
	if f.operators != "" {
		if ops, err = readAuthorizedKeys(f.operators); err != nil {
			return Identity{}, err
		}
	}
	if viewers, err = readAuthorizedKeys(f.authorized); err != nil {
		return Identity{}, err
	}
	id := Identity{Role: Refused, Fingerprint: gossh.FingerprintSHA256(key)}
	want := key.Marshal()
	for _, file := range []struct {
		keys []authorizedKey
		role Role
	}{{ops, Operator}, {viewers, Viewer}} {
		for _, k := range file.keys {
			if bytes.Equal(k.key.Marshal(), want) {
				id.Role, id.Comment = file.role, k.comment
				return id, nil
			}
		}
	}
	return id, nil
}

type authorizedKey struct {
	key     gossh.PublicKey
	comment string
}

// errKeyOptions: authorized_keys options (from=, command=, …) narrow what a key
// may do in OpenSSH; silently ignoring them would widen it here, so they are refused.
var errKeyOptions = errors.New("authorized_keys options (from=, command=, …) are not supported: list the bare key")

// maxKeysFile bounds an authorized keys file: a key line is under 1 KiB, so this
// is thousands of keys, and a path like /dev/zero must not fill the memory.
const maxKeysFile = 1 << 20

// readAuthorizedKeys parses an OpenSSH authorized_keys file: one key a line,
// "type base64 comment", blank lines and # comments ignored. Like OpenSSH's
// StrictModes, it refuses a file that group or others may write: whoever can
// write it can let any key in.
func readAuthorizedKeys(path string) ([]authorizedKey, error) {
	data, err := securefile.Read("keys file", path, securefile.PublicList, maxKeysFile)
	if err != nil {
		return nil, fmt.Errorf("reading keys: %w", err)
	}
	var keys []authorizedKey
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, comment, options, _, err := gossh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n+1, err)
		}
		if len(options) > 0 {
			return nil, fmt.Errorf("%s line %d: %w", path, n+1, errKeyOptions)
		}
		if _, ok := key.(*gossh.Certificate); ok {
			return nil, fmt.Errorf("%s line %d: certificates are not supported: list the bare key", path, n+1)
		}
		keys = append(keys, authorizedKey{key: key, comment: termtext.Sanitize(termtext.OneLine(comment))})
	}
	return keys, nil
}
