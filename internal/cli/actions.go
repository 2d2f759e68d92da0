package cli

// Stubs until the inspect issue lands: the triage actions.
var (
	runRetry      = notBuilt("retry")
	runResetLease = notBuilt("reset-lease")
	runPark       = notBuilt("park")
	runSkip       = notBuilt("skip")
	runArchive    = notBuilt("archive")
	runReplay     = notBuilt("replay")
)
