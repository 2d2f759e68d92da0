package cli

// Stubs until the inspect issue lands: status and events.
var (
	runStatus = notBuilt("status")
	runEvents = notBuilt("events")
)
