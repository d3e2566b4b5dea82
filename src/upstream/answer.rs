//! Reading an upstream's answer without trusting it: a body read up to a
//! bound (an endless stream must not fill memory), and its `Retry-After`.

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};

use super::chat::{UpstreamError, transport};

/// Most bytes read of a successful answer (a summary: some hundreds of KB at most).
pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;
/// Most bytes read of an error body: only a short excerpt is kept.
pub const MAX_ERROR_BYTES: usize = 64 * 1024;

/// The body, or `Garbage` once it passes `cap` bytes (nothing more is read).
pub async fn read_capped(mut res: reqwest::Response, cap: usize) -> Result<Vec<u8>, UpstreamError> {
    let mut body = Vec::new();
    while let Some(chunk) = res.chunk().await.map_err(transport)? {
        if body.len() + chunk.len() > cap {
            return Err(UpstreamError::Garbage(format!(
                "the answer is larger than {cap} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The start of an error body as text, for the log excerpt.
pub async fn error_text(mut res: reqwest::Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = res.chunk().await {
        let room = MAX_ERROR_BYTES - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() == MAX_ERROR_BYTES {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// How long the upstream asks to wait: `Retry-After` in seconds or as a date.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, v.parse().unwrap());
        h
    }

    #[test]
    fn retry_after_is_read_as_seconds_or_as_a_date() {
        assert_eq!(retry_after(&headers("7")), Some(Duration::from_secs(7)));
        let later = SystemTime::now() + Duration::from_secs(120);
        let d = retry_after(&headers(&httpdate::fmt_http_date(later))).unwrap();
        // The date has whole seconds: 119 s to 120 s from now.
        assert!(
            d > Duration::from_secs(110) && d <= Duration::from_secs(120),
            "{d:?}"
        );
        assert_eq!(
            retry_after(&headers("Wed, 21 Oct 2015 07:28:00 GMT")),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers("soon")), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }
}
