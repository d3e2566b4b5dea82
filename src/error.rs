//! The one error type of the HTTP API and its wire shape, RFC 9457
//! `application/problem+json`. A 500's cause chain and every problem's slug
//! travel in response extensions (for the log and the metrics), so
//! `into_response` has no side effects and no internal text reaches a client.

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use crate::thread::FieldError;

pub type Result<T, E = ApiError> = std::result::Result<T, E>;

/// `Retry-After` when overloaded: requests end in seconds.
pub const OVERLOADED_RETRY_AFTER_SECS: u64 = 1;
/// `Retry-After` after a time-out: a slow answer means a busy server or upstream.
pub const TIMEOUT_RETRY_AFTER_SECS: u64 = 5;

/// IETF draft-ietf-httpapi-ratelimit-headers.
pub const RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
pub const RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");
pub const RATELIMIT_RESET: HeaderName = HeaderName::from_static("ratelimit-reset");

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("the body is not valid JSON: {0}")]
    MalformedJson(String),
    /// A path parameter that cannot name anything: its name, and why.
    #[error("`{0}` in the path: {1}")]
    MalformedPath(&'static str, &'static str),
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// Answered with `Accept-Encoding: identity` (RFC 7694).
    #[error("{0}")]
    UnsupportedEncoding(String),
    #[error("the body is larger than the limit of {limit} bytes (CONDENSE_BODY_LIMIT)")]
    PayloadTooLarge { limit: usize },
    /// More JSON nodes than a request may hold: each costs far beyond its bytes.
    #[error("{0}")]
    TooManyNodes(String),
    #[error("{0}")]
    ThreadTooLarge(String),
    #[error("the request is invalid")]
    Invalid(Vec<FieldError>),
    /// The same answer whatever was wrong, so it tells a prober nothing.
    /// The proxy routes leave `Authorization` to the provider's key.
    #[error("{}", if *.proxy {
        "send a valid condense API key in the `x-condense-api-key` header"
    } else {
        "send a valid API key as `Authorization: Bearer <key>`"
    })]
    Unauthorized { proxy: bool },
    #[error("{0}")]
    Forbidden(String),
    #[error("too many requests for this {who}; retry after {retry_after} seconds")]
    RateLimited { who: &'static str, retry_after: u64 },
    /// Refused, not queued.
    #[error(
        "condense is at its limit of {0} requests at once, or this caller at its share of them (three quarters); retry shortly"
    )]
    Overloaded(usize),
    /// Refused before its body is read (see `admission::memory`).
    #[error(
        "condense has too little of its memory budget ({0} bytes) free for a request of this size; retry shortly"
    )]
    OverBudget(u64),
    #[error("{0}")]
    DoesNotFit(String),
    /// Answered for hyper, which refuses such a head itself (`serve::head`).
    #[error(
        "the request head (request line and headers) is over the limit of {bytes} bytes or {fields} header fields"
    )]
    HeadTooLarge { bytes: usize, fields: usize },
    #[error("{0}")]
    StrategyUnavailable(String),
    #[error("no route for {0}")]
    NotFound(String),
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("the request took longer than {0} seconds")]
    Timeout(u64),
    /// A body slower than the slowest upload taken (`http::extract::arrived`).
    #[error("the body did not arrive within {0} seconds (at least 64 KiB/s is needed after 5 s)")]
    SlowBody(u64),
    /// `on_upstream_error: fail`: a short reason, never the upstream's own text.
    #[error("the upstream LLM failed ({0}); your thread is unchanged")]
    Upstream(String),
    #[error("{0}")]
    ProxyDisabled(String),
    #[error("{0}")]
    ProviderUnreachable(String),
    #[error("internal error")]
    Internal(#[from] anyhow::Error),
}

