//! `POST /v1/tokens`: count a thread or a text as the provider would.

use super::access::Access;
use axum::Json;
use axum::extract::State;
use serde::Serialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

use super::extract::{ApiBody, parse_borrowed};
use super::input::{ThreadFields, method, no_messages, permitted};
use crate::compress::Ask;
use crate::error::{ApiError, Result};
use crate::guard::Caller;
use crate::state::AppState;
use crate::thread::{Role, WireFormat};
use crate::tokens::{CountSpec, Encoding, Method, ThreadCount};
use crate::upstream::{CountSource, Provenance};

/// Said with every count of a Responses thread.
const RESPONSES_ESTIMATE: &str = "a Responses API thread: texts are counted with the model's tokenizer, but OpenAI publishes no per-item overhead, so the item framing (3 tokens an item, as for chat messages) is an estimate; `count: \"provider\"` asks OpenAI's input_tokens endpoint for the exact number";

super::access::routes! { Access::Api; post "/v1/tokens" => count }

super::input::thread_request! {
    <'a> Cow<'a, RawValue>, explained as TokensShape;
    /// Either a thread (`messages`, or `input` for a Responses API thread)
    /// or a bare `text`, not both. `system`, `instructions`, `tools` and
    /// `format` describe a thread and must be absent or null with `text`.
    /// `chars_per_token` alone implies `method: chars`; with `method: bpe` it
    /// is rejected. Null means absent for every field.
    pub struct TokensRequest {
        /// A bare text to count, without message framing.
        pub text: Option<String>,
        /// `local` (default): the tokenizer; `provider`: the provider's
        /// counting endpoint for `total_tokens` (a thread only; see
        /// "Provider-exact counts" above).
        pub count: Option<CountSource>,
    }
}

/// One message's count.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageTokens {
    /// Index into the request's `messages` (or `input`); null for
    /// Anthropic's top-level `system` or the Responses `instructions`.
    #[schema(required = true)]
    pub index: Option<usize>,
    pub role: Role,
    /// The message's tokens, its per-message overhead included.
    pub tokens: usize,
    /// A system or developer message (a summary condense wrote aside).
    /// Instructions are never summarized; pinned at the head of the thread,
    /// or, mid-conversation, kept verbatim in their order after the summary
    /// (for Anthropic, after a user turn: an answer never opens with one).
    pub instruction: bool,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TokensResponse {
    /// The model as requested (or the default).
    pub model: String,
    pub encoding: Encoding,
    #[schema(inline)]
    pub method: CountMethod,
    /// True only when the count equals what the provider bills.
    pub exact: bool,
    /// The sum of `messages[].tokens`, `tools_tokens` and
    /// `reply_priming_tokens`; with `source: provider` the provider's count
    /// instead.
    pub total_tokens: usize,
    /// Where `total_tokens` comes from; per-message counts stay local.
    #[serde(flatten)]
    #[schema(inline)]
    pub provenance: Provenance,
    /// Per message, in order; Anthropic's `system` first (index null). Empty
    /// for a text. Local counts, also with `source: provider`.
    pub messages: Vec<MessageTokens>,
    pub tools_tokens: usize,
    /// Tokens that prime the reply: 3 for a thread, 0 for a text.
    pub reply_priming_tokens: usize,
    /// The model's context window.
    #[schema(minimum = 1)]
    pub context_window: u64,
    /// The thread's wire format (detected or given); null for a text.
    #[schema(required = true)]
    pub format: Option<WireFormat>,
    /// Why the count is an estimate (unknown model, encoding override,
    /// non-OpenAI tokenizer, a Responses thread's item framing), or why the
    /// provider did not count it.
    pub warnings: Vec<String>,
}

/// How a count was made: `bpe`, the model's encoding, or `chars`, characters
/// per token.
#[derive(Debug, Clone, Copy, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CountMethod {
    Bpe,
    Chars,
}

impl From<Method> for CountMethod {
    fn from(m: Method) -> Self {
        match m {
            Method::Bpe => CountMethod::Bpe,
            Method::Chars { .. } => CountMethod::Chars,
        }
    }
}

