package cmd

import "github.com/outboxtop/outboxtop/internal/securefile"

// Secret files are refused, as OpenSSH refuses private keys, when group or others
// may read or write them, and are read only up to a bound: a password or key file
// is small, and a path like /dev/zero must not fill the memory. securefile
// checks a path before opening it, so a named pipe is refused instead of waited
// on.
const (
	maxPasswordFile = 4 << 10
	maxKeyFile      = 1 << 20
)

// readSecretFile reads the secret file path, given with flag, at most max bytes.
func readSecretFile(flag, path string, max int64) ([]byte, error) {
	return securefile.Read(flag, path, securefile.Secret, max)
}

// checkSecretFile checks path as readSecretFile does without keeping its content
// (for files a library reads itself, such as a TLS key).
func checkSecretFile(flag, path string, max int64) error {
	return securefile.Check(flag, path, securefile.Secret, max)
}
