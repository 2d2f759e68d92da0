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
// A connection is unauthenticated until its client has proved, by a signature,
// that it holds an accepted key (naming a listed public key is not enough). At
// most MaxUnauthenticated connections may be unauthenticated at once, and at
// most MaxUnauthenticatedPerSource from one source (an IPv4 address, an IPv6
// /64); a connection beyond either is closed as soon as it is accepted, before
// the SSH greeting, so that connections which never log in cannot hold the
// server's memory or crowd out a real login from elsewhere.
//
// A session without a terminal (ssh host, with -T or a command of "status") gets
// the text of outboxtop status and ends. A console is drawn for at most
// MaxTerminalWidth×MaxTerminalHeight cells, whatever size the client's pty-req
// or window-change says: the console's memory grows with its area (a client
// asking for 10000×10000 made it take gigabytes), and a larger terminal shows
// the console in its top left corner.
//
// A console ends when it is quit, when its channel closes or its connection
// goes (the client left: logged as "console session closed by the client"),
// when it has been idle for longer than the idle timeout (no key pressed, no
// resize), when its key is revoked, and when the server shuts down; the client
// is told why when it is still there, and the end is logged. A console that has
// ended but has not stopped within ShutdownGrace (its output blocked on a client
// that reads none) has its connection closed, which stops it.
package sshserve
