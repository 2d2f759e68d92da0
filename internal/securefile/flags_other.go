//go:build !unix

package securefile

// Elsewhere there are no named pipes to block an open, and O_EXCL alone keeps a
// create from following a link.
const (
	readFlags = 0
	noFollow  = 0
)
