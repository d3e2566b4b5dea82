//! `POST /v1/verdict`: should this thread be summarized now?

use super::access::Access;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::count::{self, Ask, AskedBy, Provenance};
use super::extract::ApiJson;
use super::input::{MethodName, SummaryInput, ThreadFields, method_or_profile};
use crate::error::Result;
use crate::guard::Caller;
use crate::policy::{self, Profile, ProfileOverrides, Verdict};
use crate::state::AppState;
use crate::thread::{WireFormat, compact};
use crate::tokens::{CountSpec, Encoding};
use crate::upstream::CountSource;

super::access::routes! { Access::Api; post "/v1/verdict" => verdict }

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictRequest {
    #[serde(default, deserialize_with = "compact::values")]
    pub messages: Option<Vec<Value>>,
    #[serde(default, deserialize_with = "compact::value")]
    pub system: Option<Value>,
    /// A Responses API thread: its items and instructions.
    #[serde(default, deserialize_with = "compact::value")]
    pub input: Option<Value>,
    #[serde(default, deserialize_with = "compact::value")]
    pub instructions: Option<Value>,
    #[serde(default, deserialize_with = "compact::value")]
    pub tools: Option<Value>,
    pub format: Option<WireFormat>,
    #[serde(default, deserialize_with = "super::input::model_name")]
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
    /// `local`: the tokenizer; `provider`: the provider's counting
    /// endpoint for the total. Absent: the profile's `count`.
    pub count: Option<CountSource>,
}

#[derive(Debug, Serialize)]
pub struct VerdictResponse {
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Where `total_tokens` comes from.
    #[serde(flatten)]
    pub provenance: Provenance,
    pub profile: String,
    pub model: String,
    pub format: WireFormat,
    pub warnings: Vec<String>,
}

async fn verdict(
    State(app): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<VerdictRequest>,
) -> Result<Response> {
    // No caller means the gates did not run: no permission (fail closed).
    let caller = caller.map_or(Caller::ANONYMOUS, |c| c.0);
    count::permitted(req.count, caller)?;
    count::permitted(req.config.as_ref().and_then(|c| c.count), caller)?;
    let Decided {
        mut response,
        profile,
        whole_thread,
        ask,
    } = app.cpu(move |app| decide(app, req, caller)).await?;
    if let Some(ask) = ask {
        match count::ask(&app, ask).await {
            Ok(total) => provider_total(&mut response, &profile, whole_thread, total),
            Err(warning) => response.warnings.push(warning),
        }
    }
    if wants_text(&headers) {
        let text = policy::render_text(&response.verdict);
        return Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response());
    }
    Ok(Json(response).into_response())
}

/// A verdict on the local count, and what the provider count needs.
struct Decided {
    response: VerdictResponse,
    profile: Profile,
    /// The local count of the whole thread, when a `summary` object makes
    /// what the verdict measures differ from the thread as sent.
    whole_thread: Option<u64>,
    ask: Option<Ask>,
}

/// The verdict decided again on the provider's count.
fn provider_total(
    response: &mut VerdictResponse,
    profile: &Profile,
    whole_thread: Option<u64>,
    provider: u64,
) {
    let local = response.verdict.total_tokens;
    response.verdict =
        policy::with_provider_total(&response.verdict, profile, provider, whole_thread);
    response.provenance = Provenance {
        source: CountSource::Provider,
        local_total_tokens: Some(local),
    };
    if whole_thread.is_some() {
        response.warnings.push(
            "the provider counted the whole thread; the messages the `summary` object covers \
             and the summary that replaces them are local estimates"
                .to_string(),
        );
    }
}

fn decide(app: &AppState, req: VerdictRequest, caller: Caller) -> Result<Decided> {
    let count_overridden = req.config.as_ref().is_some_and(|c| c.count.is_some());
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
    .parse(&app.config.limits.thread())?;
    let prior = req.summary.map(|s| s.into_prior(&thread)).transpose()?;
    let mut warnings = Vec::new();
    let in_thread =
        policy::summary_in_thread(&thread, thread.pinned_len(), prior.as_ref(), &mut warnings)
            .is_some();
    let spec = CountSpec::resolve(
        &app.models,
        &app.config.models.default_model,
        req.model.as_deref(),
        req.encoding,
        method,
    );
    let window = profile.window_for(&spec);
    let counter = spec.counter(app.encoders);
    let verdict = policy::verdict(&thread, &counter, &profile, window, prior.as_ref());
    app.metrics.tokens_counted(
        spec.encoding.as_str(),
        spec.method.as_str(),
        verdict.total_tokens as usize,
    );
    let source = match req.count {
        Some(source) => (source, AskedBy::Request),
        None if count_overridden => (profile.count, AskedBy::Request),
        None => (profile.count, AskedBy::Profile),
    };
    let ask = count::prepare(app, source, caller, &thread, &spec.model)?;
    // Only a `summary` object makes what the verdict measures differ from
    // the whole thread (a summary message in the thread is what is sent).
    let whole_thread = (ask.is_some() && prior.is_some() && !in_thread)
        .then(|| counter.thread(&thread).total as u64);
    let response = VerdictResponse {
        verdict,
        provenance: Provenance::default(),
        profile: req.profile.unwrap_or_else(|| "default".into()),
        model: spec.model,
        format: thread.format,
        warnings: spec.warnings.into_iter().chain(warnings).collect(),
    };
    Ok(Decided {
        response,
        profile,
        whole_thread,
        ask,
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
