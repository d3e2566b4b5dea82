-- The ledger: one row per proxied answer the provider billed (see
-- src/cache/ledger.rs), under the conversation's name
-- (`x-condense-conversation`). Token counts throughout; `cf_*` is the same
-- turn as it would have been billed without condense (docs/proxy.md, "The
-- provider's bill"). Pruned with the summaries (same TTL and row cap).
CREATE TABLE ledger (
    id                  BIGSERIAL   PRIMARY KEY,          -- the turns' order
    conversation        TEXT        NOT NULL,             -- 32 hex digits
    at                  TIMESTAMPTZ NOT NULL DEFAULT now(),
    route               TEXT        NOT NULL,             -- e.g. /v1/messages
    provider            TEXT        NOT NULL,             -- anthropic, openai, responses
    model               TEXT,                             -- as the answer names it
    sent_tokens         BIGINT,                           -- the client's thread (condense's count)
    forwarded_tokens    BIGINT,                           -- what went to the provider
    input               BIGINT      NOT NULL,             -- billed at the full price
    cache_read          BIGINT      NOT NULL,
    cache_write_5m      BIGINT      NOT NULL,
    cache_write_1h      BIGINT      NOT NULL,
    output              BIGINT      NOT NULL,             -- reasoning included
    reasoning           BIGINT      NOT NULL,
    dropped_items       BIGINT      NOT NULL,             -- input_transformations
    summary_call_tokens BIGINT,                           -- NULL: no summary in play
    cf_input            BIGINT      NOT NULL,
    cf_cache_read       BIGINT      NOT NULL,
    cf_cache_write_5m   BIGINT      NOT NULL,
    cf_cache_write_1h   BIGINT      NOT NULL
);

CREATE INDEX ledger_conversation_idx ON ledger (conversation, id);
CREATE INDEX ledger_at_idx ON ledger (at);
