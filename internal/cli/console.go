package cli

import "context"

// runConsole is outboxtop without a command: the console, or with --headless the
// relay alone.
func runConsole(ctx context.Context, args []string, io IO) error {
	fs := newFlagSet("", io)
	headless := fs.Bool("headless", false, "run the relay only (production): logs, /metrics, /healthz, /readyz")
	if err := parse(fs, args, io); err != nil {
		return err
	}
	if *headless {
		return usagef("--headless is not built yet")
	}
	return usagef("the console is not built yet")
}
