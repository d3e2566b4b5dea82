-- The summary's fidelity receipt (which of its span's anchors it kept, see
-- src/summarize/receipt.rs) as JSON text, so a hit reports what the first
-- write did. NULL for rows written before this column.
ALTER TABLE summary_cache ADD COLUMN fidelity TEXT;
