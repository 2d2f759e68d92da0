package cli

import (
	"fmt"
	"io"
	"os"
)

// Secret files are refused, as OpenSSH refuses private keys, when group or others
// may read or write them, and are read only up to a bound: a password or key file
// is small, and a path like /dev/zero must not fill the memory.
const (
	maxPasswordFile = 4 << 10
	maxKeyFile      = 1 << 20
)

// readSecretFile reads the secret file path, given with flag, at most max bytes.
func readSecretFile(flag, path string, max int64) ([]byte, error) {
	f, err := openSecretFile(flag, path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s %s: larger than %d bytes", flag, path, max)
	}
	return b, nil
}

// checkSecretFile checks path as readSecretFile does without keeping its content
// (for files a library reads itself, such as a TLS key).
func checkSecretFile(flag, path string, max int64) error {
	f, err := openSecretFile(flag, path, max)
	if err != nil {
		return err
	}
	return f.Close()
}

func openSecretFile(flag, path string, max int64) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		err = fmt.Errorf("%s %s: %w", flag, path, err)
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%s %s: not a regular file", flag, path)
	case fi.Mode().Perm()&0o077 != 0:
		err = fmt.Errorf("%s %s: readable or writable by group or others (mode %04o): chmod 600 it", flag, path, fi.Mode().Perm())
	case fi.Size() > max:
		err = fmt.Errorf("%s %s: larger than %d bytes", flag, path, max)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