impl From<crate::compress::Error> for ApiError {
    fn from(e: crate::compress::Error) -> Self {
        use crate::compress::Error as E;
        match e {
            E::Invalid(errs) => ApiError::Invalid(errs),
            E::DoesNotFit(detail) => ApiError::DoesNotFit(detail),
            E::StrategyUnavailable(detail) => ApiError::StrategyUnavailable(detail),
            E::Forbidden(detail) => ApiError::Forbidden(detail),
            E::ModelNotAllowed(message) => ApiError::field("/summarizer/model", message),
            E::Upstream(e) => ApiError::Upstream(e.short()),
            bug @ E::Bug(_) => ApiError::Internal(bug.into()),
        }
    }
}

impl From<crate::proxy::ProxyError> for ApiError {
    fn from(e: crate::proxy::ProxyError) -> Self {
        use crate::proxy::ProxyError as E;
        match e {
            E::Disabled(_) => ApiError::ProxyDisabled(e.to_string()),
            E::Unreachable(_) => ApiError::ProviderUnreachable(e.to_string()),
            E::TooLarge(detail) => ApiError::ThreadTooLarge(detail),
            E::Forbidden(detail) => ApiError::Forbidden(detail),
        }
    }
}

impl From<crate::thread::OverLimit> for ApiError {
    fn from(e: crate::thread::OverLimit) -> Self {
        ApiError::ThreadTooLarge(e.detail)
    }
}

impl From<Vec<FieldError>> for ApiError {
    fn from(errors: Vec<FieldError>) -> Self {
        ApiError::Invalid(errors)
    }
}

impl ApiError {
    /// One field error, for checks made outside a parser.
    pub fn field(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::Invalid(vec![FieldError::new(pointer, message)])
    }

    /// The kind of problem, which says the status and the title.
    fn kind(&self) -> ProblemKind {
        use ApiError as E;
        use ProblemKind as K;
        match self {
            E::MalformedJson(_) => K::MalformedJson,
            E::MalformedPath(..) => K::MalformedPath,
            E::UnsupportedMediaType(_) | E::UnsupportedEncoding(_) => K::UnsupportedMediaType,
            E::PayloadTooLarge { .. } | E::TooManyNodes(_) | E::ThreadTooLarge(_) => {
                K::PayloadTooLarge
            }
            E::Unauthorized { .. } => K::Unauthorized,
            E::Forbidden(_) => K::Forbidden,
            E::RateLimited { .. } => K::RateLimited,
            E::Overloaded(_) | E::OverBudget(_) => K::Overloaded,
            E::Invalid(_) => K::Validation,
            E::DoesNotFit(_) => K::DoesNotFit,
            E::HeadTooLarge { .. } => K::HeadTooLarge,
            E::StrategyUnavailable(_) => K::StrategyUnavailable,
            E::NotFound(_) => K::NotFound,
            E::MethodNotAllowed => K::MethodNotAllowed,
            E::Timeout(_) | E::SlowBody(_) => K::Timeout,
            E::Upstream(_) => K::Upstream,
            E::ProxyDisabled(_) => K::ProxyDisabled,
            E::ProviderUnreachable(_) => K::ProviderUnreachable,
            E::Internal(_) => K::Internal,
        }
    }

    /// `Retry-After`, `WWW-Authenticate`, `Accept-Encoding` as the status calls for.
    fn headers(&self, h: &mut HeaderMap) {
        let retry_after = match self {
            ApiError::Timeout(_) | ApiError::SlowBody(_) => Some(TIMEOUT_RETRY_AFTER_SECS),
            ApiError::Overloaded(_) | ApiError::OverBudget(_) => Some(OVERLOADED_RETRY_AFTER_SECS),
            ApiError::RateLimited { retry_after, .. } => Some(*retry_after),
            _ => None,
        };
        if let Some(secs) = retry_after {
            h.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let ApiError::Unauthorized { .. } = self {
            h.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(r#"Bearer realm="condense""#),
            );
        }
        if let ApiError::UnsupportedEncoding(_) = self {
            h.insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_static("identity"),
            );
        }
    }
}

