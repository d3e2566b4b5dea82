//! Slow uploads on real sockets: a body arriving a byte at a time holds the
//! memory reserved for it, never a place among the requests at work, and
//! is refused, with when to come back, once it falls below the slowest
//! upload taken. Waits are bounded generously; what is asserted is what
//! happens, never how fast.
use crate::support::server;

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const GENEROUS: Duration = Duration::from_secs(120);

async fn start() -> SocketAddr {
    let url = server::serve(condense::Config {
        cache: condense::config::CacheSettings {
            database_url: Some("off".into()),
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    url.trim_start_matches("http://").parse().unwrap()
}

/// A connection that sends a `/v1/tokens` head announcing 100,000 bytes,
/// and the first few of them.
async fn slow_upload(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.expect("connects");
    let head = "POST /v1/tokens HTTP/1.1\r\nHost: localhost\r\n\
                Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"text\": \"";
    s.write_all(head.as_bytes()).await.unwrap();
    s
}

async fn exchange(addr: SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect(addr).await.expect("connects");
    s.write_all(request.as_bytes()).await.unwrap();
    server::read_response(&mut s, GENEROUS).await
}

/// Requests received and not yet answered, this scrape included.
async fn in_flight(addr: SocketAddr) -> u64 {
    let scrape = exchange(addr, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").await;
    scrape
        .lines()
        .find_map(|l| l.strip_prefix("condense_http_requests_in_flight "))
        .and_then(|v| v.trim().parse().ok())
        .expect("the in-flight gauge")
}

/// As many slow uploads as there are places (16 by default) leave the API
/// answering everyone else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_uploads_hold_no_place_among_the_requests_at_work() {
    let addr = start().await;
    let alone = in_flight(addr).await;
    let mut uploads = Vec::new();
    for _ in 0..16 {
        uploads.push(slow_upload(addr).await);
    }
    // Every one of them is in: its head read, its body awaited.
    let waited = tokio::time::timeout(GENEROUS, async {
        while in_flight(addr).await < alone + 16 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the 16 uploads never all arrived");
    let body = r#"{"text": "hello"}"#;
    let answer = exchange(
        addr,
        &format!(
            "POST /v1/tokens HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop(uploads);
}

/// A body that stops arriving is a 503 `timeout` with `Retry-After`, after
/// the grace and the time its size takes at the slowest rate taken.
#[tokio::test]
async fn a_stalled_body_is_refused_with_when_to_come_back() {
    let addr = start().await;
    let mut s = slow_upload(addr).await;
    let answer = server::read_response(&mut s, GENEROUS).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let lower = answer.to_ascii_lowercase();
    assert!(lower.contains("\r\nretry-after: 5\r\n"), "{answer}");
    assert!(answer.contains("urn:condense:problem:timeout"), "{answer}");
    assert!(
        answer.contains("did not arrive within 7 seconds"),
        "{answer}"
    );
}

/// A body refused from its head (413) while its client is still sending
/// it: the client gets to read the answer, not a reset connection.
#[tokio::test]
async fn a_client_still_uploading_a_refused_body_reads_the_answer() {
    let url = server::serve(condense::Config {
        limits: condense::config::LimitSettings {
            body_limit: 1024 * 1024,
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    let addr: SocketAddr = url.trim_start_matches("http://").parse().unwrap();
    let mut s = TcpStream::connect(addr).await.expect("connects");
    let size = 8 * 1024 * 1024;
    let head = format!(
        "POST /v1/tokens HTTP/1.1\r\nHost: localhost\r\n\
         Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    // The whole body, as a client that does not look for an early answer sends it.
    let chunk = vec![b' '; 64 * 1024];
    for _ in 0..size / chunk.len() {
        s.write_all(&chunk)
            .await
            .expect("the upload is drained, not reset");
    }
    let answer = server::read_response(&mut s, GENEROUS).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
}
