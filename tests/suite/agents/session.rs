//! What one session's log shows (`provider.py`'s `GET /_log`): each request
//! as the client sent it (the relay's record, with condense's response
//! headers and the relay's clock) next to the same request as the provider
//! received it, and the checks and numbers drawn from them.

use std::collections::BTreeSet;
use std::fmt::Display;

use serde_json::Value;

use super::harness::Cli;

/// condense's summary message starts with this (`src/thread/marker.rs`).
const SUMMARY: &str = "[Context Summary - ";
/// The Responses API's own compaction item: the summary the `provider`
/// summarizer puts in a span's place.
const COMPACTION: &str = "compaction";
/// The profile's `min_recent_messages` (`harness::condense`).
const RECENT: usize = 4;
/// Headers that belong to one hop (or the relay's own tag), not the client,
/// and the one condense leaves behind on purpose.
const HOP: [&str; 7] = [
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "x-relay-id",
    // condense asks for the answer as it is sent, to read its bill on the
    // way (docs/proxy.md, "The provider's bill").
    "accept-encoding",
];

/// One request: as the client sent it and as the provider received it.
pub struct Turn<'a> {
    pub client: &'a Value,
    pub provider: Option<&'a Value>,
}

impl Turn<'_> {
    pub fn condense(&self, name: &str) -> Option<&str> {
        header(&self.client["response_headers"], name)
    }
    pub fn compressed(&self) -> bool {
        self.condense("x-condense-compressed") == Some("true")
    }
    /// Thinking blocks or reasoning items the provider dropped (its
    /// `input_transformations`: a prefix that changed since it made them).
    pub fn dropped(&self) -> usize {
        self.provider
            .and_then(|p| p["input_transformations"].as_array())
            .map_or(0, Vec::len)
    }
    /// Kept turns whose stale thinking condense removed (`x-condense-thinking`).
    pub fn removed(&self) -> usize {
        let thinking = self.condense("x-condense-thinking").unwrap_or_default();
        let n = thinking.strip_prefix("removed=").unwrap_or_default();
        n.split(';')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
    /// Milliseconds from the relay forwarding to the provider receiving.
    pub fn added_ms(&self) -> Option<f64> {
        Some(self.provider?["t_received"].as_f64()? - self.client["t_forward"].as_f64()?)
    }
}

pub fn header<'a>(pairs: &'a Value, name: &str) -> Option<&'a str> {
    let pairs = pairs.as_array()?;
    let found = pairs
        .iter()
        .find(|p| p[0].as_str().is_some_and(|n| n.eq_ignore_ascii_case(name)));
    found?[1].as_str()
}

pub struct Session {
    pub cli: Cli,
    pub entries: Vec<Value>,
}

impl Session {
    /// The field that holds the thread.
    pub fn thread_field(&self) -> &'static str {
        match self.cli {
            Cli::ClaudeCode => "messages",
            Cli::Codex => "input",
        }
    }

    fn shell_tool(&self) -> &'static str {
        match self.cli {
            Cli::ClaudeCode => "Bash",
            Cli::Codex => "exec_command",
        }
    }

    fn of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.entries.iter().filter(move |e| e["kind"] == kind)
    }

    /// The agent loop's requests (those offering the shell tool), in order.
    pub fn turns(&self) -> Vec<Turn<'_>> {
        let tool = self.shell_tool();
        self.requests(|r| {
            let tools = r["body"]["tools"].as_array();
            tools.is_some_and(|t| t.iter().any(|t| t["name"] == tool))
        })
    }

    /// Codex's own compactions: it asks for a handoff summary of its
    /// thread in a request offering no tools (its `compact_prompt`).
    pub fn own_compactions(&self) -> Vec<Turn<'_>> {
        self.requests(|r| {
            let tools = r["body"]["tools"].as_array();
            r["path"] == "/v1/responses" && tools.is_none_or(Vec::is_empty)
        })
    }

    /// The relayed requests that are `wanted`, in order.
    fn requests(&self, wanted: impl Fn(&Value) -> bool) -> Vec<Turn<'_>> {
        self.of_kind("relay")
            .filter(|r| wanted(r))
            .map(|client| Turn {
                client,
                provider: self
                    .of_kind("provider")
                    .find(|p| p["id"] == client["provider_id"]),
            })
            .collect()
    }

    /// Every request the provider refused, with its reason.
    pub fn rejections(&self) -> Vec<String> {
        self.of_kind("provider")
            .filter_map(|p| Some(format!("{}: {}", p["path"], p["rejected"].as_str()?)))
            .collect()
    }

    /// Relayed answers whose bytes differ from what the provider sent.
    pub fn altered_streams(&self) -> Vec<String> {
        self.of_kind("relay")
            .filter(|r| r["provider_id"].is_number() && r["stream_identical"] != true)
            .map(|r| format!("request {} ({})", r["id"], r["path"]))
            .collect()
    }

    /// The summary a forwarded thread carries, if any.
    pub fn summary_of(&self, turn: &Turn<'_>) -> Option<Summary> {
        let field = self.thread_field();
        let f = thread(&turn.provider?["body"], field);
        let m = &f[summary_at(thread(&turn.client["body"], field), f)?];
        Some(match first_text(m).filter(|t| t.starts_with(SUMMARY)) {
            Some(text) => Summary::Text(text.to_string()),
            None => Summary::Item(serde_json::to_string(m).ok()?),
        })
    }

    /// condense's calls to the provider's `/responses/compact` (the
    /// `provider` summarizer's), each with the item it answered (`answer`).
    pub fn compactions(&self) -> Vec<&Value> {
        self.of_kind("provider")
            .filter(|p| p["path"] == "/v1/responses/compact")
            .collect()
    }
}

