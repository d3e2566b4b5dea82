//! Long generated conversations with facts planted on both sides and all
//! the way through: what a multi-session agent thread looks like to the
//! heuristic (user instructions, the assistant's findings, tool calls with
//! commands and paths, failing output), with filler between.
//!
//! Deterministic (a fixed-seed generator) so recall numbers can be compared
//! between versions of the summarizer.

use serde_json::{Value, json};

/// A planted fact: the exact text the summary should keep, and the turn it
/// was said in (to compare recall over the span's parts).
#[derive(Debug, Clone)]
pub struct Fact {
    pub text: String,
    pub turn: usize,
}

/// A conversation of `turns` turns in OpenAI chat form, and its facts.
pub struct Conversation {
    pub messages: Vec<Value>,
    pub facts: Vec<Fact>,
    /// Index of the first message of each turn.
    pub turn_starts: Vec<usize>,
}

/// xorshift64*: deterministic and dependency-free (the people
/// conversations draw with it too).
pub(super) struct Rng(pub(super) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub(super) fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    pub(super) fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const FIRST: [&str; 12] = [
    "Priya", "Marcus", "Ingrid", "Tomás", "Aiko", "Dmitri", "Fatima", "Lars", "Nia", "Oskar",
    "Mei", "Rafael",
];
const LAST: [&str; 10] = [
    "Okafor",
    "Lindqvist",
    "Haddad",
    "Moreau",
    "Tanaka",
    "Kowalski",
    "Alvarez",
    "Brennan",
    "Sato",
    "Varga",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const MODULES: [&str; 8] = [
    "billing", "auth", "ingest", "search", "render", "queue", "export", "sync",
];
const USER_FILLER: [&str; 6] = [
    "ok",
    "Thanks.",
    "Sounds good, go ahead.",
    "Continue.",
    "Yes please.",
    "Hmm, let me think about it. Carry on for now.",
];
const ASSISTANT_FILLER: [&str; 6] = [
    "I'll do that.",
    "Sure, let me look into it.",
    "Okay, working on it now.",
    "Let me check that.",
    "Got it.",
    "Understood, I will keep that in mind.",
];

/// A conversation of `turns` turns; `seed` varies the facts.
pub fn conversation(turns: usize, seed: u64) -> Conversation {
    let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut messages = Vec::new();
    let mut facts = Vec::new();
    let mut turn_starts = Vec::new();
    let plant = |facts: &mut Vec<Fact>, text: String, turn: usize| {
        facts.push(Fact {
            text: text.clone(),
            turn,
        });
        text
    };
    for t in 0..turns {
        turn_starts.push(messages.len());
        let id = seed as usize * 100_000 + t;
        let module = MODULES[r.below(MODULES.len())];
        // The user's side: a fact, an instruction, or filler.
        let user = match r.below(8) {
            0 => {
                let name = format!("{} {}", r.pick(&FIRST), r.pick(&LAST));
                let date = format!(
                    "{} {}, 20{}",
                    r.pick(&MONTHS),
                    1 + r.below(28),
                    24 + r.below(3)
                );
                format!(
                    "{} owns the {module} service now; the review with them is on {}. Please keep that in mind.",
                    plant(&mut facts, name, t),
                    plant(&mut facts, date, t)
                )
            }
            1 => format!(
                "From now on, {} Thanks.",
                plant(
                    &mut facts,
                    format!("never touch config/{module}_{id}.toml without asking first."),
                    t
                )
            ),
            2 => format!(
                "<environment_context>\n  <cwd>/home/dev/{}</cwd>\n  <shell>bash</shell>\n</environment_context>\nThe quota for {module} is {} per minute. Can you check it?",
                plant(&mut facts, format!("proj-{id}"), t),
                plant(&mut facts, format!("{} requests", 1000 + 37 * id % 9000), t),
            ),
            _ => r.pick(&USER_FILLER).to_string(),
        };
        messages.push(json!({"role": "user", "content": user}));
        // The assistant's side: a tool call, then what it found (or filler).
        if r.below(4) == 0 {
            let cmd = plant(&mut facts, format!("cargo test -p {module}-{id}"), t);
            let path = plant(&mut facts, format!("crates/{module}/src/h{id}.rs"), t);
            let call = format!("c{t}");
            messages.push(
                json!({"role": "assistant", "content": "Let me run the tests.", "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "shell",
                 "arguments": json!({"command": cmd}).to_string()}}]}),
            );
            let err = plant(
                &mut facts,
                format!(
                    "error[E0{}]: mismatched types in {module}_{id}",
                    100 + id % 800
                ),
                t,
            );
            messages.push(json!({"role": "tool", "tool_call_id": call,
                "content": format!("   Compiling {module} v0.1.0\n{err}\n  --> {path}:{}:5\n\nexit status: 101", 10 + id % 90)}));
        }
        let answer = match r.below(6) {
            0 => format!(
                "I found that the p95 latency of {module} is {} since build {}.",
                plant(&mut facts, format!("{} ms", 100 + 7 * id % 900), t),
                plant(&mut facts, format!("b{id}x"), t)
            ),
            1 => format!(
                "The bug was in {}: the retry counter was never reset. Fixed it.",
                plant(&mut facts, format!("src/{module}/retry_{id}.rs"), t)
            ),
            2 => format!(
                "I decided to use {} instead of the old client, because it handles timeouts.",
                plant(&mut facts, format!("{module}_client_v{id}"), t)
            ),
            _ => r.pick(&ASSISTANT_FILLER).to_string(),
        };
        messages.push(json!({"role": "assistant", "content": answer}));
    }
    Conversation {
        messages,
        facts,
        turn_starts,
    }
}
