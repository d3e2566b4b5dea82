//! What the provider billed for one answer, read off the answer as it is
//! relayed: the `usage` of a JSON answer or of its SSE events, and the
//! items the provider says it dropped (`input_transformations`).
//!
//! The client's bytes are never held back for it: [`Meter::feed`] sees
//! each chunk after it was handed on and keeps only the bill, so a long
//! answer costs no copy. What was read is recorded when the answer ends,
//! however it ends: a client that leaves mid-stream was billed for its
//! input all the same. A billed turn goes to its conversation's ledger
//! (`cache::Turn`), which [`Ledger`] reads back.

mod ledger;
mod scan;

use axum::body::Bytes;
use futures_util::{Stream, StreamExt};
use reqwest::header::CONTENT_TYPE;
use serde_json::{Map, Value};

use crate::cache::{Cache, Turn};
use crate::metrics::Metrics;
use crate::thread::WireFormat;
use scan::Scan;

pub use crate::cache::Bill;
pub use ledger::{Difference, Ledger, LedgerTotals, LedgerTurn};

/// The keys read: the bill, the dropped items, and the model that billed.
const WANTED: &[&str] = &["usage", "input_transformations", "model"];

/// A dropped-item reason other than these is counted as `other` (the
/// metric's labels stay few whatever a provider writes).
const REASONS: &[&str] = &["prefix_mismatch"];

/// Reads one answer's bill as its bytes go by.
#[derive(Debug)]
pub struct Meter {
    format: WireFormat,
    scan: Scan,
    /// `Some` for an SSE stream: where the current line stands.
    line: Option<Line>,
    /// Every `usage` seen, merged field by field, the last value winning
    /// (Anthropic's `message_delta` repeats what grew since `message_start`).
    usage: Map<String, Value>,
    /// Dropped items by reason (a name of [`REASONS`] or `other`).
    pub dropped: Vec<(&'static str, u64)>,
    /// The model, as the answer names it (the last named).
    pub model: Option<String>,
}

/// An SSE line: its first bytes, until they tell whether it is `data:`.
#[derive(Debug, Default)]
struct Line {
    head: Vec<u8>,
    data: bool,
}

impl Meter {
    /// `content_type`: the answer's; `text/event-stream` is read as SSE.
    pub fn new(format: WireFormat, content_type: Option<&str>) -> Self {
        let sse = content_type.is_some_and(|t| t.trim_start().starts_with("text/event-stream"));
        Self {
            format,
            scan: Scan::new(WANTED),
            line: sse.then(Line::default),
            usage: Map::new(),
            dropped: Vec::new(),
            model: None,
        }
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        match &mut self.line {
            None => self.scan.feed(chunk),
            Some(line) => {
                for &b in chunk {
                    if b == b'\n' || b == b'\r' {
                        // JSON never holds a raw line break: the event's data ends here.
                        if line.data {
                            self.scan.reset();
                        }
                        *line = Line::default();
                    } else if line.data {
                        self.scan.feed(&[b]);
                    } else if line.head.len() < 5 {
                        line.head.push(b);
                        line.data = line.head == b"data:";
                    }
                }
            }
        }
        for (key, bytes) in std::mem::take(&mut self.scan.found) {
            let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
                continue;
            };
            match (key, value) {
                ("usage", Value::Object(fields)) => merge(&mut self.usage, fields),
                ("input_transformations", Value::Array(items)) => self.dropped_items(&items),
                ("model", Value::String(model)) => self.model = Some(model),
                _ => {}
            }
        }
    }

