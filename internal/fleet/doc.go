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
//	lag_timeout = "5s"     # optional: one consumer lag check gives up after this long
//
//	[[outbox]]
//	name = "orders"
//	dsn_env = "ORDERS_DATABASE_URL"      # or dsn_file = "secrets/orders.dsn"
//	schema = "public"                    # default public
//	brokers = ["kafka-1:9092"]           # optional: check consumer lag
//	groups = ["billing", "shipping-*"]   # optional: those groups only
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
// A file over 1 MiB, or nested more than 8 levels deep (brackets, braces and
// the parts of a dotted key or table header; a fleet file needs 3), is refused
// before it is decoded, naming the line: the decoder's work grows with the
// square of the nesting. Parsing is strict: an unknown key, a duplicate name,
// an outbox without a connection string, a schema that is not an identifier —
// each is refused with one line naming the file and the outbox. Load resolves every connection
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
// # Consumer lag
//
// An outbox that names brokers has its consumer groups' lag checked with
// internal/consumerlag on the outbox's topics (those its recent published
// events went to), each check bounded by lag_timeout, on a schedule of its own
// apart from the database's: every poll_interval (at least 5 s), and at least
// 20 times as long apart as the last check took (at most a minute), so a slow
// cluster is asked less often. Run starts an outbox's lag checks after the
// first poll of its database and never makes a database poll wait for one:
// brokers that do not answer (a check then takes its whole lag_timeout) cost
// that row its lag and nothing else. Poll (one-shot, for status) checks the lag
// after the database poll, so it ends within timeout + lag_timeout.
//
// Row.Lag sums a check up: the largest lag and its group, the oldest
// unconsumed record's age, and the first problem (brokers unreachable, a group
// not described, ages not read). The lag thresholds (Thresholds.CheckLag, the
// same as single-outbox status's --warn-lag, --crit-lag, --warn-lag-age,
// --crit-lag-age) apply per outbox and per group, worst wins. A problem is a
// WARNING when lag thresholds are in force and otherwise only the row's
// condition ("kafka: …") — never UNKNOWN: UNKNOWN says the database, the
// outbox itself, could not be read, and that part of the row is still known.
//
// Row.Relays counts the relays live in an outbox: heartbeating (migration 010)
// or holding a live lease (inspect.Snapshot.RelaysLive); a publishable backlog
// older than ten seconds with no live relay and no publishing in the last ten
// seconds is Row.NoRelay. Thresholds.WarnNoRelay/CritNoRelay check the time
// since a relay was last live, as `status --warn-no-relay` does.
// Thresholds.WarnHorizon/CritHorizon check the age of the oldest transaction
// holding back the xmin horizon, as `status --warn-horizon` does, on by
// default (inspect.HorizonWarnAfter, inspect.HorizonCritAfter).
package fleet
