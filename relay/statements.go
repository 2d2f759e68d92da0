package relay

import (
	"embed"

	"github.com/outboxtop/outboxtop/internal/pgsql"
)

// sqlFiles holds the relay's statements, one a file (see the package doc, SQL).
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// statements are the relay's SQL, qualified for one schema.
type statements struct {
	claimTimeouts  string
	claimOrdered   string
	claimUnordered string
	claimPosition  string
	mark           string
	settle         string
	attemptHistory string
	renew          string
	release        string
	nextScheduled  string
	drainState     string
	unblockAfter   string
	sweepOrdered   string
	sweepUnordered string
	rescue         string
	heartbeat      string
	inserted       string
	orderCheck     string
}

// relaySQL are the statement files parsed once for each schema; besides the
// relay's own, WaitingForMissingTopics and the health collector read one each.
var relaySQL = pgsql.PerSchema{FS: sqlFiles, Pattern: "sql/*.sql"}

func newStatements(schema string) statements {
	load := relaySQL.For(schema).SQL
	return statements{
		claimTimeouts:  load("claim_timeouts"),
		claimOrdered:   load("claim_ordered"),
		claimUnordered: load("claim_unordered"),
		claimPosition:  load("claim_position"),
		mark:           load("mark"),
		settle:         load("settle"),
		attemptHistory: load("attempt_history"),
		renew:          load("renew"),
		release:        load("release"),
		nextScheduled:  load("next_scheduled"),
		drainState:     load("drain_state"),
		unblockAfter:   load("unblock_after"),
		sweepOrdered:   load("sweep_ordered"),
		sweepUnordered: load("sweep_unordered"),
		rescue:         load("rescue"),
		heartbeat:      load("heartbeat"),
		inserted:       load("inserted"),
		orderCheck:     load("order_check"),
	}
}
