-- What holds back the xmin horizon, at most $1 holders, oldest xmin first.
-- Each branch is one small catalog view; the sessions' branch leaves out this
-- session and transactions begun after this statement's (another connection
-- of this process, most likely: it holds back nothing older than this read
-- does, and its age would read negative). A hidden session (another role's,
-- without pg_read_all_stats) shows its pid, user, application, xid and xmin
-- but not its start, state or query.
SELECT kind, pid, name, state, xmin_age, secs, query, usr, app, client,
		backend_start, xact_start, slot_type, holds, slot_active, hidden
	FROM (
		SELECT CASE WHEN a.backend_type = 'walsender' THEN 'standby feedback'
				WHEN a.backend_xid IS NOT NULL THEN 'writer' ELSE 'session' END AS kind,
			a.pid,
			coalesce(a.usename, '') || ' ' || coalesce(a.application_name, '') AS name,
			coalesce(a.state, '') AS state,
			greatest(age(a.backend_xmin), age(a.backend_xid))::bigint AS xmin_age,
			extract(epoch from now() - a.xact_start)::float8 AS secs,
			left(coalesce(a.query, ''), 200) AS query,
			coalesce(a.usename, '') AS usr, coalesce(a.application_name, '') AS app,
			coalesce(host(a.client_addr), '') AS client,
			a.backend_start, a.xact_start, '' AS slot_type, '' AS holds, NULL::boolean AS slot_active,
			a.backend_start IS NULL AS hidden
		FROM pg_stat_activity a
		WHERE (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL) AND a.pid <> pg_backend_pid()
			AND (a.datid = (SELECT oid FROM pg_database WHERE datname = current_database()) OR a.backend_type = 'walsender')
			AND (a.xact_start IS NULL OR a.xact_start < now())
		UNION ALL
		SELECT 'prepared transaction', 0, p.gid, '', age(p.transaction)::bigint,
			extract(epoch from now() - p.prepared)::float8, '', p.owner::text, '', '',
			NULL, p.prepared, '', '', NULL, false
		FROM pg_prepared_xacts p WHERE p.database = current_database()
		UNION ALL
		SELECT 'replication slot', 0, s.slot_name, '', coalesce(age(s.xmin), age(s.catalog_xmin))::bigint,
			NULL, '', '', '', '', NULL, NULL, s.slot_type,
			CASE WHEN s.xmin IS NOT NULL THEN 'xmin' ELSE 'catalog_xmin' END, s.active, false
		FROM pg_replication_slots s WHERE s.xmin IS NOT NULL OR s.catalog_xmin IS NOT NULL
	) h ORDER BY xmin_age DESC, secs DESC NULLS LAST LIMIT $1
