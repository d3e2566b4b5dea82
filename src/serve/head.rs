//! The limits of a request head, and condense's answer to a head over them.
//!
//! hyper refuses such a head itself, before any service sees it, with a
//! bare `431` (no body, no request id), and has no hook to answer
//! otherwise. So the socket ([`Watched`](super::socket::Watched)) writes
//! condense's problem in its place as hyper writes it: a `431` head that
//! hyper writes while no request of the connection is in flight can only be
//! hyper's own.

use std::future::Future;
use std::task::{Context, Poll, Waker};

use axum::response::IntoResponse;

use crate::error::ApiError;

/// Most bytes of a request head (request line and headers). hyper reads a
/// head into a buffer of at most ~400 KiB (its `max_buf_size`) either way.
pub const HEAD_BYTES: usize = 64 * 1024;
/// Most header fields of a request: hyper's default, which it keeps on the stack.
pub const HEAD_FIELDS: usize = 100;

/// condense's answer in place of hyper's, as far as it is written.
pub(super) struct Replacement {
    pub(super) answer: Vec<u8>,
    pub(super) written: usize,
    /// The bytes of hyper's answer it stands for.
    pub(super) stands_for: usize,
}

/// Whether `buf` is exactly hyper's own `431` head (no body follows it).
pub(super) fn is_hyper_431(buf: &[u8]) -> bool {
    (buf.starts_with(b"HTTP/1.1 431 ") || buf.starts_with(b"HTTP/1.0 431 "))
        && buf.ends_with(b"\r\n\r\n")
}

/// condense's answer in place of hyper's `431` head of `len` bytes.
pub(super) fn replacement(len: usize) -> Replacement {
    let id = uuid::Uuid::new_v4().to_string();
    tracing::info!(
        request_id = %id,
        "refused a request head over {HEAD_BYTES} bytes or {HEAD_FIELDS} header fields"
    );
    Replacement {
        answer: answer(&id),
        written: 0,
        stands_for: len,
    }
}

/// The one error type's answer, as bytes on the wire, with request id `id`;
/// the connection closes after it, as after hyper's.
fn answer(id: &str) -> Vec<u8> {
    let (parts, body) = ApiError::HeadTooLarge {
        bytes: HEAD_BYTES,
        fields: HEAD_FIELDS,
    }
    .into_response()
    .into_parts();
    let status = parts.status;
    let mut out = format!(
        "HTTP/1.1 {} {}\r\n",
        status.as_str(),
        status.canonical_reason().unwrap_or_default()
    )
    .into_bytes();
    for (name, value) in &parts.headers {
        if name == axum::http::header::CONTENT_LENGTH {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let body = ready(body);
    let date = httpdate::fmt_http_date(std::time::SystemTime::now());
    out.extend_from_slice(
        format!(
            "x-request-id: {id}\r\ncontent-length: {}\r\nconnection: close\r\ndate: {date}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(&body);
    out
}

/// The bytes of a body held in memory (an answer's): ready at the first poll.
fn ready(body: axum::body::Body) -> Vec<u8> {
    let collect = std::pin::pin!(axum::body::to_bytes(body, usize::MAX));
    match collect.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(Ok(bytes)) => bytes.to_vec(),
        Poll::Ready(Err(_)) | Poll::Pending => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hyper_s_431_is_answered_as_a_problem_with_a_request_id() {
        let hyper = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: Fri, 27 Nov 2026 05:00:00 GMT\r\n\r\n";
        assert!(super::is_hyper_431(hyper));
        let r = super::replacement(hyper.len());
        assert_eq!(r.stands_for, hyper.len());
        let text = String::from_utf8(r.answer).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
        assert!(head.contains("content-type: application/problem+json\r\n"));
        assert!(head.contains(&format!("content-length: {}\r\n", body.len())));
        assert!(head.contains("x-request-id: "));
        let problem: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(problem["status"], 431);
        assert_eq!(problem["type"], "urn:condense:problem:head-too-large");
    }

    #[test]
    fn other_writes_are_left_alone() {
        for buf in [
            &b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 5\r\n\r\nhello",
            b"{\"a\": 1}",
        ] {
            assert!(!super::is_hyper_431(buf));
        }
    }
}
