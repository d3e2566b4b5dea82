-- Continuity mode: the caller's messages (counted from the end of the pinned
-- prefix) in the request that first carried this summary. Messages from
-- there on were produced after it, so a provider that binds thinking to its
-- prefix (Anthropic) still accepts their thinking; older ones are removed.
-- NULL for rows written outside continuity mode or before this column.
ALTER TABLE summary_cache ADD COLUMN in_use_from BIGINT;