async fn count(
    State(app): State<AppState>,
    caller: Caller,
    ApiBody(body): ApiBody,
) -> Result<Json<TokensResponse>> {
    // Parsed where it is counted: each message borrowed from the body.
    let (mut response, ask) = app
        .cpu(move |app| {
            let req: TokensRequest = parse_borrowed::<_, TokensShape>(&body)?;
            permitted(req.count, caller)?;
            let method = method(req.method, req.chars_per_token, None)?;
            let spec = app.meter.spec(req.model.as_deref(), req.encoding, method);
            let source = (req.count.unwrap_or_default(), caller.provider);
            // The shape first: a wrong one is answered before any limit or count.
            let subject = Subject::of(req, source.0)?;
            subject.count(app, &spec, source)
        })
        .await?;
    if let Some(total) = app.meter.ask(ask, &mut response.warnings).await {
        response.provenance = Provenance::provider(response.total_tokens as u64);
        response.total_tokens = total as usize;
        response.exact = true;
    }
    Ok(Json(response))
}

/// What a request counts: a bare text or a thread, never both.
enum Subject<'a> {
    Text(String),
    /// Boxed: the thread's fields are large beside a text.
    Thread(Box<ThreadFields<Cow<'a, RawValue>>>),
}

impl<'a> Subject<'a> {
    /// Reads the request's shape; each error names the field that is wrong.
    fn of(mut req: TokensRequest<'a>, source: CountSource) -> Result<Subject<'a>> {
        let thread_sent = req.messages.is_some() || req.input.is_some();
        match (req.text.take(), thread_sent) {
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
                Ok(Subject::Text(text))
            }
            (None, true) => Ok(Subject::Thread(Box::new(req.thread()))),
        }
    }

    /// The local count, and the provider count to ask for if any.
    fn count(
        self,
        app: &AppState,
        spec: &CountSpec,
        source: (CountSource, bool),
    ) -> Result<(TokensResponse, Option<Ask>)> {
        let limits = app.config.limits.thread();
        let mut answer = TokensResponse {
            model: spec.model.clone(),
            encoding: spec.encoding,
            method: spec.method.into(),
            exact: false,
            total_tokens: 0,
            provenance: Provenance::default(),
            messages: Vec::new(),
            tools_tokens: 0,
            reply_priming_tokens: 0,
            context_window: spec.context_window,
            format: None,
            warnings: spec.warnings.clone(),
        };
        let fields = match self {
            Subject::Text(text) => {
                // Within the text limit, with no messages, tools or reply priming.
                limits.check_text(&text)?;
                let c = app.meter.text(spec, &text);
                (answer.exact, answer.total_tokens) = (c.exact, c.tokens);
                return Ok((answer, None));
            }
            Subject::Thread(fields) => fields,
        };
        // The provider counts the whole thread as sent: it is parsed whole.
        // A local count takes the messages seen before from their records.
        let (format, messages, count, ask) = if source.0 == CountSource::Provider {
            let thread = fields.values()?.parse(&limits)?;
            let (count, ask) = app.meter.thread(spec, &thread, source);
            let messages = thread.messages.iter();
            let messages: Vec<_> = messages.map(|m| (m.role, m.is_instruction())).collect();
            (thread.format, messages, count, ask)
        } else {
            let thread = fields.outline(&limits, &app.meter.counter(spec))?;
            let format = thread.format;
            let (records, count) = app.meter.outlined(spec, thread);
            let messages = records
                .iter()
                .map(|c| (c.outline.role, c.outline.instruction));
            (format, messages.collect(), count, None)
        };
        (answer.exact, answer.total_tokens) = (count.exact, count.total);
        answer.tools_tokens = count.tools;
        answer.reply_priming_tokens = crate::tokens::REPLY_PRIMING;
        answer.format = Some(format);
        if format == WireFormat::Responses {
            answer.warnings.push(RESPONSES_ESTIMATE.into());
        }
        answer.warnings.extend(no_messages(format, messages.len()));
        answer.messages = message_tokens(&messages, &count);
        Ok((answer, ask))
    }
}

/// The per-message counts: the top-level system prompt first (no index),
/// then each message (its role, and whether it is an instruction) under its index.
fn message_tokens(messages: &[(Role, bool)], count: &ThreadCount) -> Vec<MessageTokens> {
    let system = count.system.map(|tokens| MessageTokens {
        index: None,
        role: Role::System,
        tokens,
        instruction: true,
    });
    system
        .into_iter()
        .chain(messages.iter().zip(&count.messages).enumerate().map(
            |(i, (&(role, instruction), &tokens))| MessageTokens {
                index: Some(i),
                role,
                tokens,
                instruction,
            },
        ))
        .collect()
}
