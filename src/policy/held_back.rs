//! Why a due summary is not written: too small a share of what can be
//! compressed (no churn), or a summary that would not pay back within
//! `max_payback_turns` under the model's prompt-cache prices ([`Payback`]).
//! The verdict asks only for a trigger that does not pay at once.

use super::Profile;
use super::assess::Assessment;
use super::payback::Payback;
use crate::tokens::CachePrices;

/// Why a due summary is not worth writing, if it is not: too small a share
/// (no churn), or it would not pay back in time (see [`Payback`]): at its
/// writer's bound, and then as `written`, where that is known and could
/// make a difference.
pub(super) fn held_back(
    profile: &Profile,
    a: &Assessment,
    cache: CachePrices,
    written: impl FnOnce() -> Option<u64>,
) -> Option<String> {
    let gain = profile.min_summary_gain;
    if gain > 0.0 && (a.gain_tokens as f64) < gain * a.compressible_tokens as f64 {
        return Some(format!(
            "it would take in only {} of the {} compressible tokens (under min_summary_gain {gain})",
            a.gain_tokens, a.compressible_tokens
        ));
    }
    let turns = profile.max_payback_turns;
    let bound = Payback::estimate(a, profile.max_summary_tokens, cache);
    if bound.pays_within(turns) {
        return None;
    }
    // Not even an empty summary would pay: none is written to be weighed.
    let may_pay = Payback::of(a, 0, cache).pays_within(turns);
    let (p, leaves) = match may_pay.then(written).flatten() {
        Some(summary) => (
            Payback::of(a, summary, cache),
            "with its summary as written, it leaves",
        ),
        None => (bound, "it leaves about"),
    };
    if p.pays_within(turns) {
        return None;
    }
    let when = match p.turns() {
        Some(n) => format!("pays back after {n:.1} later turns"),
        None => "never pays back".into(),
    };
    Some(format!(
        "it would not pay for itself: {leaves} {} of the {} compressible tokens (r = {:.2}); under the model's prompt-cache prices (read {}x, write {}x the input price) it costs {:.0} more tokens' worth on this turn than reading the cached prefix and saves {:.0} on each later turn: it {when}, over max_payback_turns {turns}",
        p.after,
        p.before,
        p.ratio(),
        cache.read,
        cache.write,
        p.extra,
        p.saving,
    ))
}
