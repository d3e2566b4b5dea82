-- Summary cache shared by every replica (see src/cache/postgres.rs).
--
-- One row per content hash. A row is written once (the first writer wins, so
-- every replica serves the same bytes); afterwards only the hit bookkeeping
-- changes. Times come from the database clock (now()), never from a replica,
-- so clock skew between replicas cannot expire rows or leases early.
CREATE TABLE summary_cache (
    key                 TEXT        PRIMARY KEY,          -- hex SHA-256 content hash
    prefix_hash         TEXT        NOT NULL,             -- rolling hash of the covered span
    span_len            BIGINT      NOT NULL,             -- messages in that span
    content             TEXT        NOT NULL,
    messages_summarized BIGINT      NOT NULL,
    token_count         BIGINT      NOT NULL,
    strategy            TEXT        NOT NULL,
    model               TEXT,
    created_at          TEXT        NOT NULL,             -- RFC 3339, returned verbatim
    stored_at           TIMESTAMPTZ NOT NULL DEFAULT now(), -- TTL is measured from here
    hit_count           BIGINT      NOT NULL DEFAULT 0,
    last_hit_at         TIMESTAMPTZ NOT NULL DEFAULT now()  -- stored or last served; eviction order
);

-- find_prefix: prefix_hash = ANY(...) ORDER BY span_len DESC.
CREATE INDEX summary_cache_prefix_idx ON summary_cache (prefix_hash, span_len DESC);
-- prune: expired rows, then least recently hit beyond the row cap.
CREATE INDEX summary_cache_stored_at_idx ON summary_cache (stored_at);
CREATE INDEX summary_cache_last_hit_at_idx ON summary_cache (last_hit_at);

-- Cross-replica single flight: a row means "holder is computing key until
-- expires_at". Taken with INSERT .. ON CONFLICT, taken over once expired.
CREATE TABLE summary_claims (
    key        TEXT        PRIMARY KEY,
    holder     TEXT        NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX summary_claims_expires_at_idx ON summary_claims (expires_at);