/// An RFC 9457 problem document (`application/problem+json`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Problem {
    #[serde(rename = "type")]
    #[schema(inline)]
    pub kind: ProblemKind,
    /// The fixed title of the problem kind.
    pub title: &'static str,
    /// The HTTP status code.
    #[schema(minimum = 400, maximum = 599)]
    pub status: u16,
    /// What went wrong with this request.
    pub detail: String,
    /// Present (and non-empty) on 422 `validation` problems only: at most
    /// 100 problems, then one entry counting the rest (`+N more errors`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(min_items = 1, max_items = 101)]
    pub errors: Vec<FieldError>,
}

/// A URN naming the kind of problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub enum ProblemKind {
    #[serde(rename = "urn:condense:problem:malformed-json")]
    MalformedJson,
    #[serde(rename = "urn:condense:problem:malformed-path")]
    MalformedPath,
    #[serde(rename = "urn:condense:problem:unsupported-media-type")]
    UnsupportedMediaType,
    #[serde(rename = "urn:condense:problem:payload-too-large")]
    PayloadTooLarge,
    #[serde(rename = "urn:condense:problem:head-too-large")]
    HeadTooLarge,
    #[serde(rename = "urn:condense:problem:validation")]
    Validation,
    #[serde(rename = "urn:condense:problem:does-not-fit")]
    DoesNotFit,
    #[serde(rename = "urn:condense:problem:strategy-unavailable")]
    StrategyUnavailable,
    #[serde(rename = "urn:condense:problem:not-found")]
    NotFound,
    #[serde(rename = "urn:condense:problem:method-not-allowed")]
    MethodNotAllowed,
    #[serde(rename = "urn:condense:problem:timeout")]
    Timeout,
    #[serde(rename = "urn:condense:problem:overloaded")]
    Overloaded,
    #[serde(rename = "urn:condense:problem:unauthorized")]
    Unauthorized,
    #[serde(rename = "urn:condense:problem:forbidden")]
    Forbidden,
    #[serde(rename = "urn:condense:problem:rate-limited")]
    RateLimited,
    #[serde(rename = "urn:condense:problem:upstream")]
    Upstream,
    #[serde(rename = "urn:condense:problem:proxy-disabled")]
    ProxyDisabled,
    #[serde(rename = "urn:condense:problem:provider-unreachable")]
    ProviderUnreachable,
    #[serde(rename = "urn:condense:problem:internal")]
    Internal,
}

impl ProblemKind {
    /// The status every problem of this kind is answered with.
    pub fn status(self) -> StatusCode {
        use ProblemKind as K;
        use StatusCode as S;
        match self {
            K::MalformedJson | K::MalformedPath => S::BAD_REQUEST,
            K::UnsupportedMediaType => S::UNSUPPORTED_MEDIA_TYPE,
            K::PayloadTooLarge => S::PAYLOAD_TOO_LARGE,
            K::HeadTooLarge => S::REQUEST_HEADER_FIELDS_TOO_LARGE,
            K::Validation | K::DoesNotFit | K::StrategyUnavailable => S::UNPROCESSABLE_ENTITY,
            K::NotFound => S::NOT_FOUND,
            K::MethodNotAllowed => S::METHOD_NOT_ALLOWED,
            K::Timeout | K::Overloaded => S::SERVICE_UNAVAILABLE,
            K::Unauthorized => S::UNAUTHORIZED,
            K::Forbidden => S::FORBIDDEN,
            K::RateLimited => S::TOO_MANY_REQUESTS,
            K::Upstream | K::ProviderUnreachable => S::BAD_GATEWAY,
            K::ProxyDisabled => S::NOT_IMPLEMENTED,
            K::Internal => S::INTERNAL_SERVER_ERROR,
        }
    }

