//! What makes a sentence worth its tokens: the facts and instructions it
//! holds, not filler. A deterministic word-shape count, one pass per text.

/// Instruction words count twice: a standing rule outweighs a passing fact.
const INSTRUCTION: [&str; 17] = [
    "never",
    "always",
    "don't",
    "must",
    "should",
    "avoid",
    "only",
    "instead",
    "remember",
    "stop",
    "revert",
    "keep",
    "rule",
    "use",
    "prefer",
    "ensure",
    "unchanged",
];

/// Words that say something about a person: who they are to someone, what
/// they like, plan, decided and why, what happened in their life. Each
/// counts as a fact, so that what people state about themselves outweighs
/// small talk when a summary must choose.
const PERSONAL: [&str; 52] = [
    "mother",
    "mom",
    "mum",
    "father",
    "dad",
    "sister",
    "brother",
    "wife",
    "husband",
    "partner",
    "son",
    "daughter",
    "cousin",
    "niece",
    "nephew",
    "aunt",
    "uncle",
    "grandmother",
    "grandfather",
    "friend",
    "neighbour",
    "neighbor",
    "boss",
    "roommate",
    "colleague",
    "kids",
    "favourite",
    "favorite",
    "love",
    "prefer",
    "hate",
    "allergic",
    "plan",
    "planning",
    "trip",
    "moving",
    "moved",
    "decided",
    "because",
    "reason",
    "married",
    "engaged",
    "born",
    "adopted",
    "named",
    "started",
    "job",
    "works",
    "birthday",
    "wedding",
    "anniversary",
    "graduated",
];

/// How many facts and instructions `text` holds ([`words`]), a
/// [`PERSONAL`] word counting as a fact: it tells which sentence is worth
/// keeping, but a sentence cut short keeps its names and numbers before it.
pub fn score(text: &str) -> u32 {
    let told = |(raw, t): (&str, u32)| if t == 0 && personal(raw) { 1 } else { t };
    words(text).map(told).sum()
}

/// The words of `text` and their scores: 1 for a fact (a digit, a path or
/// identifier character, a capital mid-word or mid-sentence), 2 for an
/// instruction.
pub(super) fn words(text: &str) -> impl Iterator<Item = (&str, u32)> {
    let mut sentence_start = true;
    text.split_whitespace().map(move |raw| {
        let t = telling(raw, sentence_start);
        sentence_start = raw.ends_with(['.', '!', '?', ':']);
        (raw, t)
    })
}

fn telling(raw: &str, sentence_start: bool) -> u32 {
    let word = raw.trim_matches(|c: char| {
        matches!(
            c,
            '.' | ',' | ';' | ':' | '!' | '?' | '(' | ')' | '"' | '\'' | '[' | ']' | '{' | '}'
        )
    });
    let bare = untagged(word);
    let first = bare.chars().next();
    let fact = bare.bytes().any(|b| b.is_ascii_digit())
        || bare.contains(['/', '\\', '_', '`', '@', '=', '#', '$', '%'])
        || bare.contains("::")
        || inner(bare, '.')
        || inner(bare, '-')
        || bare.chars().skip(1).any(char::is_uppercase)
        || (!sentence_start && first.is_some_and(char::is_uppercase) && bare != "I")
            && !bare.starts_with("I'");
    if INSTRUCTION.contains(&bare.to_ascii_lowercase().as_str()) {
        2
    } else {
        u32::from(fact)
    }
}

/// A leading `[…]` tag of `text` (a session's date, a timestamp: where it
/// was said), and the rest.
fn tagged(text: &str) -> (Option<&str>, &str) {
    let t = text.trim_start();
    match t.strip_prefix('[').and_then(|inner| inner.find("] ")) {
        Some(end) => (Some(&t[..end + 2]), &t[end + 2..]),
        None => (None, text),
    }
}

/// The [`score`] of a list item (a quote or a statement) by what it says: a
/// leading `[…]` tag tells where it was said, and five date words in it
/// would make a greeting the best item of its stretch.
pub fn item_score(item: &str) -> u32 {
    let inner = item.strip_prefix('"').unwrap_or(item);
    match tagged(inner) {
        (Some(_), rest) => score(rest),
        (None, _) => score(item),
    }
}

/// How many facts `text` holds, its instruction words aside: what a
/// sentence of the assistant's tells ("That must have been hard." sets no
/// rule, and tells nothing).
pub fn facts(text: &str) -> u32 {
    let fact = |(raw, t): (&str, u32)| u32::from(t == 1 || (t == 0 && personal(raw)));
    words(text).map(fact).sum()
}

