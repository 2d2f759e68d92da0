// Package fleet watches many outboxes at once: one per service, each in its own
// database or schema. It answers the first question of an incident across
// services — which outbox is in trouble — for `outboxtop status --fleet`, the
// console's fleet view and `outboxtop serve --fleet`.
//
// # The fleet file
//
// A fleet file is TOML (github.com/BurntSushi/toml), one [[outbox]] table per
// outbox:
//
//	poll_interval = "5s"   # optional, every outbox's default
//	timeout = "3s"         # optional: one poll gives up after this long
//
//	[[outbox]]
//	name = "orders"
//	dsn_env = "ORDERS_DATABASE_URL"      # or dsn_file = "secrets/orders.dsn"
//	schema = "public"                    # default public
//	brokers = ["kafka-1:9092"]           # optional
//	groups = ["billing", "shipping"]     # optional consumer groups
//	labels = { team = "payments", tier = "1" }
//	poll_interval = "2s"                 # optional, this outbox only
//	timeout = "1s"
//
// An operator key of `outboxtop serve --fleet` may be limited to some outboxes,
// by name or label; it is read-only on the others (File.MayAct):
//
//	[[operator]]
//	fingerprint = "SHA256:…"             # ssh-keygen -lf key.pub
//	outboxes = ["orders", "team=payments"]
//
// The connection string comes from an environment variable (dsn_env) or a file
// (dsn_file, relative to the fleet file), so the fleet file itself can be shared
// and committed. An inline dsn is accepted only when it carries no password.
// Parsing is strict: an unknown key, a duplicate name, an outbox without a
// connection string, a schema that is not an identifier — each is refused with
// one line naming the file and the outbox. Load resolves every connection
// string at once, so a missing variable or file is found before anything runs.
// An error never quotes a connection string.
//
// # Polling
//
// A Poller polls every outbox on its own schedule (poll_interval) in its own
// goroutine, each poll bounded by the outbox's timeout, through a pool of its
// own of at most two connections (MaxConns): a database that hangs (a lock held
// by a session sleeping in pg_sleep, a TCP black hole) costs its own row a
// timeout and nothing else. A poll reads inspect's Snapshot and the oldest
// publishable age — the same read model as `status` and the console, no SQL of
// its own — and reduces it to a Row. Rows sort worst first: unreachable
// (UNKNOWN), then CRITICAL, WARNING, OK, and within a level by the oldest
// publishable age, failed events, then name.
//
// The verdict of each row is Thresholds.Check, the rules of single-outbox
// `outboxtop status` (the check-plugin levels 0 OK, 1 WARNING, 2 CRITICAL,
// 3 UNKNOWN; a value strictly greater than a bound crosses it), so a fleet
// check and a check of one outbox never disagree.
//
// What a row cannot say: how many relay processes run. Leases are per batch,
// not per relay, so Row.Leased (live leases) and the publishing rate stand for
// "a relay is working here"; a publishable backlog with no lease and no
// publishing in the last ten seconds is Row.NoRelay.
package fleet
