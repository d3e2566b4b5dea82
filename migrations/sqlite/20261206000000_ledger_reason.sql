-- Why condense compressed the turn's thread (the compression's `reason`:
-- `messages`, `cold_cache`, `continued`...); NULL when it went as sent.
ALTER TABLE ledger ADD COLUMN reason TEXT;
