//! `POST /v1/verdict`: should this thread be summarized now?

use super::access::Access;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::extract::ApiJson;
use super::input::{SummaryInput, method, permitted};
use crate::compress::Judged;
use crate::error::Result;
use crate::guard::Caller;
use crate::policy::{self, ProfileOverrides, Verdict};
use crate::state::AppState;
use crate::thread::WireFormat;
use crate::upstream::{CountSource, Provenance};

super::access::routes! { Access::Api; post "/v1/verdict" => verdict }

super::input::thread_request! {
    /// A thread (`messages`, or `input` for a Responses API thread), and what
    /// to decide it with. Null means absent for every optional field.
    pub struct VerdictRequest {
        /// A profile name from `GET /v1/profiles` (default `default`); an
        /// unknown name is a 422 at `/profile`.
        pub profile: Option<String>,
        /// Single-field overrides of the profile.
        pub config: Option<ProfileOverrides>,
        /// The summary object a previous compression returned.
        pub summary: Option<SummaryInput>,
        /// `local`: the tokenizer; `provider`: the provider's counting
        /// endpoint for the total (see "Provider-exact counts" above).
        /// Absent: the profile's `count`.
        pub count: Option<CountSource>,
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct VerdictResponse {
    #[serde(flatten)]
    #[schema(inline)]
    pub verdict: Verdict,
    /// Where `total_tokens` comes from.
    #[serde(flatten)]
    #[schema(inline)]
    pub provenance: Provenance,
    /// The profile name used.
    pub profile: String,
    pub model: String,
    pub format: WireFormat,
    pub warnings: Vec<String>,
}

async fn verdict(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiJson(req): ApiJson<VerdictRequest>,
) -> Result<Response> {
    permitted(req.count, caller)?;
    permitted(req.config.as_ref().and_then(|c| c.count), caller)?;
    let (judged, (profile, model, format)) = app.cpu(move |app| judge(app, req, caller)).await?;
    let judged = app.meter.settle(judged).await;
    if wants_text(&headers) {
        let text = policy::render_text(&judged.verdict);
        return Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response());
    }
    Ok(Json(VerdictResponse {
        verdict: judged.verdict,
        provenance: judged.provenance,
        profile,
        model,
        format,
        warnings: judged.warnings,
    })
    .into_response())
}

/// The verdict, and the profile, model and format its answer names.
fn judge(
    app: &AppState,
    mut req: VerdictRequest,
    caller: Caller,
) -> Result<(Judged, (String, String, WireFormat))> {
    let profile = app
        .profiles
        .resolve(req.profile.as_deref(), req.config.as_ref())?;
    let method = method(req.method, req.chars_per_token, Some(&profile))?;
    let thread = req.thread().parse(&app.config.limits.thread())?;
    let prior = req.summary.map(|s| s.into_prior(&thread)).transpose()?;
    let spec = app.meter.spec(req.model.as_deref(), req.encoding, method);
    let source = req.count.unwrap_or(profile.count);
    let mut judged = app.meter.judge(
        &spec,
        &thread,
        profile,
        prior.as_ref(),
        (source, caller.provider),
    );
    judged.warnings.extend(super::input::empty_thread(&thread));
    let name = req.profile.unwrap_or_else(|| "default".into());
    Ok((judged, (name, spec.model, thread.format)))
}

/// `Accept: text/plain` (and not JSON) asks for the human status block.
fn wants_text(headers: &HeaderMap) -> bool {
    let accept = super::extract::text(headers, header::ACCEPT).unwrap_or_default();
    accept.contains("text/plain") && !accept.contains("application/json")
}
