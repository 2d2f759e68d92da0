-- outbox_attempt: the history of an event's attempts that did not end
-- published, one row each, written by the relay's settle in the same statement
-- that schedules, fails or releases the event (relay/sql/settle.sql); a batch
-- that is published whole writes nothing here. The operators' actions on an
-- event are in outbox_audit, and the console and trace show both as one
-- timeline.
--
-- attempt: the event's attempts counter when it was tried (claims count it),
-- so a retried event, which starts over, shows 1 again. lease_holder: the
-- relay that tried it (host:pid). class: what went wrong, as the relay
-- classifies it (retriable, permanent, no-topic, cancelled, out-of-order,
-- unreachable); outcome: what the relay did (schedule, fail, wait, release);
-- kafka_code: Kafka's error code, when Kafka answered with one; backoff_ms:
-- the delay before the next try (NULL when there is none).
--
-- Bounded: a statement trigger (functions/outboxtop_attempt_prune.sql) keeps
-- the newest 20 rows of each event it adds to; the rest of an event's history
-- goes when its archived row is deleted by retention
-- (functions/outboxtop_delete_archived.sql). No foreign key: an event moves
-- between outbox_event and the archive and keeps its history.
CREATE TABLE IF NOT EXISTS {{.schema}}.outbox_attempt (
    event_id     uuid NOT NULL,
    attempt_id   bigint GENERATED ALWAYS AS IDENTITY,
    at           timestamptz NOT NULL DEFAULT now(),
    attempt      integer NOT NULL,
    lease_holder text,
    class        text NOT NULL,
    outcome      text NOT NULL,
    error        text,
    kafka_code   smallint,
    backoff_ms   bigint,
    PRIMARY KEY (event_id, attempt_id)
);

-- Upgrading keeps every role working: the relays, granted outbox_event's lease
-- columns, get to add history (column-level INSERT: never the id or the time,
-- which the defaults set), and the roles that read the audit (the consoles)
-- read the history too. Only the prune trigger deletes; no role but the owner
-- updates. These are the grants `outboxtop grants` prints.
DO $grant$
DECLARE
    r regrole;
BEGIN
    FOR r IN
        SELECT DISTINCT (a.acl).grantee::regrole
        FROM (SELECT aclexplode(attacl) AS acl FROM pg_attribute
              WHERE attrelid = '{{.schema}}.outbox_event'::regclass AND attname = 'lease_token'
                AND attacl IS NOT NULL) a
        WHERE (a.acl).privilege_type = 'UPDATE' AND (a.acl).grantee <> 0
    LOOP
        EXECUTE format('GRANT INSERT (event_id, attempt, lease_holder, class, outcome, error, kafka_code, backoff_ms) '
            'ON {{.schema}}.outbox_attempt TO %s', r);
    END LOOP;
END
$grant$;

DO $read$
DECLARE
    r regrole;
BEGIN
    FOR r IN
        SELECT DISTINCT (a.acl).grantee::regrole
        FROM (SELECT aclexplode(relacl) AS acl FROM pg_class
              WHERE oid = '{{.schema}}.outbox_audit'::regclass AND relacl IS NOT NULL) a
        WHERE (a.acl).privilege_type = 'SELECT' AND (a.acl).grantee <> 0
          AND (a.acl).grantee <> (SELECT relowner FROM pg_class WHERE oid = '{{.schema}}.outbox_audit'::regclass)
    LOOP
        EXECUTE format('GRANT SELECT ON {{.schema}}.outbox_attempt TO %s', r);
    END LOOP;
END
$read$;
