//! Limits on what a request body may hold, checked on its bytes before
//! any parsing.

/// Most JSON objects and arrays a body may hold. Realistic threads hold
/// about one per 500 bytes (the largest fixture: about 1,000 in 560 KB), so
/// a full 8 MiB body of agent messages holds some 20,000; each costs a few
/// hundred bytes of memory once parsed, so this bounds a request's memory
/// (to about 130 MB, measured with one-character text parts) where the
/// byte limit alone does not (8 MB of one-character parts would be 270,000
/// of them).
pub const MAX_JSON_NODES: usize = 100_000;

/// Objects and arrays in `bytes` (strings skipped, escapes honoured), in
/// one pass; the count only has to be right for valid JSON.
pub fn json_nodes(bytes: &[u8]) -> usize {
    let (mut nodes, mut in_string, mut escaped) = (0, false, false);
    for &b in bytes {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => nodes += 1,
                _ => {}
            }
        }
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::json_nodes;

    #[test]
    fn nodes_are_counted_outside_strings_only() {
        assert_eq!(json_nodes(br#"{"a": [1, {"b": "{[\"]}"}], "c": []}"#), 4);
        assert_eq!(json_nodes(br#""{{{""#), 0);
        assert_eq!(json_nodes(br#"["\\", {}]"#), 2);
    }
}
