// Package securefile reads the files that hold a secret or a list of keys, and
// writes new ones, without the traps of a plain os.ReadFile or os.WriteFile:
//
//   - a path is checked before it is opened, so a named pipe (whose open blocks
//     until a writer comes, past any signal's handler) or a device (/dev/zero,
//     which never ends) is refused at once;
//   - it is opened non-blocking and checked again on the open descriptor, so a
//     path swapped between the check and the open is caught;
//   - its size is bounded, and read no further than the bound;
//   - a secret may not be readable or writable by group or others, as OpenSSH
//     demands of a private key; a list of public keys may not be writable by
//     them (who can write it can log in);
//   - a new file never follows a symbolic link: it is written to a fresh file
//     in the same directory and renamed into place.
//
// A path may be a symbolic link for reading (a mounted Kubernetes secret is
// one): what is checked is the file it leads to, on the open descriptor.
//
// Every error is one line that names the file and says what to do.
package securefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Kind is what a file holds, which decides the permissions it may have.
type Kind int

const (
	// Secret: a password, a private key, a connection string with a password.
	// Group and others may neither read nor write it.
	Secret Kind = iota
	// PublicList: authorized keys. Group and others may read it but not write it.
	PublicList
	// Plain: a configuration file. Any permissions; only its type and size are
	// checked.
	Plain
)

// Read returns the content of path, checked for kind, if it is at most max
// bytes. name says what the file is in the errors ("--kafka-sasl-password-file",
// "dsn_file"). An error for a missing file wraps fs.ErrNotExist.
func Read(name, path string, kind Kind, max int64) ([]byte, error) {
	f, err := Open(name, path, kind, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", name, path, err)
	}
	if int64(len(b)) > max {
		return nil, tooLarge(name, path, max)
	}
	return b, nil
}

// Check checks path as Read does without reading it (for a file a library
// opens itself, such as a TLS key).
func Check(name, path string, kind Kind, max int64) error {
	f, err := Open(name, path, kind, max)
	if err != nil {
		return err
	}
	return f.Close()
}

// Open opens path for reading once it has passed the checks for kind; the
// caller reads at most max bytes of it.
func Open(name, path string, kind Kind, max int64) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := check(name, path, fi, kind, max); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|readFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s %s: %w", name, path, err)
	}
	if err := check(name, path, fi, kind, max); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func check(name, path string, fi fs.FileInfo, kind Kind, max int64) error {
	mode := fi.Mode()
	perm := mode.Perm()
	switch {
	case !mode.IsRegular():
		return fmt.Errorf("%s %s: not a regular file (%s): point it at a regular file", name, path, describe(mode))
	case kind == Secret && perm&0o077 != 0:
		return fmt.Errorf("%s %s: readable or writable by group or others (mode %04o): chmod 600 %s", name, path, perm, path)
	case kind == PublicList && perm&0o022 != 0:
		return fmt.Errorf("%s %s: writable by group or others (mode %04o): chmod go-w %s", name, path, perm, path)
	case fi.Size() > max:
		return tooLarge(name, path, max)
	}
	return nil
}

func tooLarge(name, path string, max int64) error {
	return fmt.Errorf("%s %s: larger than %d bytes", name, path, max)
}

func describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "mode " + m.String()
}

// WriteNew writes data to path with permissions perm, replacing what path was,
// symbolic link included, without following a link: the data goes to a fresh
// file in path's directory (created exclusively, so a link planted under its
// name is not followed), which is then renamed over path.
func WriteNew(path string, data []byte, perm fs.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err == nil {
		if _, err = f.Write(data); err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// CreateExclusive creates path with permissions perm and writes data to it,
// failing when anything (a file, a symbolic link) is already there. A partly
// written file is removed.
func CreateExclusive(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// IsNotExist reports whether err says the file is not there.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
