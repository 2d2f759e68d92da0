package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// TestUpgradedOperatorsKeepArchive: outboxtop_archive's result changed (it
// reports the events it refused), which CREATE OR REPLACE cannot do; an
// operator granted the earlier function keeps EXECUTE on the new one.
func TestUpgradedOperatorsKeepArchive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.EmptyDB(t))
	fsys, versions := history(t)
	migrateHistory(t, conn, fsys, "public", versions)
	name := "outboxtop_operator_" + randomSuffix()
	role := pgx.Identifier{name}.Sanitize()
	for _, stmt := range []string{
		`CREATE ROLE ` + role,
		`GRANT EXECUTE ON FUNCTION public.outboxtop_archive(text, text, uuid[], jsonb, bigint) TO ` + role,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = conn.Exec(ctx, "DROP OWNED BY "+role)
		_, _ = conn.Exec(ctx, "DROP ROLE IF EXISTS "+role)
	})
	if _, err := migrations.Apply(ctx, conn, "public", nil); err != nil {
		t.Fatal(err)
	}
	var may bool
	var result string
	if err := conn.QueryRow(ctx, `SELECT has_function_privilege($1, 'public.outboxtop_archive(text, text, uuid[], jsonb, bigint)', 'EXECUTE'),
		pg_get_function_arguments('public.outboxtop_archive(text, text, uuid[], jsonb, bigint)'::regprocedure)`, name).Scan(&may, &result); err != nil {
		t.Fatal(err)
	}
	if !may || !strings.Contains(result, "out_refused") {
		t.Errorf("after the upgrade: the operator may execute archive %v, its result %q", may, result)
	}
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_proc WHERE proname LIKE '%superseded%'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d superseded functions left (%v)", left, err)
	}
}
