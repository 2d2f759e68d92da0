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
	cs, err := creators(ctx, conn, "$1::text[]", []string{schema})
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	return cs[0].Roles, nil
}

// Creators are the roles other than its owner that may create in Schema
// (SchemaCreators' rule).
type Creators struct {
	Schema string
	Roles  []string
}

// PathCreators is SchemaCreators for every schema on a search_path of this
// database (pathSchemasSQL) but except, the outbox's own, which
// SchemaCreators checks. outboxtop's sessions put none of them on their
// search_path (pg_catalog, pg_temp), but every session that keeps the
// database's runs what such a role plants there in place of a built-in (an
// exact-type array_agg(text) over pg_catalog's array_agg(anynonarray)): an
// application embedding the relay, a producer, psql.
func PathCreators(ctx context.Context, conn *pgx.Conn, except string) ([]Creators, error) {
	return creators(ctx, conn, "ARRAY(SELECT s FROM pg_catalog.unnest("+pathSchemasSQL+") s WHERE s <> $1)", except)
}

func creators(ctx context.Context, conn *pgx.Conn, schemas string, args ...any) ([]Creators, error) {
	rows, err := conn.Query(ctx, `SELECT c.schema, pg_catalog.array_agg(c.who ORDER BY c.who <> 'PUBLIC', c.who)
		FROM (`+creatorsSQL(schemas)+`) c(schema, who) GROUP BY c.schema ORDER BY c.schema`, args...)
	if err != nil {
		return nil, fmt.Errorf("reading who may create in the schemas: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Creators, error) {
		var c Creators
		return c, r.Scan(&c.Schema, &c.Roles)
	})
}

// creatorsSQL is a query of who may create in the schemas the text[]
// expression schemas names, by SchemaCreators' rule: the schema's name and
// "PUBLIC" or the role, quoted. Everything in it is qualified, for it runs in
// the printed grants too, under the applying session's search_path.
func creatorsSQL(schemas string) string {
	return `SELECT DISTINCT n.nspname::text,
			CASE WHEN a.grantee = 0::oid THEN 'PUBLIC' ELSE pg_catalog.quote_ident(r.rolname) END
		FROM pg_catalog.pg_namespace n
		CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) a
		LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
		WHERE n.nspname::text = ANY (` + schemas + `) AND a.privilege_type = 'CREATE'
		  AND (a.grantee = 0::oid OR NOT (r.rolsuper
		       OR pg_catalog.pg_has_role(a.grantee, n.nspowner, 'MEMBER')
		       OR pg_catalog.pg_has_role(a.grantee, current_user, 'MEMBER')))`
}

// pathSchemasSQL is a text[] of the schemas on a search_path of this
// database: PostgreSQL's default ("$user", public), every search_path set
// with ALTER DATABASE or ALTER ROLE (in this database or all), and
// pg_catalog, outboxtop's own; "$user" stands for every schema named after a
// role. A search_path set in postgresql.conf is not readable by every role,
// and is left out.
const pathSchemasSQL = `ARRAY(SELECT DISTINCT z.s FROM (
		SELECT pg_catalog.btrim(x.p, ' "') AS p FROM (
			SELECT pg_catalog.regexp_split_to_table(pg_catalog.substr(c.c, 13), ',') AS p
			FROM pg_catalog.pg_db_role_setting d CROSS JOIN LATERAL pg_catalog.unnest(d.setconfig) c(c)
			WHERE d.setdatabase IN (0::oid, (SELECT b.oid FROM pg_catalog.pg_database b
				WHERE b.datname = pg_catalog.current_database()))
			  AND c.c LIKE 'search_path=%'
			UNION ALL
			SELECT pg_catalog.regexp_split_to_table(g.boot_val, ',') FROM pg_catalog.pg_settings g WHERE g.name = 'search_path'
			UNION ALL
			SELECT 'pg_catalog') x) y
		CROSS JOIN LATERAL (SELECT y.p WHERE y.p <> '$user'
			UNION ALL SELECT r.rolname::text FROM pg_catalog.pg_roles r WHERE y.p = '$user') z(s))`

// SchemaCreatorsFix is the advice for SchemaCreators' answer: what the roles
// could do, and the statements that take the privilege away.
func SchemaCreatorsFix(schema string, creators []string) string {
	return creatorsFix(schema, creators, "such a role could define a function or operator "+
		"that outboxtop's SECURITY DEFINER functions would run as their owner")
}

// PathCreatorsFix is the advice for one schema of PathCreators' answer.
func PathCreatorsFix(c Creators) string {
	return creatorsFix(c.Schema, c.Roles, "it is on a search_path of this database, so such a role could define a "+
		"function, aggregate or operator that a session keeping that search_path (an application embedding the relay, "+
		"a producer, psql) runs in place of a built-in; outboxtop's own sessions set search_path to pg_catalog, pg_temp")
}

func creatorsFix(schema string, creators []string, risk string) string {
	s := pgx.Identifier{schema}.Sanitize()
	var b strings.Builder
	fmt.Fprintf(&b, "schema %s lets %s create objects in it: %s. As the schema's owner, run:\n",
		s, strings.Join(creators, ", "), risk)
	for _, c := range creators {
		fmt.Fprintf(&b, "    REVOKE CREATE ON SCHEMA %s FROM %s;\n", s, c)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
