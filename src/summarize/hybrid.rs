//! Hybrid summaries: the heuristic's sections, then an LLM narrative, half the room each.

use super::{SummaryRequest, UpstreamModel, Usage, heuristic, llm};
use crate::upstream::{Upstream, UpstreamError};

/// Header that separates a hybrid summary's sections from its narrative.
pub const NARRATIVE: &str = "### Narrative";

pub(super) async fn write(
    up: &Upstream,
    model: &UpstreamModel,
    req: &SummaryRequest,
    from: usize,
    prior: Option<String>,
) -> Result<(String, Usage), UpstreamError> {
    let half = req.settings.limit / 2;
    let (sections_prior, narrative_prior) = split(prior);
    let sections = {
        let (span, counter) = (req.span.clone(), req.settings.counter);
        super::cpu(move || {
            heuristic::heuristic(&span[from..], sections_prior.as_deref(), half, |s| {
                counter.text(s).tokens
            })
        })
        .await
    };
    let (story, usage) = llm::write(up, model, req, from, narrative_prior, half).await?;
    Ok((format!("{sections}\n\n{NARRATIVE}\n{story}"), usage))
}

/// A previous hybrid summary's sections and narrative (other text stands for both).
fn split(prior: Option<String>) -> (Option<String>, Option<String>) {
    let Some(p) = prior else { return (None, None) };
    match p.split_once(NARRATIVE) {
        Some((sections, story)) => (Some(sections.trim().into()), Some(story.trim().into())),
        None => (Some(p.clone()), Some(p)),
    }
}
