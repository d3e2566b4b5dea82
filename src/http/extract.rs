//! The body extractors: a malformed body is a 400, a wrong field a 422 naming
//! `/the/field` (axum's `Json` gives a dotted path in text). What of the body
//! an error quotes is cut short ([`echo`]).

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{HeaderMap, header, request::Parts};
use http_body_util::BodyExt;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_path_to_error::Segment;

use std::time::Duration;

use crate::admission::{Ticket, memory};
use crate::config::LimitSettings;
use crate::error::ApiError;
use crate::guard::Caller;
use crate::state::AppState;
use crate::thread::{Shape, clip_quoted, echo};

/// The gates' caller; none means they did not run: no permission (fail closed).
impl<S: Sync> FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.extensions.get().copied().unwrap_or(Caller::ANONYMOUS))
    }
}

pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned + Send + 'static> FromRequest<AppState> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let ApiBody(bytes) = ApiBody::from_request(req, state).await?;
        // A long thread takes milliseconds to parse: off the async workers,
        // its request's place and memory taken until it ends.
        if bytes.len() > INLINE_PARSE_BYTES {
            let place = crate::tokens::cancel::held();
            tokio::task::spawn_blocking(move || {
                let _place = place;
                parse(&bytes)
            })
            .await
            .map_err(|e| ApiError::Internal(anyhow::Error::new(e).context("parsing a body")))?
            .map(ApiJson)
        } else {
            parse(&bytes).map(ApiJson)
        }
    }
}

/// A JSON body as [`ApiJson`] takes it (its media type, size, shape and
/// memory checked), not yet parsed: for a request that borrows its parts
/// from the body ([`parse_borrowed`]).
pub struct ApiBody(pub Bytes);

impl FromRequest<AppState> for ApiBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        require_json(req.headers())?;
        let ticket = req.extensions().get::<Ticket>().cloned();
        let RawBody(bytes) = RawBody::from_request(req, state).await?;
        // Bounded before parsing: a parsed node costs far more than its bytes.
        let shape = Shape::of(&bytes);
        if let Some(why) = shape.too_many() {
            return Err(ApiError::TooManyNodes(why));
        }
        // The gate reserved the body; parsing it takes what its shape costs.
        if let Some(ticket) = ticket
            && !ticket.try_grow_to(memory::parsed_bytes(&shape))
        {
            return Err(ApiError::OverBudget(ticket.budget()));
        }
        Ok(ApiBody(bytes))
    }
}

/// Smaller bodies parse faster than a hop to the blocking pool.
const INLINE_PARSE_BYTES: usize = 64 * 1024;

/// Parses in one pass; only a body that fails takes the slower path that
/// says what is wrong and where ([`explain`]).
fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    match stream(bytes) {
        Ok(parsed) => Ok(parsed),
        Err(Some(e)) => Err(out_of_range::<T>(bytes, e)),
        Err(None) => explain(bytes),
    }
}

/// [`parse`] of a request `T` that borrows from `bytes`; a body that fails is
/// explained as its owned twin `E` would be (a `Value` lends nothing to
/// borrow): the same errors as `ApiJson<E>`.
pub fn parse_borrowed<'a, T: Deserialize<'a>, E: DeserializeOwned>(
    bytes: &'a [u8],
) -> Result<T, ApiError> {
    match stream(bytes) {
        Ok(parsed) => Ok(parsed),
        Err(Some(e)) => Err(out_of_range::<E>(bytes, e)),
        // The twin takes what the request does: it fails too.
        Err(None) => Err(explain::<E>(bytes).err().unwrap_or_else(|| {
            ApiError::MalformedJson("the body could not be read as this request".into())
        })),
    }
}

/// The fast pass: the request, or why not (a number past f64 says so).
fn stream<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, Option<String>> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match T::deserialize(&mut de).and_then(|parsed| de.end().map(|()| parsed)) {
        Ok(parsed) if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') => Ok(parsed),
        // A number past f64 (`1e400`) where a field takes a float: a `Value`
        // keeps it (as written, `thread::compact`), the field cannot.
        Err(e) if e.to_string().starts_with("number out of range") => Err(Some(e.to_string())),
        _ => Err(None),
    }
}

/// A number past f64 is valid JSON: a 400 that says where it is.
fn out_of_range<T: DeserializeOwned>(bytes: &[u8], e: String) -> ApiError {
    let at =
        serde_path_to_error::deserialize::<_, T>(&mut serde_json::Deserializer::from_slice(bytes))
            .err()
            .map(|p| pointer(p.path()))
            .unwrap_or_default();
    ApiError::MalformedJson(if at.is_empty() {
        e
    } else {
        format!("{at}: {e}")
    })
}

/// Syntax first (400), then shape from a parsed `Value` (422 naming the field):
/// streaming, serde_json reports some shape errors as syntax errors.
fn explain<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    // (A `Value` keeps any number, `1e400` too: only syntax fails here.)
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| ApiError::MalformedJson(e.to_string()))?;
    if !value.is_object() {
        return Err(ApiError::field(
            "",
            format!(
                "the body must be a JSON object, not {}",
                crate::thread::type_name(&value)
            ),
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let pointer = pointer(e.path());
        let mut message = e.into_inner().to_string();
        // A `Value` keeps numbers as written (`thread::compact`): of one a
        // typed field cannot take, it says only "invalid number". Read as a
        // stream, the field says what it found (`floating point 1e23`).
        if message == "invalid number"
            && let Err(e) = serde_path_to_error::deserialize::<_, T>(
                &mut serde_json::Deserializer::from_slice(bytes),
            )
            && self::pointer(e.path()) == pointer
        {
            let e = e.into_inner();
            let at = format!(" at line {} column {}", e.line(), e.column());
            message = e.to_string().trim_end_matches(&at).to_owned();
        }
        let message = plain(&clip_quoted(&message));
        // serde reports a missing field at its parent; point at the field.
        let pointer = match message
            .strip_prefix("missing field `")
            .and_then(|r| r.split('`').next())
        {
            Some(field) => format!("{pointer}/{}", escape(field)),
            None => pointer,
        };
        ApiError::field(pointer, message)
    })
}

