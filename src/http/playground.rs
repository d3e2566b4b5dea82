//! `GET /playground`: a page that shows what a profile does to a thread.
//! Only a client of the API, so it never disagrees with what an agent is
//! told; its files and example threads are embedded (no build step, no CDN).

use super::access::Access;
use axum::Json;
use axum::extract::{Path, RawQuery};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Serialize;

use crate::error::ApiError;
use crate::thread::{WireFormat, echo};

super::access::routes! {
    Access::Page;
    get "/" => home,
    get "/playground" => || asset("text/html; charset=utf-8", PAGE),
    get "/playground/app.js" => || asset("text/javascript; charset=utf-8", SCRIPT),
    get "/playground/style.css" => || asset("text/css; charset=utf-8", STYLE),
    get "/playground/examples" => examples,
    get "/playground/examples/{name}" => example,
}

const PAGE: &str = include_str!("../../assets/playground/index.html");
const SCRIPT: &str = include_str!("../../assets/playground/app.js");
const STYLE: &str = include_str!("../../assets/playground/style.css");

/// Only the page's own files and the API's origin: no inline script, no
/// third party, not framable.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self' data:; form-action 'none'; \
    base-uri 'none'; frame-ancestors 'none'";

async fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            // Small, and replaced with the binary: always revalidate.
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

/// The root shows the playground, keeping a shared link's query.
async fn home(RawQuery(query): RawQuery) -> Redirect {
    match query.filter(|q| !q.is_empty()) {
        Some(q) => Redirect::temporary(&format!("/playground?{q}")),
        None => Redirect::temporary("/playground"),
    }
}

/// One example thread: its name (`?example=NAME`) and what the menu shows.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Example {
    /// For `GET /playground/examples/{name}` and the page's `?example=`.
    pub name: &'static str,
    /// The file name's last part.
    pub format: WireFormat,
    pub bytes: usize,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExamplesResponse {
    #[schema(inline)]
    pub examples: Vec<Example>,
}

macro_rules! examples {
    ($($name:literal),* $(,)?) => {
        [$(($name, include_str!(concat!("../../data/threads/", $name, ".json")))),*]
    };
}

/// The agent threads of `data/threads`, smallest first.
const EXAMPLES: [(&str, &str); 10] = examples!(
    "small-00.openai",
    "small-00.anthropic",
    "small-01.openai",
    "small-01.anthropic",
    "medium-02.openai",
    "medium-02.anthropic",
    "medium-03.openai",
    "medium-03.anthropic",
    "large-04.openai",
    "large-04.anthropic",
);

async fn examples() -> Json<ExamplesResponse> {
    let examples = EXAMPLES
        .iter()
        .map(|(name, body)| Example {
            name,
            format: serde_json::from_value(name.rsplit('.').next().into())
                .expect("an example's file is named after its wire format"),
            bytes: body.len(),
        })
        .collect();
    Json(ExamplesResponse { examples })
}

/// The example as its file holds it: a provider request body.
async fn example(Path(name): Path<String>) -> Result<Response, ApiError> {
    let (_, body) = EXAMPLES
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| ApiError::NotFound(format!("/playground/examples/{}", echo(&name))))?;
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        *body,
    )
        .into_response())
}
