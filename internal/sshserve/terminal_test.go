package sshserve

import (
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

// consoleOn opens a console session of w×h on an open connection.
func consoleOn(t *testing.T, client *gossh.Client, w, h int) *session {
	t.Helper()
	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.RequestPty("xterm-256color", h, w, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	c := &session{t: t, sess: sess, screen: newScreen()}
	sess.Stdout, sess.Stderr = c.screen, c.screen
	if c.stdin, err = sess.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = sess.Wait(); c.screen.close() }()
	return c
}

// A client may resize before the console has drawn anything: the SSH library
// writes the new size into the session's pty on its own goroutine, so the
// session's handler must not read that struct (under -race, reading it was a
// data race).
func TestResizeAtOnceIsNoDataRace(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	client, err := b.dial(b.viewer)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c := consoleOn(t, client, 80, 24)
	for i := range 20 {
		if err := c.sess.WindowChange(24+i%2, 80); err != nil {
			t.Fatal(err)
		}
	}
	c.waitFor("Overview")
}
