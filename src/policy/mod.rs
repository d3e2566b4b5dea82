//! When to summarize: named profiles of thresholds and the verdict rules.

mod assess;
mod clear;
pub mod duration;
mod held_back;
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
pub use prior::{PriorSummary, summary_in_thread, summary_message, summary_message_tokens};
pub use profile::{OnUpstreamError, Profile, ProfileOverrides, SummaryRole, TruncateKeep};
pub use profiles::Profiles;
pub use render::render_text;
pub use strategy::Strategy;
pub use verdict::{
    LastSummary, Trigger, Verdict, decide, decide_knowing, verdict, with_provider_total,
};
