//! When to summarize: named profiles of thresholds and the verdict rules.

mod assess;
mod clear;
pub mod duration;
mod overlay;
mod payback;
mod prior;
mod profile;
mod profiles;
mod render;
mod strategy;
mod verdict;

pub use assess::{Assessment, assess};
pub use clear::{ClearOverrides, ClearSettings, ClearTrigger, DEFAULT_PLACEHOLDER};
pub use prior::{summary_in_thread, summary_message};
pub use profile::{OnUpstreamError, Profile, ProfileOverrides, SummaryRole, TruncateKeep};
pub use profiles::Profiles;
pub use render::render_text;
pub use strategy::Strategy;
pub use verdict::{
    LastSummary, PriorSummary, Trigger, Verdict, decide, decide_knowing, summary_message_tokens,
    verdict, with_provider_total,
};