    /// The fixed title of the problem's kind.
    pub fn title(self) -> &'static str {
        use ProblemKind as K;
        match self {
            K::MalformedJson => "Malformed JSON",
            K::MalformedPath => "Malformed path parameter",
            K::UnsupportedMediaType => "Unsupported media type",
            K::PayloadTooLarge => "Payload too large",
            K::HeadTooLarge => "Request head too large",
            K::Validation => "Invalid request",
            K::DoesNotFit => "Thread does not fit",
            K::StrategyUnavailable => "Strategy unavailable",
            K::NotFound => "Not found",
            K::MethodNotAllowed => "Method not allowed",
            K::Timeout => "Request timed out",
            K::Overloaded => "Service overloaded",
            K::Unauthorized => "Unauthorized",
            K::Forbidden => "Forbidden",
            K::RateLimited => "Too many requests",
            K::Upstream => "Upstream LLM failed",
            K::ProxyDisabled => "Proxy route is off",
            K::ProviderUnreachable => "Provider unreachable",
            K::Internal => "Internal server error",
        }
    }

    /// The kind whose URN ends in `slug`.
    pub fn from_slug(slug: &str) -> Option<Self> {
        serde_json::from_value(format!("urn:condense:problem:{slug}").into()).ok()
    }

    /// The URN's last part (`timeout`...), which the metrics count.
    pub fn slug(self) -> &'static str {
        use ProblemKind as K;
        match self {
            K::MalformedJson => "malformed-json",
            K::MalformedPath => "malformed-path",
            K::UnsupportedMediaType => "unsupported-media-type",
            K::PayloadTooLarge => "payload-too-large",
            K::HeadTooLarge => "head-too-large",
            K::Validation => "validation",
            K::DoesNotFit => "does-not-fit",
            K::StrategyUnavailable => "strategy-unavailable",
            K::NotFound => "not-found",
            K::MethodNotAllowed => "method-not-allowed",
            K::Timeout => "timeout",
            K::Overloaded => "overloaded",
            K::Unauthorized => "unauthorized",
            K::Forbidden => "forbidden",
            K::RateLimited => "rate-limited",
            K::Upstream => "upstream",
            K::ProxyDisabled => "proxy-disabled",
            K::ProviderUnreachable => "provider-unreachable",
            K::Internal => "internal",
        }
    }
}

/// The cause chain of a 500, for the logging middleware only.
#[derive(Debug, Clone)]
pub struct InternalCause(pub String);

/// The problem type slug of an answer (`timeout`…), counted by the metrics middleware.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProblemType(pub &'static str);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let kind = self.kind();
        let status = kind.status();
        let mut extra = HeaderMap::new();
        self.headers(&mut extra);
        let (detail, errors, cause) = match self {
            ApiError::Invalid(errors) => {
                // However many problems the body holds, the answer stays small.
                let errors = crate::thread::cap(errors);
                let detail = match errors.as_slice() {
                    [one] if one.pointer.is_empty() => one.message.clone(),
                    [one] => format!("{}: {}", one.pointer, one.message),
                    many => format!("{} problems in the request; see `errors`", many.len()),
                };
                (detail, errors, None)
            }
            ApiError::Internal(e) => (
                "something went wrong on our side; the request id identifies it in the logs".into(),
                Vec::new(),
                Some(format!("{e:#}")),
            ),
            other => (other.to_string(), Vec::new(), None),
        };
        let problem = Problem {
            kind,
            title: kind.title(),
            status: status.as_u16(),
            detail,
            errors,
        };
        let body = serde_json::to_vec(&problem).unwrap_or_default();
        let mut res = (status, body).into_response();
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        res.headers_mut().extend(extra);
        res.extensions_mut().insert(ProblemType(kind.slug()));
        if let Some(cause) = cause {
            res.extensions_mut().insert(InternalCause(cause));
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use super::ProblemKind;

    /// The URN serde sends ends in the slug the metrics count.
    #[test]
    fn each_problem_urn_ends_in_its_slug() {
        let schema = serde_json::to_value(<ProblemKind as utoipa::PartialSchema>::schema())
            .expect("a schema is JSON");
        let urns = schema["enum"].as_array().expect("an enum of URNs");
        assert_eq!(urns.len(), 19);
        for urn in urns {
            let kind: ProblemKind = serde_json::from_value(urn.clone()).expect("a known URN");
            let slug = kind.slug();
            assert_eq!(urn, &format!("urn:condense:problem:{slug}"));
        }
    }
}
