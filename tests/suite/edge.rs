//! The gates over real sockets: shedding under many concurrent requests,
//! the rate limit per client address, and the keys file reloaded when it
//! changes and on SIGHUP. Condense serves on a free port
//! (`support/server.rs`); "slow" is a stub upstream that holds every call
//! until the test releases it, never a sleep.
use crate::support::{server, stub};

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use stub::Fault;

/// Generous: a loaded 2-core machine. Nothing here measures time.
const PATIENCE: Duration = Duration::from_secs(120);

fn client_from(ip: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(ip.parse::<IpAddr>().unwrap())
        .timeout(PATIENCE)
        .build()
        .unwrap()
}

fn client() -> reqwest::Client {
    client_from("127.0.0.1")
}

async fn serve(config: condense::Config) -> String {
    server::serve(condense::Config {
        cache: condense::config::CacheSettings {
            database_url: Some("off".into()),
            ..config.cache
        },
        ..config
    })
    .await
}

/// Waits (generously) until `done` holds.
async fn until(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done().await {
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A compression the upstream writes, of a thread of its own (identical
/// ones would share one upstream call).
fn llm_compression(i: usize) -> Value {
    let messages: Vec<Value> = (0..12)
        .map(|j| {
            let role = if j % 2 == 0 { "user" } else { "assistant" };
            json!({"role": role, "content": format!("thread {i}, message {j}")})
        })
        .collect();
    json!({"messages": messages, "force": true, "summarizer": {"strategy": "llm"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_concurrent_requests_past_the_limit_are_shed_at_once() {
    const LIMIT: usize = 4;
    let upstream = stub::start(Fault::Held, false).await;
    let provider = stub::start(Fault::Ok, false).await;
    let url = serve(condense::Config {
        limits: condense::config::LimitSettings {
            max_concurrency: LIMIT,
            ..Default::default()
        },
        upstream: condense::config::UpstreamSettings {
            url: Some(upstream.url.clone()),
            model: "stub-model".into(),
            max_concurrency: LIMIT,
            timeout: Duration::from_secs(600),
            max_retries: 0,
            ..Default::default()
        },
        proxy: condense::config::ProxySettings {
            openai_url: Some(provider.url.clone()),
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    let http = client();
    let hold = |i: usize, from: &str| {
        let (http, url) = (client_from(from), url.clone());
        tokio::spawn(async move {
            http.post(format!("{url}/v1/compress"))
                .json(&llm_compression(i))
                .send()
                .await
                .unwrap()
        })
    };
    let mut held: Vec<_> = (0..LIMIT - 1).map(|i| hold(i, "127.0.0.2")).collect();
    until("three places are taken", async || {
        upstream.calls() == LIMIT - 1
    })
    .await;
    // One caller holds at most three quarters of the places: the last is another's.
    let r = hold(LIMIT, "127.0.0.2").await.unwrap();
    assert_eq!(r.status(), 503, "past its share");
    held.push(hold(LIMIT - 1, "127.0.0.3"));
    until("every place is taken", async || upstream.calls() == LIMIT).await;

    // Twenty more at once: each is answered while the four are still held,
    // so none of them waited for a place.
    let extra: Vec<_> = (0..20)
        .map(|i| {
            let (http, url) = (http.clone(), url.clone());
            tokio::spawn(async move {
                let path = if i % 2 == 0 {
                    "/v1/tokens"
                } else {
                    "/v1/compress"
                };
                let body = json!({"messages": [{"role": "user", "content": format!("extra {i}")}]});
                http.post(format!("{url}{path}"))
                    .json(&body)
                    .send()
                    .await
                    .unwrap()
            })
        })
        .collect();
    for r in extra {
        let r = r.await.unwrap();
        assert_eq!(r.status(), 503);
        assert_eq!(r.headers()["retry-after"], "1");
        assert_eq!(r.headers()["content-type"], "application/problem+json");
        let p: Value = r.json().await.unwrap();
        assert_eq!(p["type"], "urn:condense:problem:overloaded");
    }
    assert_eq!(upstream.calls(), LIMIT, "the shed requests did no work");
    // The probes answer, and the proxy still forwards (unchanged, with a note).
    for path in ["/healthz", "/readyz"] {
        let r = http.get(format!("{url}{path}")).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
    }
    let r = http
        .post(format!("{url}/v1/chat/completions"))
        .json(&json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let note = r.headers()["x-condense-note"].to_str().unwrap().to_string();
    assert!(note.contains("concurrency limit"), "{note}");
    assert_eq!(provider.calls(), 1);

    upstream.release();
    for h in held {
        let r = h.await.unwrap();
        assert_eq!(r.status(), 200);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["summary"]["strategy"], "llm");
    }
    let r = http
        .post(format!("{url}/v1/tokens"))
        .json(&json!({"text": "the places are free again"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn without_keys_each_client_address_has_its_own_bucket() {
    let url = serve(condense::Config {
        access: condense::config::AccessSettings {
            rate_limit_per_sec: 0.001,
            rate_limit_burst: 1,
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    let tokens = async |http: &reqwest::Client| {
        http.post(format!("{url}/v1/tokens"))
            .json(&json!({"text": "hello"}))
            .send()
            .await
            .unwrap()
    };
    // 127.0.0.0/8 is all loopback: two addresses, two clients.
    let (one, two) = (client_from("127.0.0.1"), client_from("127.0.0.2"));
    assert_eq!(tokens(&one).await.status(), 200);
    let refused = tokens(&one).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "1000");
    assert_eq!(refused.headers()["ratelimit-remaining"], "0");
    assert_eq!(
        tokens(&two).await.status(),
        200,
        "another address, another bucket"
    );
    // The probes are never limited.
    for _ in 0..3 {
        let r = one.get(format!("{url}/healthz")).send().await.unwrap();
        assert_eq!(r.status(), 200);
    }
}

const OLD: &str = "old-key-0123456789abcdef";
const NEW: &str = "new-key-0123456789abcdef";

/// A keys file of its own, removed at the end.
struct KeysFile(PathBuf);

impl KeysFile {
    fn new(text: &str) -> Self {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let path = dir.join(format!("keys-{}", uuid::Uuid::new_v4().simple()));
        std::fs::write(&path, text).unwrap();
        Self(path)
    }

    /// Replaced as an editor or a Secret volume does: a new file moved in.
    fn replace(&self, text: &str) {
        let tmp = self.0.with_extension("new");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &self.0).unwrap();
    }
}

impl Drop for KeysFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

async fn status_with(url: &str, key: &str) -> u16 {
    client()
        .get(format!("{url}/v1/models"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_changed_keys_file_takes_effect_without_a_restart() {
    let file = KeysFile::new(&format!("{OLD}\n"));
    let url = serve(condense::Config {
        access: condense::config::AccessSettings {
            api_keys_file: Some(file.0.clone()),
            api_keys_reload: Duration::from_secs(1),
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    assert_eq!(status_with(&url, OLD).await, 200);
    assert_eq!(status_with(&url, NEW).await, 401);
    file.replace(&format!("# rotated\n{NEW}\n"));
    until("the new key is accepted", async || {
        status_with(&url, NEW).await == 200
    })
    .await;
    assert_eq!(status_with(&url, OLD).await, 401, "the old key is gone");
}

#[cfg(unix)]
#[tokio::test]
async fn sighup_reloads_the_keys_file() {
    let file = KeysFile::new(&format!("{OLD}\n"));
    // Looked at only once an hour: only the signal can reload it in time.
    let url = serve(condense::Config {
        access: condense::config::AccessSettings {
            api_keys_file: Some(file.0.clone()),
            api_keys_reload: Duration::from_secs(3600),
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    file.replace(&format!("{NEW} llm\n"));
    assert_eq!(status_with(&url, NEW).await, 401);
    // Condense runs in this process: the signal goes to it (its handler is
    // installed before `serve` returns).
    let sent = std::process::Command::new("kill")
        .args(["-HUP", &std::process::id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    until("the new key is accepted", async || {
        status_with(&url, NEW).await == 200
    })
    .await;
    assert_eq!(status_with(&url, OLD).await, 401);
}
