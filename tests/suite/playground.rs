//! The playground in a real browser: condense serves on a free port, and
//! `tests/browser/playground.py` drives headless Chromium through the page,
//! checking every number it renders against the API's own answer for the
//! same input. Screenshots land in `target/tmp/playground/`.
use crate::support::{live, server};

use std::path::PathBuf;
use std::process::Command;

#[tokio::test(flavor = "multi_thread")]
async fn the_page_shows_what_the_api_answers() {
    if live::browser("the_page_shows_what_the_api_answers").is_none() {
        return;
    }
    let url = serve(condense::Config::default()).await;
    // A second one whose upstream LLM is down: its summaries are degraded.
    let closed = {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        port.local_addr().unwrap()
    };
    let degraded = serve(condense::Config {
        upstream: condense::config::UpstreamSettings {
            url: Some(format!("http://{closed}/v1")),
            max_retries: 0,
            ..Default::default()
        },
        ..Default::default()
    })
    .await;

    // A third that needs an API key: the page asks for it.
    const KEY: &str = "playground-key-0123456789abcdef";
    let keyed = serve(condense::Config {
        access: condense::config::AccessSettings {
            api_keys: vec![condense::upstream::Secret::new(KEY)],
            ..Default::default()
        },
        ..Default::default()
    })
    .await;

    // A fourth with a summary cache, whose ledger holds two turns of one conversation.
    let dir = tempfile::tempdir().unwrap();
    let cache_url = format!("sqlite://{}", dir.path().join("cache.db").display());
    let ledgered = server::serve(condense::Config {
        cache: condense::config::CacheSettings {
            database_url: Some(cache_url.clone()),
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    const CONVERSATION: &str = "0123456789abcdef0123456789abcdef";
    let cache = condense::cache::Cache::connect(&cache_url, Default::default())
        .await
        .expect("the cache opens");
    for (sent, forwarded, reason) in [(9_000, 9_000, None), (12_000, 2_500, Some("cold_cache"))] {
        let turn = condense::cache::Turn {
            conversation: CONVERSATION.into(),
            route: "/v1/messages",
            provider: "anthropic",
            model: Some("claude-scripted".into()),
            sent_tokens: Some(sent),
            forwarded_tokens: Some(forwarded),
            bill: condense::cache::Bill {
                input: 3,
                cache_write_5m: forwarded + 100,
                output: 40,
                ..Default::default()
            },
            dropped_items: 0,
            summary_call_tokens: reason.map(|_| 0),
            reason: reason.map(str::to_string),
        };
        cache.append_turn(&turn).await.expect("a turn is written");
    }

    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("playground");
    let run = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .arg(root.join("tests/browser/playground.py"))
            .arg(&url)
            .arg(&out)
            .arg(&degraded)
            .arg(&keyed)
            .arg(KEY)
            .arg(&ledgered)
            .arg(CONVERSATION)
            .output()
            .expect("python3 runs")
    })
    .await
    .unwrap();
    assert!(
        run.status.success(),
        "the browser test failed:\n{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&run.stdout).expect("the script prints one JSON object");
    // Visible in the test command's output: where the screenshots are, and the page's weight.
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "playground: {report}");
    assert!(report["page_weight_bytes"].as_u64().unwrap() > 0);
}

/// Condense on a free port with `config` and no cache; its base URL.
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
