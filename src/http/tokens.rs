//! `POST /v1/tokens`: count a thread or a text as the provider would.

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::ApiJson;
use super::input::{MethodName, method, parse_thread};
use crate::error::{ApiError, Result};
use crate::state::AppState;
use crate::thread::{Role, WireFormat};
use crate::tokens::{CountSpec, Encoding};

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
    let response = app.cpu(move |app| count_request(app, req, spec)).await?;
    Ok(Json(response))
}

fn count_request(app: &AppState, req: TokensRequest, spec: CountSpec) -> Result<TokensResponse> {
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
            if req.system.is_some() || req.tools.is_some() || req.format.is_some() {
                return Err(ApiError::field(
                    "/text",
                    "`system`, `tools` and `format` describe a thread; they do not apply to `text`",
                ));
            }
            app.config.thread_limits().check_text(&text)?;
            let c = counter.text(&text);
            counted(c.tokens);
            Ok(base(c.exact, c.tokens, Vec::new(), 0, 0, None))
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
            Ok(base(
                count.exact,
                count.total,
                per,
                count.tools,
                crate::tokens::REPLY_PRIMING,
                Some(thread.format),
            ))
        }
    }
}
