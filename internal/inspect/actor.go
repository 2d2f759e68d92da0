package inspect

import (
	"os"
	"os/user"
	"strings"

	"github.com/outboxtop/outboxtop/internal/ident"
)

// DefaultActor names the person acting when no actor is given: the OS user, plus the
// SSH client's address when SSH_CONNECTION is set ("alice via ssh from
// 203.0.113.7"). getenv is os.Getenv unless a caller substitutes it.
func DefaultActor(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if name == "" {
		name = getenv("USER")
	}
	if name == "" {
		name = "unknown"
	}
	if f := strings.Fields(getenv("SSH_CONNECTION")); len(f) > 0 {
		name += " via ssh from " + f[0]
	}
	return name
}

// checkActor refuses an actor that names no one: not empty (DefaultActor
// stands in for that) and yet nothing once internal/ident's Key has taken out
// white space, controls and the code points that show nothing. Such an actor
// prints blank in the audit log; the database's audit function refuses the
// same ones.
func checkActor(actor string) error {
	if actor != "" && ident.Key(actor) == "" {
		return invalidf("actor %+q shows nothing (only white space, control or invisible characters): name who acts", actor)
	}
	return nil
}
