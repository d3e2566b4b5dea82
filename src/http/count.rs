//! `count: "provider"` on the thread endpoints: the provider's total in
//! place of the local one, or the local one with a warning.

use serde::Serialize;

use crate::state::AppState;
use crate::thread::Thread;
use crate::upstream::{CountCall, CountError, CountSource};

/// A provider count to ask for, prepared on the CPU pool with the thread.
pub type Ask = Result<CountCall, CountError>;

/// The request for `thread` when `source` asks the provider.
pub fn prepare(app: &AppState, source: CountSource, thread: &Thread, model: &str) -> Option<Ask> {
    (source == CountSource::Provider).then(|| app.provider_count.prepare(thread, model))
}

/// The provider's total, or the warning that goes with the local one.
pub async fn ask(app: &AppState, ask: Ask) -> Result<u64, String> {
    let call = ask.map_err(|e| e.warning())?;
    app.provider_count
        .count(&call)
        .await
        .map_err(|e| e.warning())
}

/// Where an answer's total came from, and the local one it replaced.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Provenance {
    /// `provider` when `total_tokens` is the provider's count.
    pub source: CountSource,
    /// The local estimate, when `total_tokens` is the provider's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_total_tokens: Option<u64>,
}