    fn dropped_items(&mut self, items: &[Value]) {
        for item in items {
            let reason = item.get("reason").and_then(Value::as_str).unwrap_or("");
            let reason = REASONS
                .iter()
                .find(|r| **r == reason)
                .copied()
                .unwrap_or("other");
            match self.dropped.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, n)) => *n += 1,
                None => self.dropped.push((reason, 1)),
            }
        }
    }

    /// The bill, if the answer carried one.
    pub fn bill(&self) -> Option<Bill> {
        if self.usage.is_empty() {
            return None;
        }
        let u = |path: &[&str]| {
            let mut v = self.usage.get(path[0]);
            for key in &path[1..] {
                v = v.and_then(|v| v.get(key));
            }
            v.and_then(Value::as_u64).unwrap_or(0)
        };
        Some(match self.format {
            WireFormat::Anthropic => {
                let total_write = u(&["cache_creation_input_tokens"]);
                let one_hour = u(&["cache_creation", "ephemeral_1h_input_tokens"]);
                Bill {
                    input: u(&["input_tokens"]),
                    cache_read: u(&["cache_read_input_tokens"]),
                    cache_write_5m: total_write.saturating_sub(one_hour),
                    cache_write_1h: one_hour,
                    output: u(&["output_tokens"]),
                    reasoning: 0,
                }
            }
            // OpenAI counts the cached part inside the input, and bills no
            // writes; Chat and Responses name the same fields apart.
            WireFormat::OpenAi | WireFormat::Responses => {
                let (input, output) = match self.format {
                    WireFormat::OpenAi => ("prompt_tokens", "completion_tokens"),
                    _ => ("input_tokens", "output_tokens"),
                };
                let (input_details, output_details) =
                    (format!("{input}_details"), format!("{output}_details"));
                let cached = u(&[&input_details, "cached_tokens"]);
                Bill {
                    input: u(&[input]).saturating_sub(cached),
                    cache_read: cached,
                    output: u(&[output]),
                    reasoning: u(&[&output_details, "reasoning_tokens"]),
                    ..Bill::default()
                }
            }
        })
    }
}

/// Where a billed turn is written: the ledger, and the turn as condense
/// knows it before the answer (its bill, model and dropped items are the
/// answer's).
pub struct Entry {
    pub cache: Cache,
    pub turn: Turn,
}

/// The answer's bytes as they come, each chunk handed on as it arrives;
/// the bill is recorded when the stream ends or is dropped (the client
/// left), and with `entry`, written to the ledger.
pub fn metered(
    response: reqwest::Response,
    format: WireFormat,
    metrics: Metrics,
    entry: Option<Entry>,
) -> impl Stream<Item = reqwest::Result<Bytes>> + Send + 'static {
    let content_type = response.headers().get(CONTENT_TYPE);
    let meter = Meter::new(format, content_type.and_then(|v| v.to_str().ok()));
    let mut tap = Tap {
        meter,
        metrics,
        provider: format.as_str(),
        entry,
    };
    response.bytes_stream().map(move |chunk| {
        if let Ok(bytes) = &chunk {
            tap.meter.feed(bytes);
        }
        chunk
    })
}

/// A meter that records what it read when it goes, however the answer ended.
struct Tap {
    meter: Meter,
    metrics: Metrics,
    provider: &'static str,
    entry: Option<Entry>,
}

impl Drop for Tap {
    fn drop(&mut self) {
        let bill = self.meter.bill();
        if let (Some(bill), Some(entry)) = (bill, self.entry.take()) {
            self.write(bill, entry);
        }
        if let Some(b) = bill {
            let kinds = [
                ("input", b.input),
                ("cache_read", b.cache_read),
                ("cache_write", b.cache_write_5m + b.cache_write_1h),
                ("output", b.output),
            ];
            self.metrics.provider_billed(self.provider, kinds);
        }
        for &(reason, n) in &self.meter.dropped {
            self.metrics.provider_dropped(self.provider, reason, n);
        }
    }
}

impl Tap {
    /// Writes the billed turn in a task of its own: the client's answer is
    /// over and waits for nothing; a failure is logged and counted.
    fn write(&self, bill: Bill, Entry { cache, mut turn }: Entry) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        turn.bill = bill;
        turn.model = self.meter.model.clone();
        turn.dropped_items = self.meter.dropped.iter().map(|(_, n)| n).sum();
        let metrics = self.metrics.clone();
        runtime.spawn(async move {
            if let Err(e) = cache.append_turn(&turn).await {
                tracing::warn!(backend = cache.backend(), error = %e, "the ledger could not record a turn");
                metrics.cache_error(cache.backend(), "ledger");
            }
        });
    }
}

/// `from` into `into`, field by field; nested objects merged the same way.
fn merge(into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(Value::Object(old)), Value::Object(new)) => merge(old, new),
            (_, Value::Null) => {}
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests;
