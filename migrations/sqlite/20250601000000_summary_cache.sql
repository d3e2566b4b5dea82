-- Summary cache in a local SQLite file (see src/cache/sqlite.rs).
--
-- Same shape as the PostgreSQL schema; times are Unix milliseconds (INTEGER)
-- taken from the clock of the one host that owns the file.
CREATE TABLE summary_cache (
    key                 TEXT    PRIMARY KEY NOT NULL,  -- hex SHA-256 content hash
    prefix_hash         TEXT    NOT NULL,              -- rolling hash of the covered span
    span_len            INTEGER NOT NULL,              -- messages in that span
    content             TEXT    NOT NULL,
    messages_summarized INTEGER NOT NULL,
    token_count         INTEGER NOT NULL,
    strategy            TEXT    NOT NULL,
    model               TEXT,
    created_at          TEXT    NOT NULL,              -- RFC 3339, returned verbatim
    stored_at           INTEGER NOT NULL,              -- Unix ms; TTL is measured from here
    hit_count           INTEGER NOT NULL DEFAULT 0,
    last_hit_at         INTEGER NOT NULL               -- Unix ms, stored or last served
);

CREATE INDEX summary_cache_prefix_idx ON summary_cache (prefix_hash, span_len DESC);
CREATE INDEX summary_cache_stored_at_idx ON summary_cache (stored_at);
CREATE INDEX summary_cache_last_hit_at_idx ON summary_cache (last_hit_at);

CREATE TABLE summary_claims (
    key        TEXT    PRIMARY KEY NOT NULL,
    holder     TEXT    NOT NULL,
    expires_at INTEGER NOT NULL                        -- Unix ms
);

CREATE INDEX summary_claims_expires_at_idx ON summary_claims (expires_at);
