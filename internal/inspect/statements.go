package inspect

import (
	"embed"
	"fmt"
	"text/template"

	"github.com/outboxtop/outboxtop/internal/pgsql"
	"github.com/outboxtop/outboxtop/wire"
)

// sqlFiles holds inspect's statements, one a file, and the fragments they
// share (sql/fragments.sql).
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// sqlFuncs are what inspect's statements call beside the shared fragments:
// wire's state conditions, and the expressions that read times safely.
var sqlFuncs = template.FuncMap{
	// state is wire's condition for a state, on bare column names; "expired"
	// is a lease that ran out without a mark.
	"state": func(name string) (string, error) {
		if name == "expired" {
			return wire.ExpiredLeaseSQL, nil
		}
		return wire.SQL(wire.State(name))
	},
	"finite":         finite,
	"age":            ageSeconds,
	"nullAge":        nullAge,
	"attemptsBucket": attemptsBucketSQL,
}

// parseStatements parses inspect's statements for schema.
func parseStatements(schema string) *pgsql.Templates {
	return pgsql.Parse(sqlFiles, "sql/*.sql", schema, sqlFuncs)
}

// finite is the timestamptz expression col with 'infinity' and '-infinity'
// read as the latest and earliest instants Go's time and JSON carry (9999-12-31
// 23:59:59 UTC, 0001-01-01 00:00:00 UTC); NULL stays NULL. The tables refuse
// infinite times, but a row stored before they did may hold one, and Go
// cannot scan it: every reader of a time column a role may write reads it
// through finite.
func finite(col string) string {
	return `(CASE WHEN ` + col + ` = 'infinity' THEN timestamptz '9999-12-31 23:59:59+00'` +
		` WHEN ` + col + ` = '-infinity' THEN timestamptz '0001-01-01 00:00:00+00' ELSE ` + col + ` END)`
}

// ageSeconds is now() − col in seconds, within ±AgeLimit, which a time.Duration
// holds (an infinite col cannot be subtracted at all).
func ageSeconds(col string) string {
	return `least(greatest(extract(epoch from now() - ` + finite(col) + `)::float8, -9e9), 9e9)`
}

// nullAge is ageSeconds of col, NULL when col is.
func nullAge(col string) string {
	return `(CASE WHEN ` + col + ` IS NOT NULL THEN ` + ageSeconds(col) + ` END)`
}

// attemptsBucketSQL is the index in attemptBuckets of a row's attempts.
func attemptsBucketSQL() string {
	bucket := "CASE"
	for k, b := range attemptBuckets {
		if b.Max >= 0 {
			bucket += fmt.Sprintf(" WHEN attempts <= %d THEN %d", b.Max, k)
		} else {
			bucket += fmt.Sprintf(" ELSE %d END", k)
		}
	}
	return bucket
}
