//! `POST /v1/verdict`: should this thread be summarized now?

use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::ApiJson;
use super::input::{MethodName, SummaryInput, ThreadFields, holds_summary, method_or_profile};
use crate::error::Result;
use crate::policy::{self, ProfileOverrides, Verdict};
use crate::state::AppState;
use crate::thread::WireFormat;
use crate::tokens::{CountSpec, Encoding};

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/verdict", post(verdict))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictRequest {
    pub messages: Option<Vec<Value>>,
    pub system: Option<Value>,
    /// A Responses API thread: its items and instructions.
    pub input: Option<Value>,
    pub instructions: Option<Value>,
    pub tools: Option<Value>,
    pub format: Option<WireFormat>,
    pub model: Option<String>,
    pub encoding: Option<Encoding>,
    /// `bpe` (default) or `chars` (an estimator's `ceil(chars / chars_per_token)`).
    pub method: Option<MethodName>,
    pub chars_per_token: Option<f64>,
    /// Profile name (default `default`).
    pub profile: Option<String>,
    /// Single-field overrides of the profile.
    pub config: Option<ProfileOverrides>,
    /// The summary object a previous compression returned.
    pub summary: Option<SummaryInput>,
}

#[derive(Debug, Serialize)]
pub struct VerdictResponse {
    #[serde(flatten)]
    pub verdict: Verdict,
    pub profile: String,
    pub model: String,
    pub format: WireFormat,
    pub warnings: Vec<String>,
}

async fn verdict(
    State(app): State<AppState>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<VerdictRequest>,
) -> Result<Response> {
    let response = app.cpu(move |app| decide(app, req)).await?;
    if wants_text(&headers) {
        let text = policy::render_text(&response.verdict);
        return Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response());
    }
    Ok(Json(response).into_response())
}

fn decide(app: &AppState, req: VerdictRequest) -> Result<VerdictResponse> {
    let profile = app
        .profiles
        .resolve(req.profile.as_deref(), req.config.as_ref())?;
    let method = method_or_profile(req.method, req.chars_per_token, &profile)?;
    let thread = ThreadFields {
        format: req.format,
        messages: req.messages,
        system: req.system,
        input: req.input,
        instructions: req.instructions,
        tools: req.tools,
    }
    .parse(&app.config.thread_limits())?;
    let prior = req.summary.map(|s| s.into_prior(&thread)).transpose()?;
    let mut warnings = Vec::new();
    if prior.is_some() && holds_summary(&thread) {
        warnings.push(
            "the thread holds a summary message; the `summary` object was ignored".to_string(),
        );
    }
    let spec = CountSpec::resolve(
        &app.models,
        &app.config.default_model,
        req.model.as_deref(),
        req.encoding,
        method,
    );
    let window = profile.context_window.unwrap_or(spec.context_window);
    let verdict = policy::verdict(
        &thread,
        &spec.counter(app.encoders),
        &profile,
        window,
        prior.as_ref(),
    );
    app.metrics.tokens_counted(
        spec.encoding.as_str(),
        spec.method.as_str(),
        verdict.total_tokens as usize,
    );
    Ok(VerdictResponse {
        verdict,
        profile: req.profile.unwrap_or_else(|| "default".into()),
        model: spec.model,
        format: thread.format,
        warnings: spec.warnings.into_iter().chain(warnings).collect(),
    })
}

/// `Accept: text/plain` (and not JSON) asks for the human status block.
fn wants_text(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    accept.contains("text/plain") && !accept.contains("application/json")
}
