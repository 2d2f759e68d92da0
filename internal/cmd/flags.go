package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

func newFlagSet(name string, io IO) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Err)
	fs.SortFlags = false
	fs.Usage = func() {
		if name == "" {
			fmt.Fprintf(io.Err, "Usage: outboxtop [flags]\n\nFlags:\n")
		} else {
			fmt.Fprintf(io.Err, "Usage: outboxtop %s [flags]\n\nFlags:\n", name)
		}
		fs.PrintDefaults()
	}
	return fs
}

// EnvName is the environment variable that sets flag name: OUTBOXTOP_ plus the
// name upper-cased with dashes as underscores.
func EnvName(flag string) string {
	return "OUTBOXTOP_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// parse parses args, then fills every flag not given on the command line from its
// OUTBOXTOP_<FLAG> variable. Positional arguments are refused: no command takes any.
func parse(fs *pflag.FlagSet, args []string, io IO) error {
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return err
		}
		return usagef("%v (see 'outboxtop %s --help')", err, fs.Name())
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (see 'outboxtop %s --help')", fs.Arg(0), fs.Name())
	}
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		v := io.Getenv(EnvName(f.Name))
		if v == "" {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = usagef("invalid %s=%q: %v", EnvName(f.Name), v, serr)
		}
	})
	return err
}
