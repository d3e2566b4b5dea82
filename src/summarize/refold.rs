//! Whether a summary that extends a previous one re-folded it: the one
//! check behind the answer's `…forced a re-fold…` warning, whichever writer
//! appends.

use super::heuristic;
use super::hybrid::NARRATIVE;
use super::iterations;

/// Whether `content`, written to extend `prior`, re-folded it: where its
/// writer appends (an injection's list, the heuristic's sections), it does
/// not start with `prior` byte for byte, so a provider's prompt cache
/// misses from there. An LLM's or a hybrid's summary is rewritten each time.
pub fn refolded(prior: &str, content: &str) -> bool {
    let appends = |t: &str| heuristic::appends(t) && !t.contains(NARRATIVE);
    let sections = appends(prior) && appends(content);
    (iterations::lists(prior) || sections) && !content.starts_with(prior.trim_end())
}
