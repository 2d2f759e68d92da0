package cli

import "context"

// runTUI opens the console. Stub until the console issue lands.
func runTUI(context.Context, *consoleFlags, IO) error {
	return usagef("the console is not built yet; use --headless")
}
