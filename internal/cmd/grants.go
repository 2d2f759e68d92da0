package cmd

import (
	"context"

	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/wire"
)

// runGrants is outboxtop grants: it prints migrations.GrantSQL, which lives next
// to the tables and functions it grants so the two change together. It needs no
// database: the printed statements check the schema themselves where they are
// applied, and fail while roles other than its owner may create objects in it.
func runGrants(_ context.Context, args []string, io IO) error {
	fs := newFlagSet("grants", io)
	role := fs.String("role", "", "which role's grants to print: "+migrations.GrantRoleNames()+" (required)")
	schema := fs.String("schema", wire.DefaultSchema, "schema holding outboxtop's tables")
	to := fs.String("to", "", "the PostgreSQL role to grant to (default outboxtop_<role>)")
	if err := parse(fs, args, io); err != nil {
		return err
	}
	if *role == "" {
		return usagef("--role is required: one of %s", migrations.GrantRoleNames())
	}
	grantee := *to
	if grantee == "" {
		grantee = "outboxtop_" + *role
	}
	sql, err := migrations.GrantSQL(*role, *schema, grantee)
	if err != nil {
		return usagef("%v", err)
	}
	_, err = io.Out.Write([]byte(sql))
	return err
}
