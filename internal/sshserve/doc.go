// Package sshserve serves outboxtop's console over SSH (outboxtop serve), on
// charm.land/wish/v2: every SSH session gets a console of its own, while all of
// them share one database pool, at most one embedded relay, and one Overview
// snapshot per refresh: the database sees the same load from twenty consoles as
// from one, plus what each session opens (a list, an event's detail).
//
// Only public keys authenticate. A key in the operators file may act; any other
// key in the authorized keys file gets a read-only console; every other key is
// refused during authentication. The audit rows of a session's actions name its
// key ("SHA256:… alice@laptop"). Both files are read again at every login, so
// removing a line revokes the key for new connections without a restart.
//
// A session without a terminal (ssh host, with -T or a command of "status") gets
// the text of outboxtop status and ends. A console idle for longer than the idle
// timeout (no key pressed, no resize) is closed, and so is every console when the
// server shuts down; each is told why.
package sshserve
