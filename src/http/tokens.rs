//! `POST /v1/tokens`: count a thread or a text as the provider would.

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::count::{self, Ask, Provenance};
use super::extract::ApiJson;
use super::input::{MethodName, method, parse_thread};
use crate::error::{ApiError, Result};
use crate::state::AppState;
use crate::thread::{Role, WireFormat};
use crate::tokens::{CountSpec, Encoding};
use crate::upstream::CountSource;

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/tokens", post(count))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokensRequest {
    /// Model whose tokenizer and window apply (default from configuration).
    pub model: Option<String>,
    /// Overrides the model's encoding.
    pub encoding: Option<Encoding>,
    pub method: Option<MethodName>,
    pub chars_per_token: Option<f64>,
    /// A bare text to count, instead of a thread.
    pub text: Option<String>,
    pub messages: Option<Vec<Value>>,
    pub system: Option<Value>,
    pub tools: Option<Value>,
    pub format: Option<WireFormat>,
    /// `local` (default): the tokenizer; `provider`: the provider's
    /// counting endpoint for the total (threads only).
    pub count: Option<CountSource>,
}

#[derive(Debug, Serialize)]
pub struct MessageTokens {
    /// Index into the request's `messages`; null for Anthropic's top-level `system`.
    pub index: Option<usize>,
    pub role: Role,
    /// The message's tokens including its per-message overhead.
    pub tokens: usize,
}

#[derive(Debug, Serialize)]
pub struct TokensResponse {
    pub model: String,
    pub encoding: Encoding,
    pub method: &'static str,
    /// True only when the count equals what the provider bills.
    pub exact: bool,
    pub total_tokens: usize,
    /// Where `total_tokens` comes from; per-message counts stay local.
    #[serde(flatten)]
    pub provenance: Provenance,
    pub messages: Vec<MessageTokens>,
    pub tools_tokens: usize,
    /// Tokens that prime the reply (3 for a thread, 0 for a text).
    pub reply_priming_tokens: usize,
    pub context_window: u64,
    pub format: Option<WireFormat>,
    pub warnings: Vec<String>,
}

async fn count(
    State(app): State<AppState>,
    ApiJson(req): ApiJson<TokensRequest>,
) -> Result<Json<TokensResponse>> {
    let method = method(req.method, req.chars_per_token)?;
    let spec = CountSpec::resolve(
        &app.models,
        &app.config.default_model,
        req.model.as_deref(),
        req.encoding,
        method,
    );
    let (mut response, ask) = app.cpu(move |app| count_request(app, req, spec)).await?;
    if let Some(ask) = ask {
        match count::ask(&app, ask).await {
            Ok(total) => {
                response.provenance = Provenance {
                    source: CountSource::Provider,
                    local_total_tokens: Some(response.total_tokens as u64),
                };
                response.total_tokens = total as usize;
                response.exact = true;
            }
            Err(warning) => response.warnings.push(warning),
        }
    }
    Ok(Json(response))
}

/// The local count, and the provider count to ask for when the request
/// wants one.
fn count_request(
    app: &AppState,
    req: TokensRequest,
    spec: CountSpec,
) -> Result<(TokensResponse, Option<Ask>)> {
    let source = req.count.unwrap_or_default();
    let counter = spec.counter(app.encoders);
    let method_name = spec.method.as_str();
    let counted = |tokens| {
        app.metrics
            .tokens_counted(spec.encoding.as_str(), method_name, tokens)
    };
    let base = |exact, total_tokens, messages, tools_tokens, reply_priming_tokens, format| {
        TokensResponse {
            model: spec.model.clone(),
            encoding: spec.encoding,
            method: method_name,
            exact,
            total_tokens,
            provenance: Provenance::default(),
            messages,
            tools_tokens,
            reply_priming_tokens,
            context_window: spec.context_window,
            format,
            warnings: spec.warnings.clone(),
        }
    };
    match (req.text, req.messages) {
        (Some(_), Some(_)) => Err(ApiError::field(
            "/text",
            "send either `text` or `messages`, not both",
        )),
        (None, None) => Err(ApiError::field(
            "/messages",
            "send `messages` (a thread) or `text`",
        )),
        (Some(text), None) => {
            if source == CountSource::Provider {
                return Err(ApiError::field(
                    "/count",
                    "`provider` counts a thread: send `messages`, or leave `count` out for a text",
                ));
            }
            if req.system.is_some() || req.tools.is_some() || req.format.is_some() {
                return Err(ApiError::field(
                    "/text",
                    "`system`, `tools` and `format` describe a thread; they do not apply to `text`",
                ));
            }
            app.config.thread_limits().check_text(&text)?;
            let c = counter.text(&text);
            counted(c.tokens);
            Ok((base(c.exact, c.tokens, Vec::new(), 0, 0, None), None))
        }
        (None, Some(messages)) => {
            let thread = parse_thread(
                &app.config.thread_limits(),
                req.format,
                messages,
                req.system,
                req.tools,
            )?;
            let count = counter.thread(&thread);
            counted(count.total);
            let system = count.system.map(|tokens| MessageTokens {
                index: None,
                role: Role::System,
                tokens,
            });
            let per = system
                .into_iter()
                .chain(thread.messages.iter().zip(&count.messages).enumerate().map(
                    |(i, (m, &tokens))| MessageTokens {
                        index: Some(i),
                        role: m.role,
                        tokens,
                    },
                ))
                .collect();
            let ask = count::prepare(app, source, &thread, &spec.model);
            let response = base(
                count.exact,
                count.total,
                per,
                count.tools,
                crate::tokens::REPLY_PRIMING,
                Some(thread.format),
            );
            Ok((response, ask))
        }
    }
}
