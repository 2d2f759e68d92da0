// Package pgsql is the SQL plumbing every package with statements shares.
//
// One template mechanism: every statement file, the relay's, inspect's and
// the migrations' stored functions, is a Go text/template over the same data.
// A statement names its tables as {{.schema}}.outbox_event, and .schema is the
// quoted schema identifier ("public", "Outbox"). Nothing else in a statement is
// rewritten: no parsing, and no search_path finds outboxtop's objects.
//
// Templates are a package's files parsed once, when a Relay or an Inspector is
// built: each file is a statement named for its file, and may define
// fragments ({{define "head"}}…{{end}}) the others call with
// {{template "head" args . "row" "e"}} (args adds fields to the data). A
// package passes the functions its statements call (inspect passes wire's
// state conditions). A few statements take fields chosen at run time (a
// filter's WHERE clause built from fixed fragments, a sort), passed when the
// statement is filled; a statement without any is filled once. A missing
// field is an error, not an empty string: the statements are embedded, so a
// package's tests find it.
//
// Name quotes a schema's object the same way, for a name passed as a
// parameter (a regclass).
//
// Check finds a table named without the placeholder; every package with
// embedded statements tests them all with it, and prepares them all on a
// database whose search_path holds no outboxtop table, in a schema whose name
// needs quotes.
//
// Every session outboxtop opens (the relay's, the console's and inspect's, the
// commands', status's, the demo's, the fleet poller's, migrate's) is opened by
// Pool or Connect (session.go), with search_path set to SearchPath
// (pg_catalog, pg_temp) whatever the connection string, the role or the
// database say, and a lock_timeout (Session). A schema on the search_path that
// other roles may create in lets them plant a function, aggregate or operator
// whose argument types match a call exactly (array_agg(text), jsonb -> jsonb
// for an unknown literal), which PostgreSQL then prefers to pg_catalog's
// polymorphic built-in although pg_catalog is searched first, and runs as the
// session's role. So statements rely on no search_path: they name
// outboxtop's tables and functions with the schema, and everything else
// resolves to pg_catalog. test/layers fails when a pool or connection is
// opened anywhere else.
//
// EstimatedRows reads PostgreSQL's planner estimates: what a count costs
// nothing to know approximately where counting exactly would scan (a storm of
// a million failed rows). Callers label what they return as an estimate.
package pgsql
