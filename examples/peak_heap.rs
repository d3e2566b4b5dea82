//! Peak heap of one `/v1/compress` request, per byte of its body, for the
//! worst shape the limits let through: one message of ~100,000 small text
//! parts (each part is a JSON object), and where it goes: the parsed JSON,
//! the thread model, the rest. Heap, not RSS: `admission::memory`'s factors
//! are RSS, measured on the whole process by `bench/hostile_memory.py`.
//!
//! ```text
//! cargo run --release --example peak_heap -- [BODY_MB] [TEXT]
//! ```
//!
//! `TEXT` is `ascii` (default) or `cjk` (3 bytes a character, so a body
//! near the byte limit stays under the character limit), or `numbers`: one
//! short message carrying a field condense keeps but does not count, an
//! array of ~990,000 one-digit numbers (`BODY_MB` is then ignored). Counts
//! every allocation with a wrapping global allocator: heap bytes live, not
//! RSS (fragmentation comes on top; the hostile bench measures it). On glibc
//! it also counts the allocator's chunks (`malloc_usable_size` + 8 bytes of
//! header: 32 at least), what a small allocation really takes. Prints one
//! JSON object.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::Body;
use axum::http::Request;
use condense::{AppState, Config};
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static CHUNKS: AtomicUsize = AtomicUsize::new(0);
static CHUNKS_PEAK: AtomicUsize = AtomicUsize::new(0);

/// What the allocator took for `p`: its usable size and its header.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn chunk(p: *mut u8) -> usize {
    // SAFETY: `p` is a live allocation of the system allocator.
    unsafe { libc::malloc_usable_size(p.cast()) + 8 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn chunk(_: *mut u8) -> usize {
    0
}

fn took(p: *mut u8) {
    let now = CHUNKS.fetch_add(chunk(p), Ordering::Relaxed) + chunk(p);
    CHUNKS_PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            took(p);
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        CHUNKS.fetch_sub(chunk(p), Ordering::Relaxed);
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        let old = chunk(p);
        let q = unsafe { System.realloc(p, layout, new) };
        if !q.is_null() {
            CHUNKS.fetch_sub(old, Ordering::Relaxed);
            took(q);
            if new >= layout.size() {
                let now =
                    LIVE.fetch_add(new - layout.size(), Ordering::Relaxed) + new - layout.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// One message of `parts` text parts, each text `chars` characters long.
fn body(parts: usize, chars: usize, cjk: bool) -> Vec<u8> {
    let content: Vec<_> = (0..parts)
        .map(|i| {
            let mut text = format!("{i} ");
            let filler = if cjk { '文' } else { 'w' };
            while text.chars().count() < chars {
                text.push(filler);
                if text.chars().count() % 6 == 5 {
                    text.push(' ');
                }
            }
            json!({"type": "text", "text": text})
        })
        .collect();
    serde_json::to_vec(&json!({
        "messages": [{"role": "user", "content": content}],
        "model": "gpt-4o",
        "force": true,
    }))
    .unwrap()
}

/// One short message with ~990,000 one-digit numbers in a field condense
/// keeps but does not count: the most values the limits let through.
fn numbers() -> Vec<u8> {
    let n = condense::thread::MAX_JSON_VALUES - 10_000;
    let digits: Vec<String> = (0..n).map(|i| (i % 10).to_string()).collect();
    format!(
        r#"{{"messages": [{{"role": "user", "content": "hi", "metadata": [{}]}}], "model": "gpt-4o", "force": true}}"#,
        digits.join(",")
    )
    .into_bytes()
}

/// The worst-shape body of about `bytes` bytes.
fn sized(bytes: usize, cjk: bool) -> Vec<u8> {
    // Within the node limit: the message, its array, the top object and
    // the messages array are four of the 100,000.
    let parts = condense::thread::MAX_JSON_NODES - 4;
    let per_char = if cjk { 3 } else { 1 };
    let overhead = body(parts, 1, cjk).len();
    let chars = 1 + bytes.saturating_sub(overhead) / parts / per_char;
    body(parts, chars, cjk)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mb: f64 = args.next().map_or(6.5, |a| a.parse().expect("BODY_MB"));
    let text = args.next();
    let cjk = text.as_deref() == Some("cjk");
    let app = condense::http::router(AppState::new(Config::default()).unwrap());
    let bytes = match text.as_deref() {
        Some("numbers") => numbers(),
        _ => sized((mb * 1e6) as usize, cjk),
    };
    let n = bytes.len();
    let stages = stages(&bytes);
    let req = |b: Vec<u8>| {
        Request::post("/v1/compress")
            .header("content-type", "application/json")
            .body(Body::from(b))
            .unwrap()
    };
    // A warm-up of another size, so lazily built tables are not counted.
    let _ = app.clone().oneshot(req(sized(100_000, cjk))).await;
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let chunks_base = CHUNKS.load(Ordering::Relaxed);
    CHUNKS_PEAK.store(chunks_base, Ordering::Relaxed);
    let res = app.clone().oneshot(req(bytes)).await.unwrap();
    let status = res.status().as_u16();
    let answer = res.into_body().collect().await.unwrap().to_bytes();
    let out = answer.len();
    if status != 200 {
        eprintln!("{}", String::from_utf8_lossy(&answer));
    }
    let peak = PEAK.load(Ordering::Relaxed) - base;
    let chunks = CHUNKS_PEAK.load(Ordering::Relaxed) - chunks_base;
    println!(
        "{}",
        json!({
            "body_bytes": n,
            "status": status,
            "answer_bytes": out,
            "peak_heap_bytes": peak,
            "peak_per_body_byte": ratio(peak, n),
            "peak_chunk_bytes": chunks,
            "peak_chunks_per_body_byte": ratio(chunks, n),
            "stages_live_per_body_byte": stages,
        })
    );
}

fn ratio(a: usize, b: usize) -> f64 {
    (a as f64 / b as f64 * 100.0).round() / 100.0
}

/// Heap live after each step of reading the body, per body byte: its
/// `Value` tree, and the thread model built from it.
fn stages(bytes: &[u8]) -> serde_json::Value {
    let base = LIVE.load(Ordering::Relaxed);
    let chunks_base = CHUNKS.load(Ordering::Relaxed);
    let live = || ratio(LIVE.load(Ordering::Relaxed) - base, bytes.len());
    let started = std::time::Instant::now();
    let mut value = condense::thread::compact::from_slice(bytes).unwrap();
    let parse_ms = started.elapsed().as_secs_f64() * 1e3;
    let tree = live();
    let tree_chunks = ratio(CHUNKS.load(Ordering::Relaxed) - chunks_base, bytes.len());
    let messages = match value["messages"].take() {
        serde_json::Value::Array(m) => m,
        _ => unreachable!(),
    };
    drop(value);
    let thread = condense::thread::parse_owned(condense::thread::OwnedThread {
        messages,
        ..Default::default()
    })
    .unwrap();
    let model = live();
    drop(thread);
    json!({
        "value_tree": tree,
        "value_tree_chunks": tree_chunks,
        "parse_ms": (parse_ms * 10.0).round() / 10.0,
        "thread_model": model,
    })
}
