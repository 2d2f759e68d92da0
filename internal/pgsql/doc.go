// Package pgsql is the SQL plumbing every package with statements shares.
//
// One template mechanism: outboxtop's SQL, the relay's and inspect's, is
// schema-qualified the way the migrations are. A statement names its tables as
// {{.schema}}.outbox_event, and the placeholder becomes the quoted schema
// identifier ("public", "Outbox") when the statement is loaded, once, when a
// Relay or an Inspector is built. Nothing else in a statement is rewritten: no
// parsing, no search_path. Statements composed in Go name their tables with
// Name, which quotes the same way.
//
// Check finds a table named without the placeholder; every package with
// embedded statements tests them all with it, and prepares them all on a
// database whose search_path holds no outboxtop table, in a schema whose name
// needs quotes.
//
// EstimatedRows reads PostgreSQL's planner estimates: what a count costs
// nothing to know approximately where counting exactly would scan (a storm of
// a million failed rows). Callers label what they return as an estimate.
package pgsql
