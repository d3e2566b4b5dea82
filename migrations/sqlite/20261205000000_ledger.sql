-- The ledger: one row per proxied answer the provider billed (see
-- src/cache/ledger.rs), under the conversation's name
-- (`x-condense-conversation`). Token counts throughout; `cf_*` is the same
-- turn as it would have been billed without condense (docs/proxy.md, "The
-- provider's bill"). Pruned with the summaries (same TTL and row cap).
-- Same shape as the PostgreSQL schema; times are Unix milliseconds.
CREATE TABLE ledger (
    id                  INTEGER     PRIMARY KEY AUTOINCREMENT, -- the turns' order
    conversation        TEXT        NOT NULL,             -- 32 hex digits
    at                  INTEGER     NOT NULL,             -- Unix ms
    route               TEXT        NOT NULL,             -- e.g. /v1/messages
    provider            TEXT        NOT NULL,             -- anthropic, openai, responses
    model               TEXT,                             -- as the answer names it
    sent_tokens         INTEGER,                          -- the client's thread (condense's count)
    forwarded_tokens    INTEGER,                          -- what went to the provider
    input               INTEGER     NOT NULL,             -- billed at the full price
    cache_read          INTEGER     NOT NULL,
    cache_write_5m      INTEGER     NOT NULL,
    cache_write_1h      INTEGER     NOT NULL,
    output              INTEGER     NOT NULL,             -- reasoning included
    reasoning           INTEGER     NOT NULL,
    dropped_items       INTEGER     NOT NULL,             -- input_transformations
    summary_call_tokens INTEGER,                          -- NULL: no summary in play
    cf_input            INTEGER     NOT NULL,
    cf_cache_read       INTEGER     NOT NULL,
    cf_cache_write_5m   INTEGER     NOT NULL,
    cf_cache_write_1h   INTEGER     NOT NULL
);

CREATE INDEX ledger_conversation_idx ON ledger (conversation, id);
CREATE INDEX ledger_at_idx ON ledger (at);