/// What condense put in the place of a span: its own summary's text, or
/// (the `provider` summarizer) the provider's compaction item, encrypted,
/// as JSON, key order included.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Summary {
    Text(String),
    Item(String),
}

/// Where condense's summary stands in the forwarded `f`: a message of its
/// text, or a compaction item the client's `c` does not carry (a
/// client's own compaction is kept as the client's).
fn summary_at(c: &[Value], f: &[Value]) -> Option<usize> {
    f.iter().position(|m| {
        first_text(m).is_some_and(|t| t.starts_with(SUMMARY))
            || (m["type"] == COMPACTION && !c.iter().any(|x| same(x, m)))
    })
}

/// A message condense keeps in front of any summary, from wherever it
/// stood: system and developer messages, and the Responses settings items.
fn pinned(m: &Value) -> bool {
    matches!(m["role"].as_str(), Some("system" | "developer"))
        || matches!(
            m["type"].as_str(),
            Some("configuration_update" | "additional_tools")
        )
}

/// A message's (or item's) first text.
fn first_text(m: &Value) -> Option<&str> {
    m["content"].as_str().or_else(|| {
        let first = m["content"].as_array()?.first()?;
        first["text"].as_str()
    })
}

/// Equal as written, key order included (`Value`'s own `==` ignores the
/// order of an object's keys).
fn same(a: &Value, b: &Value) -> bool {
    serde_json::to_vec(a).ok() == serde_json::to_vec(b).ok()
}

fn same_all(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
}

fn common_prefix(a: &[Value], b: &[Value]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| same(x, y)).count()
}

/// The beta condense adds when a request must let the API drop thinking
/// blocks bound to a changed prefix (docs/compression.md, "Preserved thinking").
const DROP_BLOCK_BETA: &str = "thinking-binding-controls-2026-08-01";

/// `m` without its thinking and redacted thinking blocks: what condense
/// forwards of a kept turn whose thinking follows a summary written after it.
fn unthought(m: &Value) -> Value {
    let mut m = m.clone();
    if let Some(blocks) = m["content"].as_array_mut() {
        blocks.retain(|b| !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")));
    }
    m
}

/// `m` without its item `id`: what condense forwards of an item whose
/// reasoning it removed (the Responses API pairs an item sent by id with
/// its reasoning).
fn unpaired(m: &Value) -> Option<Value> {
    let mut m = m.clone();
    m.as_object_mut()?.shift_remove("id")?;
    Some(m)
}

/// The forwarded `f` is the client's `c`, or `c` with its stale thinking
/// removed, or without the id that paired it with a removed reasoning item.
fn kept_as(c: &Value, f: &Value) -> bool {
    same(c, f) || same(&unthought(c), f) || unpaired(c).is_some_and(|c| same(&c, f))
}

/// A Responses reasoning item condense did not forward (it removed it as stale).
fn removed_reasoning(c: &Value, f: &[Value]) -> bool {
    c["type"] == "reasoning" && !f.iter().any(|x| same(c, x))
}

/// The forwarded `thinking` is the client's, with at most condense's
/// `drop_block` opt-out added.
fn thinking_as(sent: &Value, got: &Value) -> bool {
    let mut got = got.clone();
    let opted = got
        .as_object_mut()
        // `shift_remove`: `remove` moves the last key into its place.
        .and_then(|o| o.shift_remove("block_binding"))
        .is_none_or(|b| {
            same(
                &b,
                &serde_json::json!({"prefix_mismatch_behavior": "drop_block"}),
            )
        });
    opted && same(sent, &got)
}

/// The `anthropic-beta` list without condense's drop_block beta.
fn betas(v: Option<&str>) -> Vec<&str> {
    v.into_iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|b| !b.is_empty() && *b != DROP_BLOCK_BETA)
        .collect()
}

