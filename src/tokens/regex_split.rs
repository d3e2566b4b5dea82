//! The o200k and cl100k pre-tokenizers as regular expressions: the oracle
//! of the hand-written scan ([`split`](super::split)), and what cuts the
//! pieces that scan gives up on.

use std::sync::LazyLock;

use regex_automata::meta::{Cache, Regex};
use regex_automata::{Anchored, Input};

/// The o200k and cl100k pre-tokenizers (slots 0 and 1) as `bpe-openai` 0.3
/// builds them, but with a match cache per thread (its own regex's pool is
/// lock-free only for its first thread). The second pattern's last
/// character is a look-ahead, given back (see [`next`]). The oracle of
/// the hand-written scan.
pub(super) static SPLIT: LazyLock<[Regex; 2]> = LazyLock::new(|| {
    let o200k = [
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        "\\p{N}{1,3}",
        " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
        "\\s*[\\r\\n]+",
        "\\s+$",
    ]
    .join("|");
    let cl100k = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+$";
    [o200k.as_str(), cl100k]
        .map(|first| Regex::new_many(&[first, "\\s+\\s", "\\s+"]).expect("valid pre-tokenizer"))
});

/// The piece of `text` from byte `last` on, as `bpe-openai`'s `Splits` cuts it.
pub(super) fn next<'t>(
    split: &Regex,
    cache: &mut Cache,
    text: &'t str,
    last: &mut usize,
) -> Option<&'t str> {
    let input = Input::new(&text[*last..]).anchored(Anchored::Yes);
    let m = split.search_with(cache, &input)?;
    let start = *last;
    let mut end = start + m.range().end;
    if m.pattern().as_usize() == 1 {
        end -= text[start..end].chars().next_back()?.len_utf8();
    }
    *last = end;
    Some(&text[start..end])
}
