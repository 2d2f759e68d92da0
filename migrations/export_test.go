package migrations

import "maps"

// TemplateData is what the SQL files' templates see, for tests that apply SQL
// files of their own (an earlier outboxtop's migrations), with what those
// files named and this one's no longer do: the NOTIFY channel of the insert
// trigger that migration 024 removed.
func TemplateData(schema string) map[string]any {
	d := maps.Clone(templateData(schema))
	d["channel"] = quoteLiteral("outboxtop_" + schema)
	return d
}

// WithAdoptBatch is opts numbering an adopted table's rows n per step.
func WithAdoptBatch(opts Options, n int64) Options {
	opts.adoptBatch = n
	return opts
}
