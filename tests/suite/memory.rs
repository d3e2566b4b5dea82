//! The memory budget on a real server: a request whose declared body would
//! take more than the budget has free is refused (503 `overloaded`,
//! `Retry-After`) from its head, before a byte of its body is sent, on an
//! API route and on a proxy route; once the request holding the budget
//! ends, the next is admitted. The holder is a proxied request whose
//! provider holds it: it keeps its body reserved until the provider answers.
//! Every wait is bounded generously (a minute): what is asserted is what
//! happens, never how fast.
use crate::support::server;

use std::time::Duration;

use condense::admission::memory::{REQUEST_BASE_BYTES, body_bytes, model_bytes, parsed_bytes};
use condense::thread::Shape;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::timeout;

const GENEROUS: Duration = Duration::from_secs(60);
const KIB: u64 = 1024;
const BUDGET: u64 = 1024 * KIB;
/// The holder's body: not a thread condense reads, so it is forwarded as it
/// came and stays this long while the provider holds it.
const HELD: usize = 600 * 1024;

use server::held_provider;

/// Reads until one response with a `Content-Length` body (or an interim
/// `100 Continue`) is complete.
async fn response(s: &mut TcpStream) -> String {
    server::read_response(s, GENEROUS).await
}

/// Sends only the head of a POST announcing `length` bytes, with
/// `Expect: 100-continue`; the first answer.
async fn head_only(addr: &str, path: &str, length: u64) -> (TcpStream, String) {
    let mut s = TcpStream::connect(addr).await.expect("connects");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         x-api-key: sk-test\r\nContent-Length: {length}\r\nExpect: 100-continue\r\n\r\n"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let answer = response(&mut s).await;
    (s, answer)
}

