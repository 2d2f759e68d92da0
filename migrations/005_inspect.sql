-- inspect: an event's replays (Detail), and skipped events in the archive (they are
-- not published, and retention never deletes them). Neither column is touched by the
-- claim or the mark, so the claim's UPDATE stays HOT.
CREATE INDEX IF NOT EXISTS outbox_replay_of_idx
    ON {{.schema}}.outbox_event (replay_of)
    WHERE replay_of IS NOT NULL;

CREATE INDEX IF NOT EXISTS outbox_event_archive_replay_of_idx
    ON {{.schema}}.outbox_event_archive (replay_of)
    WHERE replay_of IS NOT NULL;

CREATE INDEX IF NOT EXISTS outbox_event_archive_skipped_idx
    ON {{.schema}}.outbox_event_archive (archived_at)
    WHERE published_at IS NULL;
