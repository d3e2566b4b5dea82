//! When to summarize: named profiles of thresholds and the verdict rules.

mod profile;
mod render;
mod verdict;

pub use profile::{OnUpstreamError, Profile, ProfileOverrides, Profiles, SummaryRole};
pub use render::render_text;
pub use verdict::{
    Assessment, PriorSummary, Trigger, Verdict, assess, decide, summary_message_tokens, verdict,
};
