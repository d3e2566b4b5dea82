//! Ways of counting that production does not take, for the benchmarks that
//! tell where a count's time goes (`benches/count.rs`, group `stage`): not
//! an API.

use super::Encoding;
use super::pieces::{Way, count_as};

/// One stage of a count, or a count without one of its shortcuts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Only cut into pieces, by the regex (the pre-tokenizer before).
    SplitByRegex,
    /// Only cut into pieces, by hand (the regex where the scan gives up).
    SplitByHand,
    /// The count as it was: cut by the regex, short pieces memoized.
    CountByRegex,
    /// The count as it is, without the memo: every piece through the BPE.
    CountNoMemo,
    /// The count as it is ([`Encoders::count`](super::Encoders::count)).
    Count,
}

/// What `stage` gives on `text` under `encoding` (o200k or cl100k): the
/// number of pieces for a split, else the number of tokens.
pub fn run(encoding: Encoding, text: &str, stage: Stage) -> usize {
    let (tokenizer, slot) = match encoding {
        Encoding::O200kBase => (bpe_openai::o200k_base(), 0),
        Encoding::Cl100kBase => (bpe_openai::cl100k_base(), 1),
        other => panic!("{other} is not cut by pieces"),
    };
    let way = match stage {
        Stage::SplitByRegex => Way {
            regex_only: true,
            split_only: true,
            ..Way::default()
        },
        Stage::SplitByHand => Way {
            split_only: true,
            ..Way::default()
        },
        Stage::CountByRegex => Way {
            regex_only: true,
            ..Way::default()
        },
        Stage::CountNoMemo => Way {
            no_memo: true,
            ..Way::default()
        },
        Stage::Count => Way::default(),
    };
    count_as(tokenizer, slot, text, way)
}
