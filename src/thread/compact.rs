//! Parsing JSON into a `serde_json::Value` whose objects and arrays hold no
//! spare room: for a body of small parts, serde_json's growth room was half
//! its tree (`examples/peak_heap.rs`). Values and order are serde_json's.
//!
//! Numbers are kept as the client wrote them (serde_json's
//! `arbitrary_precision`): `123456789012345678901234567890`, `1.10` and
//! `1e400` go back unchanged in what condense forwards or echoes. serde_json
//! writes an exponent as `e+5`/`e-5` (`1E5` goes back as `1e+5`, the same value).
//! Each number then holds its text on the heap: one allocation of its length
//! (32 bytes of RSS with glibc for up to 24 characters).

use std::fmt;

use serde::de::{Deserialize, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A `Value` parsed without spare room.
pub struct Compact(pub Value);

impl<'de> Deserialize<'de> for Compact {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CompactVisitor).map(Compact)
    }
}

/// `serde_json::from_slice::<Value>`, without spare room.
pub fn from_slice(bytes: &[u8]) -> serde_json::Result<Value> {
    serde_json::from_slice::<Compact>(bytes).map(|c| c.0)
}

/// For `#[serde(default, deserialize_with = "compact::value")]`.
pub fn value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Ok(Option::<Compact>::deserialize(d)?.map(|c| c.0))
}

/// For `#[serde(default, deserialize_with = "compact::values")]`.
pub fn values<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Value>>, D::Error> {
    Ok(
        Option::<Vec<Compact>>::deserialize(d)?
            .map(|v| exact(v.into_iter().map(|c| c.0).collect())),
    )
}

fn exact<T>(mut v: Vec<T>) -> Vec<T> {
    v.shrink_to_fit();
    v
}

struct CompactVisitor;

/// The key under which serde_json's `arbitrary_precision` passes a number's
/// text (its own `Value` checks for it the same way; a test holds it).
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

impl<'de> Visitor<'de> for CompactVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(Number::from_f64(n).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Compact(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(exact(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries: Vec<(String, Value)> = Vec::new();
        if let Some(k) = map.next_key::<String>()? {
            // serde_json hands a number it keeps as text as a one-entry map.
            if k == NUMBER_TOKEN {
                let text: String = map.next_value()?;
                return text
                    .parse::<Number>()
                    .map(Value::Number)
                    .map_err(A::Error::custom);
            }
            let Compact(v) = map.next_value()?;
            entries.push((k, v));
        }
        while let Some((k, Compact(v))) = map.next_entry()? {
            entries.push((k, v));
        }
        // `Map`'s `FromIterator` sizes the map by the iterator's exact length.
        Ok(Value::Object(entries.into_iter().collect::<Map<_, _>>()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_serde_json_parses_in_the_same_order() {
        let text = r#"{"z": 1, "a": [true, null, -2, 3.5, -0.0, 1e300, "é\n", {}],
            "m": {"b": {"c": []}, "a": 18446744073709551615}, "z": "last"}"#;
        let ours = from_slice(text.as_bytes()).unwrap();
        let theirs: Value = serde_json::from_str(text).unwrap();
        assert_eq!(ours, theirs);
        // Same serialization, key order included (a duplicate keeps its place).
        assert_eq!(
            serde_json::to_string(&ours).unwrap(),
            serde_json::to_string(&theirs).unwrap()
        );
        assert!(
            serde_json::to_string(&ours)
                .unwrap()
                .starts_with(r#"{"z":"last","a""#)
        );
        assert!(from_slice(b"[1,").is_err());
        assert!(
            from_slice(&[b'['; 200]).is_err(),
            "the recursion limit holds"
        );
    }

    #[test]
    fn numbers_keep_the_text_they_were_written_in() {
        let text = r#"{"n": [123456789012345678901234567890, -1e400, 1.10, 1E5, 0.1, -0, 7, -8]}"#;
        let kept = r#"{"n":[123456789012345678901234567890,-1e+400,1.10,1e+5,0.1,-0,7,-8]}"#;
        assert_eq!(from_slice(text.as_bytes()).unwrap().to_string(), kept);
        // Inside a typed request too (`compact::values`), and as serde_json's own `Value`.
        #[derive(serde::Deserialize)]
        struct Request {
            #[serde(default, deserialize_with = "values")]
            messages: Option<Vec<Value>>,
        }
        let r: Request = serde_json::from_str(&format!(r#"{{"messages": [{text}]}}"#)).unwrap();
        assert_eq!(r.messages.unwrap()[0].to_string(), kept);
        assert_eq!(
            serde_json::from_str::<Value>(text).unwrap().to_string(),
            kept
        );
        // The first key of an object is an ordinary key.
        let object = r#"{"a":{"b":1.50},"c":[]}"#;
        assert_eq!(from_slice(object.as_bytes()).unwrap().to_string(), object);
    }

    #[test]
    fn arrays_have_no_spare_room() {
        // (A `Map` does not tell its capacity: `examples/peak_heap.rs` measures it.)
        let json = br#"{"m": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}, 1]}"#;
        let Some(Value::Array(parts)) = from_slice(json).unwrap().get_mut("m").map(Value::take)
        else {
            panic!("an array");
        };
        assert_eq!(parts.capacity(), 3);
    }
}