/// Failed checks, collected so one run reports all of them.
#[derive(Default)]
pub struct Checks(pub Vec<String>);

impl Checks {
    pub fn check(&mut self, ok: bool, what: impl Display) {
        if !ok {
            self.0.push(what.to_string());
        }
    }
}

impl Session {
    /// The client's request and the forwarded one differ only where
    /// condense put its summary: every other field and every other message
    /// are the client's, value for value and key order included.
    pub fn check_kept(&self, turn: &Turn<'_>, checks: &mut Checks) {
        let Some(provider) = turn.provider else {
            return;
        };
        let field = self.thread_field();
        let (sent, got) = (&turn.client["body"], &provider["body"]);
        let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>());
        checks.check(
            keys(sent) == keys(got),
            format!("request {}: the body's fields changed", turn.client["id"]),
        );
        for (k, v) in sent.as_object().into_iter().flatten() {
            let kept = match k.as_str() {
                k if k == field => true,
                "thinking" => thinking_as(v, &got[k]),
                _ => same(v, &got[k]),
            };
            checks.check(
                kept,
                format!("request {}: `{k}` changed", turn.client["id"]),
            );
        }
        let id = &turn.client["id"];
        let (c, f) = (thread(sent, field), thread(got, field));
        let summary = summary_at(c, f);
        checks.check(
            summary.is_some() == turn.compressed(),
            format!(
                "request {id}: compressed is {}, a summary {summary:?}",
                turn.compressed()
            ),
        );
        // Every message but the summary is one of the client's, in the
        // client's order (pinned system messages may come from the span the
        // summary replaced), and the newest ones close the thread.
        let mut rest = c.iter();
        let kept = f
            .iter()
            .enumerate()
            .filter(|(n, _)| Some(*n) != summary)
            .all(|(_, m)| rest.any(|x| kept_as(x, m)));
        checks.check(
            kept,
            format!("request {id}: a forwarded message is not the client's, or out of order"),
        );
        let recent = RECENT.min(c.len());
        // Less the reasoning items condense removed as stale.
        let newest: Vec<&Value> = c[c.len() - recent..]
            .iter()
            .filter(|x| !removed_reasoning(x, f))
            .collect();
        let closes = f.len() >= newest.len()
            && f[f.len() - newest.len()..]
                .iter()
                .zip(&newest)
                .all(|(f, c)| kept_as(c, f));
        checks.check(
            closes,
            format!("request {id}: the client's newest {recent} messages are not the forwarded thread's last"),
        );
        checks.check(
            summary.is_some() || f.len() == c.len(),
            format!(
                "request {id}: not compressed, yet {} of {} messages forwarded",
                f.len(),
                c.len()
            ),
        );
        if let Some(at) = summary.filter(|&at| f[at]["type"] == COMPACTION) {
            self.check_compacted(turn, at, checks);
        }
    }

    /// A thread whose summary is the provider's compaction item (at `at`):
    /// the one item condense put there, after the pinned messages only, and
    /// every item after it the client's newest, verbatim (the provider keeps
    /// the reasoning after its own compaction valid: nothing removed).
    fn check_compacted(&self, turn: &Turn<'_>, at: usize, checks: &mut Checks) {
        let Some(provider) = turn.provider else {
            return;
        };
        let field = self.thread_field();
        let (c, f) = (
            thread(&turn.client["body"], field),
            thread(&provider["body"], field),
        );
        let id = &turn.client["id"];
        let ours = f
            .iter()
            .filter(|m| m["type"] == COMPACTION && !c.iter().any(|x| same(x, m)))
            .count();
        checks.check(
            ours == 1,
            format!("request {id}: {ours} compaction items of condense's, not one"),
        );
        checks.check(
            f[..at].iter().all(pinned),
            format!("request {id}: the compaction item follows more than the pinned messages"),
        );
        let kept = &f[at + 1..];
        checks.check(
            kept.len() <= c.len() && same_all(kept, &c[c.len() - kept.len()..]),
            format!(
                "request {id}: the {} items after the compaction item are not the client's newest, verbatim",
                kept.len()
            ),
        );
    }

    /// Two consecutive turns that carry the same summary share the
    /// forwarded prefix, losing no more of it than the client changed.
    /// Whether the pair was compared (it carries one summary).
    pub fn check_prefix(&self, a: &Turn<'_>, b: &Turn<'_>, checks: &mut Checks) -> bool {
        let (Some(pa), Some(pb)) = (a.provider, b.provider) else {
            return false;
        };
        if self.summary_of(a).is_none() || self.summary_of(a) != self.summary_of(b) {
            return false;
        }
        let field = self.thread_field();
        let (ca, cb) = (
            thread(&a.client["body"], field),
            thread(&b.client["body"], field),
        );
        let (fa, fb) = (thread(&pa["body"], field), thread(&pb["body"], field));
        let client_changed = ca.len() - common_prefix(ca, cb);
        let mut kept = common_prefix(fa, fb);
        // One exception: the final thinking of the turn a summary first came
        // into use, sent then with `drop_block`, is removed from the next
        // turn on, as the model then read the thread (docs/compression.md,
        // "Preserved thinking"): the prefix changes there, once.
        if let (Some(x), Some(y)) = (fa.get(kept), fb.get(kept))
            && !same(x, y)
            && same(&unthought(x), y)
        {
            kept += 1 + common_prefix(&fa[kept + 1..], &fb[kept + 1..]);
        }
        let forwarded_changed = fa.len() - kept;
        checks.check(
            forwarded_changed <= client_changed,
            format!(
                "requests {} and {}: same summary, but the forwarded prefix changed {forwarded_changed} \
                 messages from the end where the client changed {client_changed}",
                a.client["id"], b.client["id"]
            ),
        );
        true
    }

    /// The provider dropped no thinking that condense did not announce: only
    /// a request sent with Anthropic's `drop_block` may lose blocks (the
    /// Responses API has no opt-in; it drops stale reasoning silently).
    pub fn check_dropped(&self, turn: &Turn<'_>, checks: &mut Checks) {
        let announced = turn
            .condense("x-condense-thinking")
            .is_some_and(|t| t.contains("drop_block"));
        checks.check(
            turn.dropped() == 0 || announced,
            format!(
                "request {}: the provider dropped {} thinking block(s) or reasoning item(s) condense did not report: {}",
                turn.client["id"],
                turn.dropped(),
                turn.provider.map_or(Value::Null, |p| p["input_transformations"].clone())
            ),
        );
    }

    /// The query string and every client header reached the provider.
    pub fn check_forwarded(&self, turn: &Turn<'_>, checks: &mut Checks) {
        let Some(provider) = turn.provider else {
            return;
        };
        let id = &turn.client["id"];
        checks.check(
            provider["path"] == turn.client["path"],
            format!(
                "request {id}: sent to {}, reached the provider as {}",
                turn.client["path"], provider["path"]
            ),
        );
        let lost: BTreeSet<&str> = turn.client["headers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p[0].as_str())
            .filter(|n| !HOP.contains(&n.to_ascii_lowercase().as_str()))
            .filter(|n| {
                let (got, sent) = (
                    header(&provider["headers"], n),
                    header(&turn.client["headers"], n),
                );
                match n.eq_ignore_ascii_case("anthropic-beta") {
                    true => betas(got) != betas(sent),
                    false => got != sent,
                }
            })
            .collect();
        checks.check(
            lost.is_empty(),
            format!("request {id}: headers lost or changed: {lost:?}"),
        );
    }
}

fn thread<'a>(body: &'a Value, field: &str) -> &'a [Value] {
    body[field].as_array().map(Vec::as_slice).unwrap_or(&[])
}
