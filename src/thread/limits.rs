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

/// Most values (counted by their separating commas) a body may hold: a
/// scalar costs less than an object, but 8 MB of `1,1,1,…` would be four
/// million of them.
pub const MAX_JSON_VALUES: usize = 1_000_000;

/// Why a body holds more than a request may, if it does.
pub fn too_many_nodes(bytes: &[u8]) -> Option<String> {
    let (nodes, values) = json_shape(bytes);
    if nodes > MAX_JSON_NODES {
        Some(format!(
            "the body holds more than {MAX_JSON_NODES} JSON objects and arrays; send fewer parts (merge adjacent text parts)"
        ))
    } else if values > MAX_JSON_VALUES {
        Some(format!(
            "the body holds more than {MAX_JSON_VALUES} JSON values; send fewer"
        ))
    } else {
        None
    }
}

/// Objects and arrays in `bytes`, and the commas between values (strings
/// skipped, escapes honoured), in one pass; the counts only have to be
/// right for valid JSON.
pub fn json_shape(bytes: &[u8]) -> (usize, usize) {
    let (mut nodes, mut commas, mut in_string, mut escaped) = (0, 0, false, false);
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
                b',' => commas += 1,
                _ => {}
            }
        }
    }
    (nodes, commas)
}

#[cfg(test)]
mod tests {
    use super::{MAX_JSON_VALUES, json_shape, too_many_nodes};

    #[test]
    fn nodes_are_counted_outside_strings_only() {
        assert_eq!(
            json_shape(br#"{"a": [1, {"b": "{[,\"]}"}], "c": []}"#),
            (4, 2)
        );
        assert_eq!(json_shape(br#""{{{,""#), (0, 0));
        assert_eq!(json_shape(br#"["\\", {}]"#), (2, 1));
        let scalars = format!("{{\"x\": [{}1]}}", "1,".repeat(MAX_JSON_VALUES + 1));
        assert!(too_many_nodes(scalars.as_bytes()).is_some());
        assert!(too_many_nodes(br#"{"messages": []}"#).is_none());
    }
}