/// The JSON pointer of a serde path.
fn pointer(path: &serde_path_to_error::Path) -> String {
    path.iter()
        .filter_map(|seg| match seg {
            Segment::Seq { index } => Some(format!("/{index}")),
            Segment::Map { key } => Some(format!("/{}", escape(&echo(key)))),
            Segment::Enum { .. } | Segment::Unknown => None,
        })
        .collect()
}

/// serde's type names (`expected u64`) in plain words.
fn plain(message: &str) -> String {
    let mut m = message.to_owned();
    for (ty, max) in [
        ("u64", u64::MAX),
        ("usize", usize::MAX as u64),
        ("u32", u32::MAX as u64),
        ("u16", u16::MAX as u64),
        ("u8", u8::MAX as u64),
    ] {
        if let Some(head) = m.strip_suffix(&format!("expected {ty}")) {
            m = format!("{head}expected a whole number between 0 and {max}");
        }
    }
    m
}

/// The body as bytes, up to the body limit (for the proxy and [`ApiJson`]).
pub struct RawBody(pub Bytes);

impl FromRequest<AppState> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, app: &AppState) -> Result<Self, ApiError> {
        check_content_encoding(req.headers())?;
        arrived(req.into_body(), &app.config.limits)
            .await
            .map(RawBody)
    }
}

/// The slowest upload taken: after a grace for the first bytes, a body must
/// arrive at 64 KiB/s (8 MiB in 2 minutes), and within the request's time
/// limit. A slow body holds a connection and the memory reserved for it.
const UPLOAD_GRACE_SECS: u64 = 5;
const MIN_UPLOAD_BYTES_PER_SEC: u64 = 64 * 1024;

/// `body` read whole ([`read`]) if it arrives as fast as the slowest upload
/// taken; else 503 `timeout`.
pub async fn arrived(body: Body, limits: &LimitSettings) -> Result<Bytes, ApiError> {
    let size = body.size_hint().exact();
    let size = size.unwrap_or(limits.body_limit as u64);
    let wait = Duration::from_secs(UPLOAD_GRACE_SECS + size.div_ceil(MIN_UPLOAD_BYTES_PER_SEC))
        .min(limits.request_timeout.max(Duration::from_secs(1)));
    tokio::time::timeout(wait, read(body, limits.body_limit))
        .await
        .map_err(|_| ApiError::SlowBody(wait.as_secs()))?
}

/// Reads `body` whole, up to `limit` bytes (413 past it). One frame (a body
/// the gates have read already) is taken as it is; several go into one
/// buffer of the declared size: collecting would hold the body twice while
/// it copies, and the memory budget counts it once.
pub async fn read(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let declared = body.size_hint().exact().unwrap_or(0) as usize;
    let mut body = std::pin::pin!(http_body_util::Limited::new(body, limit));
    let (mut first, mut buf) = (None, Vec::new());
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            if e.is::<http_body_util::LengthLimitError>() {
                ApiError::PayloadTooLarge { limit }
            } else {
                ApiError::MalformedJson(format!("the body could not be read: {e}"))
            }
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        match first.take() {
            None if buf.is_empty() => first = Some(data),
            earlier => {
                if buf.is_empty() {
                    buf.reserve_exact(declared.min(limit.max(1)));
                }
                buf.extend_from_slice(&earlier.unwrap_or_default());
                buf.extend_from_slice(&data);
            }
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(buf)))
}

/// An encoded body is refused (415), not decompressed: no decompression bomb to bound.
pub fn check_content_encoding(headers: &HeaderMap) -> Result<(), ApiError> {
    for value in headers.get_all(header::CONTENT_ENCODING) {
        let text = value.to_str().unwrap_or("?");
        let encoded = text
            .split(',')
            .map(str::trim)
            .any(|c| !c.is_empty() && !c.eq_ignore_ascii_case("identity"));
        if encoded {
            return Err(ApiError::UnsupportedEncoding(format!(
                "`Content-Encoding: {}` is not accepted; send the body uncompressed",
                echo(text)
            )));
        }
    }
    Ok(())
}

/// A header's value as text (None: absent, or not visible ASCII).
pub fn text(headers: &HeaderMap, name: impl header::AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// JSON pointer escaping (RFC 6901).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// A JSON body (`application/json`, `application/<x>+json`), else 415: this
/// also refuses what a page may send without a CORS preflight.
pub fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(ct) = headers.get(header::CONTENT_TYPE) else {
        return Err(ApiError::UnsupportedMediaType(
            "send the body as `Content-Type: application/json`".into(),
        ));
    };
    let ct = ct.to_str().unwrap_or_default().to_ascii_lowercase();
    let essence = ct.split(';').next().unwrap_or_default().trim();
    if essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
    {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType(format!(
            "`{}` is not accepted; send the body as `Content-Type: application/json`",
            echo(essence)
        )))
    }
}
