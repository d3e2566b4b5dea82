//! `POST /v1/tokens`: count a thread or a text as the provider would.

use super::routes::Access;
use axum::extract::State;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::count::{self, Ask, AskedBy, Provenance};
use super::extract::ApiJson;
use super::input::{MethodName, ThreadFields, method};
use crate::error::{ApiError, Result};
use crate::guard::Caller;
use crate::state::AppState;
use crate::thread::{Role, WireFormat, compact};
use crate::tokens::{CountSpec, Encoding};
use crate::upstream::CountSource;

/// Said with every count of a Responses thread.
const RESPONSES_ESTIMATE: &str = "a Responses API thread: texts are counted with the model's tokenizer, but OpenAI publishes no per-item overhead, so the item framing (3 tokens an item, as for chat messages) is an estimate; `count: \"provider\"` asks OpenAI's input_tokens endpoint for the exact number";

super::routes::routes! { Access::Api; post "/v1/tokens" => count }

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokensRequest {
    /// Model whose tokenizer and window apply (default from configuration).
    #[serde(default, deserialize_with = "super::input::model_name")]
    pub model: Option<String>,
    /// Overrides the model's encoding.
    pub encoding: Option<Encoding>,
    pub method: Option<MethodName>,
    pub chars_per_token: Option<f64>,
    /// A bare text to count, instead of a thread.
    pub text: Option<String>,
    #[serde(default, deserialize_with = "compact::values")]
    pub messages: Option<Vec<Value>>,
    #[serde(default, deserialize_with = "compact::value")]
    pub system: Option<Value>,
    /// A Responses API thread: its items...
    #[serde(default, deserialize_with = "compact::value")]
    pub input: Option<Value>,
    /// ...and its instructions.
    #[serde(default, deserialize_with = "compact::value")]
    pub instructions: Option<Value>,
    #[serde(default, deserialize_with = "compact::value")]
    pub tools: Option<Value>,
    pub format: Option<WireFormat>,
    /// `local` (default): the tokenizer; `provider`: the provider's
    /// counting endpoint for the total (threads only).
    pub count: Option<CountSource>,
}

#[derive(Debug, Serialize)]
pub struct MessageTokens {
    /// Index into the request's `messages` (or `input`); null for
    /// Anthropic's top-level `system` or the Responses `instructions`.
    pub index: Option<usize>,
    pub role: Role,
    /// The message's tokens including its per-message overhead.
    pub tokens: usize,
    /// A system or developer message: an instruction, never summarized
    /// (pinned at the head, or kept verbatim beside a summary mid-conversation).
    pub instruction: bool,
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
    caller: Option<Extension<Caller>>,
    ApiJson(req): ApiJson<TokensRequest>,
) -> Result<Json<TokensResponse>> {
    // No caller means the gates did not run: no permission (fail closed).
    let caller = caller.map_or(Caller::ANONYMOUS, |c| c.0);
    count::permitted(req.count, caller)?;
    let method = method(req.method, req.chars_per_token)?;
    let spec = CountSpec::resolve(
        &app.models,
        &app.config.models.default_model,
        req.model.as_deref(),
        req.encoding,
        method,
    );
    let (mut response, ask) = app
        .cpu(move |app| count_request(app, req, spec, caller))
        .await?;
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
    caller: Caller,
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
    let thread_sent = req.messages.is_some() || req.input.is_some();
    match (req.text, thread_sent) {
        (Some(_), true) => Err(ApiError::field(
            "/text",
            "send either `text` or a thread (`messages` or `input`), not both",
        )),
        (None, false) => Err(ApiError::field(
            match req.format {
                Some(WireFormat::Responses) => "/input",
                _ => "/messages",
            },
            "send `messages` (a thread), `input` (a Responses API thread) or `text`",
        )),
        (Some(text), false) => {
            if source == CountSource::Provider {
                return Err(ApiError::field(
                    "/count",
                    "`provider` counts a thread: send `messages` or `input`, or leave `count` out for a text",
                ));
            }
            if req.system.is_some()
                || req.tools.is_some()
                || req.format.is_some()
                || req.instructions.is_some()
            {
                return Err(ApiError::field(
                    "/text",
                    "`system`, `instructions`, `tools` and `format` describe a thread; they do not apply to `text`",
                ));
            }
            app.config.limits.thread().check_text(&text)?;
            let c = counter.text(&text);
            counted(c.tokens);
            Ok((base(c.exact, c.tokens, Vec::new(), 0, 0, None), None))
        }
        (None, true) => {
            let thread = ThreadFields {
                format: req.format,
                messages: req.messages,
                system: req.system,
                input: req.input,
                instructions: req.instructions,
                tools: req.tools,
            }
            .parse(&app.config.limits.thread())?;
            let count = counter.thread(&thread);
            counted(count.total);
            let mut response = base(
                count.exact,
                count.total,
                Vec::new(),
                count.tools,
                crate::tokens::REPLY_PRIMING,
                Some(thread.format),
            );
            if thread.format == WireFormat::Responses {
                response.warnings.push(RESPONSES_ESTIMATE.into());
            }
            let system = count.system.map(|tokens| MessageTokens {
                index: None,
                role: Role::System,
                tokens,
                instruction: true,
            });
            response.messages = system
                .into_iter()
                .chain(thread.messages.iter().zip(&count.messages).enumerate().map(
                    |(i, (m, &tokens))| MessageTokens {
                        index: Some(i),
                        role: m.role,
                        tokens,
                        instruction: m.is_instruction(),
                    },
                ))
                .collect();
            let ask = count::prepare(
                app,
                (source, AskedBy::Request),
                caller,
                &thread,
                &spec.model,
            )?;
            Ok((response, ask))
        }
    }
}