/// A server with a memory budget of `bytes` and no cache; its address.
async fn with_budget(bytes: u64) -> String {
    let url = server::serve(condense::Config {
        limits: condense::config::LimitSettings {
            memory_budget_bytes: bytes,
            ..Default::default()
        },
        cache: condense::config::CacheSettings {
            database_url: Some("off".into()),
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    url.trim_start_matches("http://").to_string()
}

fn assert_refused_for_memory(what: &str, answer: &str) {
    assert!(answer.starts_with("HTTP/1.1 503"), "{what}: {answer}");
    assert!(!answer.contains("100 Continue"), "{what}: {answer}");
    let lower = answer.to_ascii_lowercase();
    assert!(lower.contains("retry-after: 1"), "{what}: {answer}");
    assert!(
        answer.contains("urn:condense:problem:overloaded") && answer.contains("memory budget"),
        "{what}: {answer}"
    );
}

#[tokio::test]
async fn a_request_that_does_not_fit_is_refused_from_its_head_until_the_holder_ends() {
    let (provider, arrived, release) = held_provider().await;
    let url = server::serve(condense::Config {
        limits: condense::config::LimitSettings {
            memory_budget_bytes: BUDGET,
            ..Default::default()
        },
        cache: condense::config::CacheSettings {
            database_url: Some("off".into()),
            ..Default::default()
        },
        proxy: condense::config::ProxySettings {
            anthropic_url: Some(provider),
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    let addr = url.trim_start_matches("http://").to_string();

    // The holder: a proxied body the provider keeps.
    let body = format!(
        r#"{{"model": "claude-sonnet-4-5", "messages": "not a thread", "pad": "{}"}}"#,
        "x".repeat(HELD)
    );
    let held = body.len() as u64;
    let holder_addr = addr.clone();
    let holder = tokio::spawn(async move {
        let mut s = TcpStream::connect(&holder_addr).await.unwrap();
        let head = format!(
            "POST /v1/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             x-api-key: sk-test\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(body.as_bytes()).await.unwrap();
        response(&mut s).await
    });
    timeout(GENEROUS, arrived.notified())
        .await
        .expect("the holder reaches the provider");
    let free = BUDGET - body_bytes(held);

    // An API request whose parsed body would not fit: refused from its head.
    // (It would fit in the whole budget less what a streamed answer holds
    // until its last byte is gone, so that it is admitted afterwards.)
    let api = 48 * KIB;
    assert!(model_bytes(api) > free && model_bytes(api) <= BUDGET - 2 * REQUEST_BASE_BYTES);
    let (_s, answer) = head_only(&addr, "/v1/compress", api).await;
    assert_refused_for_memory("/v1/compress", &answer);

    // A proxied body that would not fit beside the held one: the same.
    let proxied = free - REQUEST_BASE_BYTES + 64 * KIB;
    let (_s, answer) = head_only(&addr, "/v1/messages", proxied).await;
    assert_refused_for_memory("/v1/messages", &answer);

    // The holder ends; the same requests are now admitted: asked for their body.
    release.notify_one();
    let answer = timeout(GENEROUS, holder).await.unwrap().unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    for (path, length) in [("/v1/messages", proxied), ("/v1/compress", api)] {
        let (_s, answer) = head_only(&addr, path, length).await;
        assert!(
            answer.starts_with("HTTP/1.1 100 Continue"),
            "{path}: {answer}"
        );
    }
}

#[tokio::test]
async fn the_probes_are_never_refused_for_memory_and_a_body_too_large_is_a_413() {
    let addr = with_budget(KIB).await;
    // Every byte of the budget taken by one request that cannot fit...
    let (_held, answer) = head_only(&addr, "/v1/compress", 1_000_000).await;
    assert!(answer.starts_with("HTTP/1.1 100 Continue"), "{answer}");
    // ...and the next refused, but not the probes.
    let (_s, answer) = head_only(&addr, "/v1/tokens", 10).await;
    assert_refused_for_memory("/v1/tokens", &answer);
    // A body over the body limit is told so (413, final), not to retry.
    let over = condense::Config::default().limits.body_limit as u64 + 1;
    let (_s, answer) = head_only(&addr, "/v1/tokens", over).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    for probe in ["/healthz", "/readyz"] {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        let req = format!("GET {probe} HTTP/1.1\r\nHost: localhost\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        let answer = response(&mut s).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{probe}: {answer}");
    }
}

/// A client that trickles its upload holds what it has sent, not the 24
/// times it would take parsed: two such requests leave the budget free for
/// a third, where reserving the worst case from the head would refuse it.
#[tokio::test]
async fn a_trickled_upload_holds_its_body_not_its_worst_case() {
    let addr = with_budget(BUDGET).await;
    let length = 48 * KIB;
    assert!(
        3 * model_bytes(length) > BUDGET,
        "the worst cases do not fit together"
    );
    assert!(2 * body_bytes(length) + model_bytes(length) <= BUDGET);
    let mut tricklers = Vec::new();
    for _ in 0..2 {
        let (mut s, answer) = head_only(&addr, "/v1/compress", length).await;
        assert!(answer.starts_with("HTTP/1.1 100 Continue"), "{answer}");
        s.write_all(b"{\"messages\": [").await.unwrap();
        tricklers.push(s);
    }
    let (_s, answer) = head_only(&addr, "/v1/compress", length).await;
    assert!(answer.starts_with("HTTP/1.1 100 Continue"), "{answer}");
}

/// What a body costs follows its shape, not its bytes alone: beside an
/// upload that holds most of the budget, a body of short texts is answered
/// and one of the same length holding ten thousand numbers (each a parsed
/// `Value`) is refused once it is in, though its bytes alone would fit.
#[tokio::test]
async fn a_body_is_charged_for_its_shape_once_it_is_in() {
    let addr = with_budget(BUDGET).await;
    let (_holder, answer) = head_only(&addr, "/v1/compress", 600 * KIB).await;
    assert!(answer.starts_with("HTTP/1.1 100 Continue"), "{answer}");
    let free = BUDGET - body_bytes(600 * KIB);

    let numbers = format!("[{}7]", "7,".repeat(10_000));
    let text = format!("\"{}w\"", "w ".repeat(10_000));
    let body = |extra: &str| {
        format!(
            r#"{{"model": "gpt-4o", "messages": [{{"role": "user", "content": "hi", "extra": {extra}}}]}}"#
        )
    };
    let (numbers, text) = (body(&numbers), body(&text));
    assert_eq!(numbers.len(), text.len());
    let bytes_alone = model_bytes(numbers.len() as u64);
    let shaped = parsed_bytes(&Shape::of(numbers.as_bytes()));
    assert!(
        bytes_alone < free && shaped > free,
        "{bytes_alone} {shaped} {free}"
    );

    for (body, admitted) in [(text, true), (numbers, false)] {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        let head = format!(
            "POST /v1/tokens HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(body.as_bytes()).await.unwrap();
        let answer = response(&mut s).await;
        match admitted {
            true => assert!(answer.starts_with("HTTP/1.1 200"), "{answer}"),
            false => assert_refused_for_memory("the numbers", &answer),
        }
    }
}
