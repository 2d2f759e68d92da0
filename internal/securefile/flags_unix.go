//go:build unix

package securefile

import "syscall"

const (
	// readFlags: a path swapped for a named pipe after the Stat does not block the
	// open (the Fstat then refuses it); reads of a regular file ignore O_NONBLOCK.
	readFlags = syscall.O_NONBLOCK | syscall.O_CLOEXEC
	// noFollow refuses a symbolic link as the last element of a path to create.
	noFollow = syscall.O_NOFOLLOW | syscall.O_CLOEXEC
)
