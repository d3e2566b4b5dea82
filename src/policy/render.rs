//! The verdict as a status block a person can read (`Accept: text/plain`).

use std::fmt::Write;

use super::{Trigger, Verdict};
use crate::thread::thousands;

const CELLS: usize = 20;

/// Floored, as a person reads a gauge: a cell fills only once it is reached.
fn bar(percent: f64) -> String {
    let filled = ((percent / 100.0 * CELLS as f64).floor() as usize).min(CELLS);
    format!("[{}{}]", "█".repeat(filled), "░".repeat(CELLS - filled))
}

pub fn render_text(v: &Verdict) -> String {
    let mut s = String::new();
    let mut rows = vec![
        (
            "messages",
            v.messages_since_summary,
            v.messages_threshold,
            v.messages_percent,
        ),
        (
            "tokens",
            v.total_tokens,
            v.tokens_threshold,
            v.tokens_percent,
        ),
    ];
    if let (Some(threshold), Some(pct)) = (v.iterations_threshold, v.iterations_percent) {
        rows.push(("iterations", v.iterations_since_summary, threshold, pct));
    }
    for (label, used, threshold, pct) in rows {
        let _ = writeln!(
            s,
            "{label:<9}{:>24} ({pct:.1}%) {}",
            format!("{} / {}", thousands(used), thousands(threshold)),
            bar(pct)
        );
    }
    let _ = writeln!(
        s,
        "context  {} tokens available of {}",
        v.available_tokens,
        thousands(v.context_window)
    );
    if let Some(last) = &v.last_summary {
        let _ = writeln!(
            s,
            "last summary: {} messages in {} tokens{}",
            thousands(last.messages_summarized),
            thousands(last.tokens),
            last.created_at
                .as_ref()
                .map(|t| format!(", written {t}"))
                .unwrap_or_default()
        );
    }
    let line = match v.trigger {
        None => "Summarization is not due.".to_string(),
        Some(Trigger::Messages) => format!(
            "Summarization is due: {} messages since the last summary reached the threshold of {}.",
            v.messages_since_summary, v.messages_threshold
        ),
        Some(Trigger::Tokens) => format!(
            "Summarization is due: {} tokens reached the threshold of {}.",
            thousands(v.total_tokens),
            thousands(v.tokens_threshold)
        ),
        Some(Trigger::Iterations) => format!(
            "Summarization is due: {} iterations since the last summary reached the threshold of {}.",
            v.iterations_since_summary,
            v.iterations_threshold.unwrap_or_default()
        ),
        Some(Trigger::ColdCache) => format!(
            "Summarization is due: the provider's cache is cold, and the thread is {:.0}% of the way to its next summary.",
            v.progress() * 100.0
        ),
        Some(Trigger::ContextWindow) => format!(
            "Summarization is due: {} tokens do not fit the context window ({} over).",
            thousands(v.total_tokens),
            -v.available_tokens
        ),
    };
    s.push_str(&line);
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_has_twenty_cells_and_clamps() {
        assert_eq!(bar(90.0), "[██████████████████░░]");
        // 99.9 % is not a full bar, 4.9 % not a cell.
        assert_eq!(bar(99.9), "[███████████████████░]");
        assert_eq!(bar(4.9), "[░░░░░░░░░░░░░░░░░░░░]");
        assert_eq!(bar(250.0).chars().count(), 22);
        assert_eq!(bar(0.0), "[░░░░░░░░░░░░░░░░░░░░]");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }
}