/// Whether `raw` is a [`PERSONAL`] word ("sister's" is about a sister).
fn personal(raw: &str) -> bool {
    let word = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'');
    let lower = word.to_ascii_lowercase();
    PERSONAL.contains(&lower.strip_suffix("'s").unwrap_or(&lower))
}

/// `word` without `<tag>`s: `<cwd>/a/b</cwd>` is `/a/b`, `<shell>` nothing.
fn untagged(word: &str) -> &str {
    let mut w = word;
    if w.starts_with('<')
        && let Some(end) = w.find('>')
    {
        w = &w[end + 1..];
    }
    if w.ends_with('>')
        && let Some(start) = w.rfind('<')
    {
        w = &w[..start];
    }
    w
}

/// Whether `c` sits between two letters or digits in `word` (`a.rs`, `db-17`).
fn inner(word: &str, c: char) -> bool {
    let b = word.as_bytes();
    word.match_indices(c).any(|(i, _)| {
        i > 0
            && i + 1 < b.len()
            && b[i - 1].is_ascii_alphanumeric()
            && b[i + 1].is_ascii_alphanumeric()
    })
}

/// `text`'s sentences that hold a fact or an instruction, joined by a space;
/// None when none does (then the whole text is all there is to keep).
pub fn telling_sentences(text: &str) -> Option<String> {
    // A leading tag is a sentence of its own, so a greeting after it is
    // the interjection it is.
    let (tag, rest) = tagged(text);
    let kept = told(
        tag.into_iter().chain(sentences(rest)).map(str::trim),
        |_| true,
    );
    (!kept.is_empty()).then(|| kept.join(" "))
}

/// Of `sentences` those `also` allows, the ones that hold a fact or an
/// instruction; an interjection ("Hi Caroline!", "Wait, Lisbon?") only when
/// nothing else does: it greets or echoes, it tells nothing new.
pub fn told<'a>(
    sentences: impl Iterator<Item = &'a str>,
    also: impl Fn(&str) -> bool,
) -> Vec<&'a str> {
    let told: Vec<&str> = sentences
        .filter(|s| !s.is_empty() && score(s) > 0 && also(s))
        .collect();
    if told.iter().all(|s| interjection(s)) {
        return told;
    }
    told.into_iter().filter(|s| !interjection(s)).collect()
}

/// A sentence of at most three words with nothing but words in it (no
/// number, path or identifier).
fn interjection(sentence: &str) -> bool {
    sentence.split_whitespace().count() <= 3
        && !sentence.contains(|c: char| c.is_ascii_digit() || "/\\_`:@=#$%".contains(c))
}

/// `text` cut after each sentence end (`.`, `!`, `?` before white space) and line end.
pub fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut chars = rest.char_indices().peekable();
        let mut end = rest.len();
        while let Some((i, ch)) = chars.next() {
            let next = chars.peek().map(|&(_, n)| n);
            if ch == '\n' || (matches!(ch, '.' | '!' | '?') && next.is_none_or(char::is_whitespace))
            {
                end = i + ch.len_utf8();
                break;
            }
        }
        let (sentence, after) = rest.split_at(end);
        rest = after;
        Some(sentence)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_score_and_filler_does_not() {
        for filler in [
            "ok",
            "I'll do that.",
            "Sure, let me look into it.",
            "Thanks.",
        ] {
            assert_eq!(score(filler), 0, "{filler}");
        }
        assert_eq!(score("Priya Okafor owns it since March 3, 2025."), 4);
        assert_eq!(score("see src/a.rs and db-17 or foo_bar"), 3);
        assert_eq!(score("Never touch the config."), 2);
        assert_eq!(score("<shell>bash</shell> <cwd>/home/x</cwd>"), 1);
        assert_eq!(score("My sister got engaged, I love it."), 3);
    }

    #[test]
    fn telling_sentences_drop_small_talk() {
        assert_eq!(
            telling_sentences("Ugh, Mondays. I work at Tidewater Bank now. How are you?")
                .as_deref(),
            Some("I work at Tidewater Bank now.")
        );
        assert_eq!(telling_sentences("Haha, totally. How are you?"), None);
        assert_eq!(
            telling_sentences("Hi Caroline! Wait, Lisbon? I ran 12 km, my best.").as_deref(),
            Some("I ran 12 km, my best.")
        );
        assert_eq!(
            telling_sentences("Hi Caroline! Wait, 12 km?").as_deref(),
            Some("Wait, 12 km?")
        );
        assert_eq!(
            telling_sentences("Hi Caroline! How are you?").as_deref(),
            Some("Hi Caroline!")
        );
    }
}
