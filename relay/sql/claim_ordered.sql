-- The ordered claim: one statement, no global lock, cost bounded by the batch.
--
-- @batch batch size, @token lease token, @lease_ms lease in milliseconds,
-- @holder this relay's name (host:pid, kept in lease_holder), @skip_types and @skip_ids the aggregates to pass over: those whose ready head
-- this relay found held by another session at a recent claim (see headWatch in
-- heads.go). @from_at and @from_seq: where the window starts reading
-- outbox_claim_idx, and @xmax and @xip the previous claim's snapshot, whose
-- unseen transactions may have made rows claimable behind that position (see
-- claimCursor in cursor.go). @hints: the heads this relay last found, as a
-- jsonb object {aggregate_type: {aggregate_id: seq}} (a lookup in it is a
-- binary search; a join with arrays of thousands ran as a nested loop over
-- them, seconds a claim); every event of an aggregate before its head was
-- published, so its head probe seeks from there.
--
-- Ready (wire.ReadySQL) is restated where marked /* ready */ … /* /ready */:
-- the window's conditions must name the columns of outbox_claim_idx's
-- predicate for the planner to read that index (package doc, "SQL").
--
-- 1. win: the oldest claimable rows from outbox_claim_idx (available_at, seq),
--    which holds no failed, scheduled (past now()) or blocked row: trouble on
--    other aggregates is never read. Each row comes with its aggregate's head,
--    the first unpublished event in seq order (one probe of
--    outbox_aggregate_idx); rows whose head a batch in flight holds are passed
--    over before the limit, so they take no place in the window, but no more
--    than 4 × batch claimable rows are read, so a claim's cost stays bounded
--    when nearly every aggregate has a batch in flight. Window rows are locked
--    as they are kept (SKIP LOCKED): rows another claim holds, even one whose
--    process froze mid-transaction, are passed over too, so every claim sees a
--    window of rows nobody else is taking.
-- 2. A ready head is the aggregate's lock: whoever holds its row lock (FOR
--    UPDATE SKIP LOCKED) and finds it still claimable claims the run that starts
--    there, the head and the next events while each is claimable, as many as
--    the window held (a second probe, only for aggregates with more than their
--    head in the window); a concurrent claimer skips the whole aggregate.
--    Blocked rows may be part of a run: the hint never decides order. A row that
--    cannot be locked, or changed since the snapshot, ends the run, so a run is
--    always a prefix from the head; cutting runs in seq order keeps it so.
-- 3. A head that is failed, or scheduled more than a second ahead, blocks its
--    aggregate: its rows in the window are marked blocked (while that head is
--    held FOR SHARE, so whoever retries or claims it does so after this
--    commits) and leave the window.
-- Claimed rows say whether their aggregate has blocked rows (waiters): the
-- relay brings those back after marking the run. The last row is a summary:
-- rows marked blocked, and ready heads this claim could not lock (another
-- claim, or a session holding them), with their aggregates: the relay passes
-- those over for a while (without that, a session holding a hot aggregate's
-- head would stall every claim once that aggregate's rows fill the window) and
-- reports the heads it keeps failing to lock.
WITH cands AS MATERIALIZED (
    -- At most 4 × batch claimable rows are read (c0): when nearly every
    -- aggregate with work has a batch in flight (several relays, few
    -- aggregates) a window would otherwise read the whole backlog to find
    -- nothing; bounded, it comes back short and the relay waits for a batch to
    -- settle. They are read without locks; win locks them.
    SELECT c0.tid, c0.available_at, c0.event_id, c0.seq, c0.aggregate_type, c0.aggregate_id,
           h.tid AS head_tid, h.event_id AS head_id, h.seq AS head_seq, h.ok AS head_ok, h.blocker AS head_blocker
    FROM (
        -- The head probe seeks from the aggregate's last known head, or from
        -- the row itself if that is lower (a row committed late, which then
        -- may be its own head: its run and the run from the known head are
        -- claimed together and published in seq order). Row by row, in the
        -- window's order: no window function, which would sort the window
        -- and make every row's probe run before the first is locked.
        SELECT u.*, least(coalesce((@hints::jsonb -> u.aggregate_type ->> u.aggregate_id)::bigint, 0), u.seq) AS lo
        FROM (
            SELECT * FROM (
                -- From the position on: what is new since the last claim, and
                -- what it left.
                (SELECT r.ctid AS tid, r.event_id, r.seq, r.aggregate_type, r.aggregate_id, r.available_at
                 FROM {{.schema}}.outbox_event r
                 WHERE /* claimable */ r.published_at IS NULL AND r.failed_at IS NULL AND NOT r.blocked
                   AND r.available_at <= now()
                   AND (r.lease_until IS NULL OR r.lease_until <= now()) /* /claimable */
                   AND (r.available_at, r.seq) >= (@from_at::timestamptz, @from_seq::bigint)
                   AND (r.aggregate_type, r.aggregate_id) NOT IN (SELECT * FROM unnest(@skip_types::text[], @skip_ids::text[]))
                 ORDER BY r.available_at, r.seq
                 LIMIT 4 * @batch)
                UNION ALL
                -- Behind it: rows made claimable by a transaction the previous
                -- claim's snapshot did not see committed (outbox_ready_xid_idx).
                -- OFFSET 0 keeps the planner from reading these in order
                -- from outbox_claim_idx, from its start.
                -- Seeks of outbox_ready_xid_idx (its predicate names
                -- ready_xid, so no other read chooses it): the transactions
                -- from @xmax on, then each one of @xip. An OR of the two would
                -- read the whole index.
                (SELECT l.* FROM (
                    SELECT r.ctid AS tid, r.event_id, r.seq, r.aggregate_type, r.aggregate_id, r.available_at
                    FROM {{.schema}}.outbox_event r
                    WHERE /* claimable */ r.published_at IS NULL AND r.failed_at IS NULL AND NOT r.blocked
                      AND r.available_at <= now()
                      AND (r.lease_until IS NULL OR r.lease_until <= now()) /* /claimable */
                      AND r.ready_xid >= @xmax::xid8
                    UNION ALL
                    SELECT r.tid, r.event_id, r.seq, r.aggregate_type, r.aggregate_id, r.available_at
                    FROM pg_catalog.unnest(@xip::xid8[]) AS x(xid)
                    CROSS JOIN LATERAL (
                        SELECT r.ctid AS tid, r.event_id, r.seq, r.aggregate_type, r.aggregate_id, r.available_at
                        FROM {{.schema}}.outbox_event r
                        WHERE /* claimable */ r.published_at IS NULL AND r.failed_at IS NULL AND NOT r.blocked
                          AND r.available_at <= now()
                          AND (r.lease_until IS NULL OR r.lease_until <= now()) /* /claimable */
                          AND r.ready_xid = x.xid
                        OFFSET 0) r
                    OFFSET 0) l
                 WHERE (l.available_at, l.seq) < (@from_at::timestamptz, @from_seq::bigint)
                   AND (l.aggregate_type, l.aggregate_id) NOT IN (SELECT * FROM unnest(@skip_types::text[], @skip_ids::text[]))
                 ORDER BY l.available_at, l.seq
                 LIMIT 4 * @batch)) w
            ORDER BY w.available_at, w.seq
            LIMIT 4 * @batch) u) c0
    CROSS JOIN LATERAL (
        SELECT h.ctid AS tid, h.event_id, h.seq, h.lease_until,
               /* unpublished ready */ h.failed_at IS NULL AND h.available_at <= now()
                   AND (h.lease_until IS NULL OR h.lease_until <= now()) /* /unpublished ready */ AS ok,
               h.failed_at IS NOT NULL OR h.available_at > now() + interval '1 second' AS blocker
        FROM {{.schema}}.outbox_event h
        WHERE h.aggregate_type = c0.aggregate_type AND h.aggregate_id = c0.aggregate_id
          AND h.published_at IS NULL AND h.seq >= c0.lo
        ORDER BY h.seq
        LIMIT 1) h
    WHERE (h.lease_until IS NULL OR h.lease_until <= now())
    ORDER BY c0.available_at, c0.seq
), win AS MATERIALIZED (
    -- The candidates in order, each locked by ctid in its own subquery as the
    -- limit takes it, so only the rows taken are locked, and a row another
    -- transaction changed meanwhile is re-checked alone (a lock on a join
    -- re-runs the whole window's scans for each such row).
    SELECT k.event_id, k.seq, k.aggregate_type, k.aggregate_id,
           k.head_tid, k.head_id, k.head_seq, k.head_ok, k.head_blocker
    FROM cands k
    CROSS JOIN LATERAL (
        SELECT c.ctid FROM {{.schema}}.outbox_event c
        WHERE c.ctid = k.tid
          AND c.published_at IS NULL AND c.failed_at IS NULL AND NOT c.blocked
          AND (c.lease_until IS NULL OR c.lease_until <= now())
        FOR UPDATE SKIP LOCKED) c
    LIMIT @batch
), aggs AS MATERIALIZED (
    SELECT w.aggregate_type, w.aggregate_id, w.head_tid, w.head_id, w.head_seq, w.head_ok, w.head_blocker,
           count(*)::int AS k, min(w.seq) AS first_seq,
           -- One probe of outbox_blocked_idx per aggregate: a scalar subquery
           -- with LIMIT, because the planner may run an EXISTS here as a hashed
           -- subplan over every blocked row, on every claim (150,000 rows, 175
           -- of a 230 ms claim beside a storm).
           EXISTS (SELECT 1 FROM {{.schema}}.outbox_event b WHERE b.blocked AND b.published_at IS NULL)
               AND (SELECT true FROM {{.schema}}.outbox_event b
                   WHERE b.blocked AND b.published_at IS NULL
                     AND b.aggregate_type = w.aggregate_type AND b.aggregate_id = w.aggregate_id
                     AND b.seq >= w.head_seq
                   LIMIT 1) IS NOT NULL AS waiters
    FROM win w
    GROUP BY w.aggregate_type, w.aggregate_id, w.head_tid, w.head_id, w.head_seq, w.head_ok, w.head_blocker
), run AS MATERIALIZED (
    SELECT r.aggregate_type, r.aggregate_id, r.tid, r.event_id, r.seq, r.is_head, r.waiters,
           bool_and(r.ok) OVER (PARTITION BY r.aggregate_type, r.aggregate_id ORDER BY r.seq) AS ok
    FROM (
        -- The head alone, already read.
        SELECT a.aggregate_type, a.aggregate_id, a.head_tid AS tid, a.head_id AS event_id, a.head_seq AS seq,
               true AS is_head, a.waiters, true AS ok
        FROM aggs a
        WHERE a.head_ok AND a.k = 1 AND a.head_seq = a.first_seq
        UNION ALL
        -- A run: the head and the next events, k in all.
        SELECT a.aggregate_type, a.aggregate_id, e.tid, e.event_id, e.seq, e.seq = a.head_seq, a.waiters, e.ok
        FROM aggs a
        CROSS JOIN LATERAL (
            SELECT e.ctid AS tid, e.event_id, e.seq,
                   /* unpublished ready */ e.failed_at IS NULL AND e.available_at <= now()
                       AND (e.lease_until IS NULL OR e.lease_until <= now()) /* /unpublished ready */ AS ok
            FROM {{.schema}}.outbox_event e
            WHERE e.aggregate_type = a.aggregate_type AND e.aggregate_id = a.aggregate_id
              AND e.published_at IS NULL AND e.seq >= a.head_seq
            ORDER BY e.seq
            LIMIT a.k) e
        WHERE a.head_ok AND NOT (a.k = 1 AND a.head_seq = a.first_seq)) r
), cand AS MATERIALIZED (
    SELECT r.tid, r.event_id, r.aggregate_type, r.aggregate_id, r.seq, r.is_head, r.waiters
    FROM run r
    WHERE r.ok
    ORDER BY r.seq
    LIMIT @batch
), locked AS MATERIALIZED (
    -- Each candidate locked or not (l.tid NULL); got: it and every earlier
    -- candidate of its aggregate are locked, so the run is a prefix.
    SELECT r.event_id, r.aggregate_type, r.aggregate_id, r.is_head, r.waiters, l.tid,
           bool_and(l.tid IS NOT NULL) OVER (PARTITION BY r.aggregate_type, r.aggregate_id ORDER BY r.seq) AS got
    FROM cand r
    LEFT JOIN LATERAL (
        SELECT e.ctid AS tid
        FROM {{.schema}}.outbox_event e
        WHERE e.ctid = r.tid
          AND /* ready */ e.published_at IS NULL AND e.failed_at IS NULL AND e.available_at <= now()
          AND (e.lease_until IS NULL OR e.lease_until <= now()) /* /ready */
        FOR UPDATE SKIP LOCKED) l ON true
), blockers AS MATERIALIZED (
    SELECT b.aggregate_type, b.aggregate_id
    FROM aggs a
    CROSS JOIN LATERAL (
        SELECT e.aggregate_type, e.aggregate_id
        FROM {{.schema}}.outbox_event e
        WHERE e.ctid = a.head_tid
          AND e.published_at IS NULL
          AND (e.failed_at IS NOT NULL OR e.available_at > now() + interval '1 second')
          AND (e.lease_until IS NULL OR e.lease_until <= now())
        FOR SHARE SKIP LOCKED) b
    WHERE NOT a.head_ok AND a.head_blocker
), waiting AS MATERIALIZED (
    -- Each row by its id, in a subquery of its own: as a join, the planner
    -- (which believes a partial index of unpublished rows nearly empty) may
    -- read outbox_claim_seq_idx in full to meet the few rows here.
    SELECT e.event_id
    FROM blockers b
    JOIN win w ON b.aggregate_type = w.aggregate_type AND b.aggregate_id = w.aggregate_id
    CROSS JOIN LATERAL (
        SELECT e.event_id FROM {{.schema}}.outbox_event e
        WHERE e.event_id = w.event_id
          AND e.published_at IS NULL AND e.failed_at IS NULL AND NOT e.blocked
          AND (e.lease_until IS NULL OR e.lease_until <= now())
        FOR UPDATE SKIP LOCKED) e
), blocking AS (
    UPDATE {{.schema}}.outbox_event AS e
    SET blocked = true
    FROM waiting w
    WHERE e.event_id = w.event_id
    RETURNING 1
), claimed AS (
    UPDATE {{.schema}}.outbox_event AS e
    SET lease_token = @token,
        lease_until = now() + @lease_ms::float8 * interval '1 millisecond',
        lease_holder = @holder::text,
        attempts = e.attempts + 1,
        blocked = false
    FROM locked t
    WHERE t.got AND e.ctid = t.tid
    RETURNING e.event_id, e.seq, e.aggregate_type, e.aggregate_id, e.event_type,
        e.payload, -- The payload's size as JSON text, what the record carries; serialized
        -- only when it might matter: a stored (perhaps compressed) size under
        -- 1/1536 of @max_payload cannot make more than that as text (at most
        -- 256 times by decompression, 6 by escapes), and stands for it.
        CASE WHEN pg_catalog.pg_column_size(e.payload)::bigint * 1536 < @max_payload
             THEN pg_catalog.pg_column_size(e.payload)::bigint
             ELSE pg_catalog.octet_length(e.payload::text)::bigint END AS payload_bytes,
        e.created_at, e.attempts, e.topic, e.headers, t.waiters,
        -- for the order check (order_check.sql), which then reads no claimed row again
        e.writer_xid::text AS writer_xid, e.writer_snapshot::text AS writer_snapshot, e.correction_of IS NOT NULL AS corrected
)
SELECT false AS summary, c.event_id, c.seq, c.aggregate_type, c.aggregate_id, c.event_type,
       -- The payload within the claim's byte budget (Config.BatchBytes): NULL when it
       -- is larger than a record may be (@max_payload: the event fails as too large,
       -- never loaded), or when the payloads before it in seq order that fit a record
       -- already sum to @batch_bytes (the event is released and claimed again). The
       -- first always fits.
       CASE WHEN c.payload_bytes > @max_payload
                 OR pg_catalog.sum(CASE WHEN c.payload_bytes <= @max_payload THEN c.payload_bytes ELSE 0 END)
                        OVER (ORDER BY c.seq ROWS UNBOUNDED PRECEDING) - c.payload_bytes >= @batch_bytes
            THEN NULL ELSE c.payload END AS payload, c.payload_bytes, c.created_at, c.attempts, c.topic, c.headers,
       c.waiters, c.writer_xid, c.writer_snapshot, c.corrected, 0 AS blocked, NULL::uuid[] AS unlocked_heads, NULL::text[] AS unlocked_types, NULL::text[] AS unlocked_ids,
       NULL::text[] AS head_types, NULL::text[] AS head_ids, NULL::bigint[] AS head_seqs
FROM claimed c
UNION ALL
SELECT true, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       (SELECT count(*) FROM blocking)::int, u.heads, u.types, u.ids, h.types, h.ids, h.seqs
FROM (SELECT array_agg(l.event_id) AS heads, array_agg(l.aggregate_type) AS types, array_agg(l.aggregate_id) AS ids
      FROM locked l WHERE l.is_head AND l.tid IS NULL) u,
     -- The heads found, the next claim's hints.
     (SELECT array_agg(a.aggregate_type) AS types, array_agg(a.aggregate_id) AS ids, array_agg(a.head_seq) AS seqs
      FROM aggs a) h
