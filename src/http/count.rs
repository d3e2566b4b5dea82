//! `count: "provider"` on the thread endpoints: the provider's total in
//! place of the local one, or the local one with a warning.

use serde::Serialize;

use crate::error::ApiError;
use crate::guard::Caller;
use crate::state::AppState;
use crate::thread::Thread;
use crate::upstream::{CountCall, CountError, CountSource};

/// A provider count to ask for, prepared on the CPU pool with the thread.
pub type Ask = Result<CountCall, CountError>;

/// Who asked for the provider's count: the request's own `count`, or the
/// profile's (the operator's choice, so a caller is not refused for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskedBy {
    Request,
    Profile,
}

/// The request for `thread` when `source` asks the provider. The
/// operator's provider key pays for it, so the caller needs the `provider`
/// permission: a request that asks without it is refused (403), a
/// profile's ask falls back to the local estimate with a warning.
pub fn prepare(
    app: &AppState,
    (source, by): (CountSource, AskedBy),
    caller: Caller,
    thread: &Thread,
    model: &str,
) -> Result<Option<Ask>, ApiError> {
    if source != CountSource::Provider {
        return Ok(None);
    }
    if !caller.provider {
        return match by {
            AskedBy::Request => permitted(Some(source), caller).map(|()| None),
            AskedBy::Profile => Ok(Some(Err(CountError::NotPermitted))),
        };
    }
    Ok(Some(app.provider_count.prepare(thread, model)))
}

/// The request's own `count` (its `count`, or its `config.count`) is one
/// its caller may ask for: checked before any work, and again by [`prepare`].
pub fn permitted(requested: Option<CountSource>, caller: Caller) -> Result<(), ApiError> {
    if requested == Some(CountSource::Provider) && !caller.provider {
        return Err(ApiError::Forbidden(
            "`count: \"provider\"` needs an API key with the `provider` permission (the operator's provider key pays for the count); leave `count` out for the local count".into(),
        ));
    }
    Ok(())
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
