package migrations

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// SchemaCreators returns who, besides the roles that are the owner already,
// may create objects in schema: "PUBLIC" first when everyone may, then each
// role granted CREATE, quoted. The schema's owner, the migrating role (the
// functions' owner), roles that are members of either and superusers are left
// out: they can change outboxtop's functions anyway. Empty when the schema does
// not exist.
//
// Anyone else with CREATE could add a function, aggregate or operator whose
// argument types match a call in outboxtop's SECURITY DEFINER functions more
// exactly than the built-in does; PostgreSQL would then run it as the functions'
// owner. The functions call built-ins schema-qualified, so none is known to do
// so, but a schema open to others is one missed qualification away from it.
func SchemaCreators(ctx context.Context, conn *pgx.Conn, schema string) ([]string, error) {
	rows, err := conn.Query(ctx, `
		SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(r.rolname) END
		FROM pg_catalog.pg_namespace n
		CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) a
		LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
		WHERE n.nspname = $1 AND a.privilege_type = 'CREATE'
		  AND (a.grantee = 0::oid OR NOT (r.rolsuper
		       OR pg_catalog.pg_has_role(a.grantee, n.nspowner, 'MEMBER')
		       OR pg_catalog.pg_has_role(a.grantee, current_user, 'MEMBER')))
		GROUP BY a.grantee, r.rolname
		ORDER BY a.grantee <> 0::oid, 1`, schema)
	if err != nil {
		return nil, fmt.Errorf("reading who may create in schema %s: %w", schema, err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// SchemaCreatorsFix is the advice for SchemaCreators' answer: what the roles
// could do, and the statements that take the privilege away.
func SchemaCreatorsFix(schema string, creators []string) string {
	s := pgx.Identifier{schema}.Sanitize()
	var b strings.Builder
	fmt.Fprintf(&b, "schema %s lets %s create objects in it: such a role could define a function or operator "+
		"that outboxtop's SECURITY DEFINER functions would run as their owner. As the schema's owner, run:\n",
		s, strings.Join(creators, ", "))
	for _, c := range creators {
		fmt.Fprintf(&b, "    REVOKE CREATE ON SCHEMA %s FROM %s;\n", s, c)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
