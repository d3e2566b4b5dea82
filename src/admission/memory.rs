//! What a request costs in memory, for the budget: what its parsed form
//! holds follows its body's shape (values, objects and arrays, messages) as
//! well as its bytes: two bytes of `1,` take a whole `Value`. A request is
//! admitted from its declared length only if what its bytes cost parsed is
//! free, else 503 before its body is read; once the body is in, its
//! reservation grows to what its shape costs ([`parsed_bytes`]).
//! `deploy/deployment.yaml`'s memory limit comes from [`limit_for`]; the
//! factors are RSS measured by `bench/hostile_memory.py`, per request with
//! a dozen of one shape at work at once (the allocator's arenas make that
//! dearer than one alone), with a margin.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::thread::{MAX_JSON_NODES, MAX_JSON_VALUES, Shape};

/// Per body byte: the text itself, parsed, modelled, hashed, summarized and
/// answered (a body of long texts measured 8.2).
pub const PER_BYTE: u64 = 12;

/// Per message (an object in the thread's array): its model beside its
/// JSON, its canonical form and memo entries (10,000 short messages
/// measured some 700 more than their objects and values).
pub const PER_MESSAGE: u64 = 1024;

/// Per object or array: a map or vector beside its `Value` (570 measured on
/// `/v1/compress`, 1,240 on the proxy, which holds its body twice).
pub const PER_NODE: u64 = 1280;

/// Per value in an object or array: its `Value` slot and its share of the
/// vector's growth, and a number's text, kept as written (990,000 small
/// numbers measured 92 before the text was kept, which adds 32).
pub const PER_VALUE: u64 = 128;

/// What any request holds besides its body (task, headers, buffers).
pub const REQUEST_BASE_BYTES: u64 = 64 * 1024;

/// A reservation that shrinks, or ends, by this much calls [`give_back`].
pub const GIVE_BACK_AFTER_BYTES: u64 = 16 * 1024 * 1024;

/// The RSS of an idle replica, rounded up from 80 MiB measured.
pub const IDLE_RSS_BYTES: u64 = 96 * 1024 * 1024;

/// The memory limit a replica needs: idle, the budget, and a quarter more
/// for what reservations do not count (fragmentation, buffers, memos).
pub fn limit_for(budget: u64) -> u64 {
    IDLE_RSS_BYTES + budget + budget / 4
}

/// What a parsed body of `body` bytes holds for its bytes (its shape adds
/// to it): what must be free to admit it from its head.
pub fn model_bytes(body: u64) -> u64 {
    REQUEST_BASE_BYTES.saturating_add(body.saturating_mul(PER_BYTE))
}

/// What a body of this shape holds once parsed and while it is compressed.
pub fn parsed_bytes(shape: &Shape) -> u64 {
    let cost = |n: u64, each: u64| n.saturating_mul(each);
    model_bytes(shape.bytes)
        .saturating_add(cost(shape.messages, PER_MESSAGE))
        .saturating_add(cost(shape.nodes, PER_NODE))
        .saturating_add(cost(shape.values, PER_VALUE))
}

/// The most a body within the limits can cost parsed: `body_limit` bytes
/// holding as many objects, arrays and values as a body may.
pub fn worst_parsed_bytes(body_limit: u64) -> u64 {
    let (nodes, values) = (MAX_JSON_NODES as u64, MAX_JSON_VALUES as u64);
    parsed_bytes(&Shape {
        bytes: body_limit,
        messages: nodes,
        nodes,
        values,
    })
}

/// The worst a request holds while it only holds its body.
pub fn body_bytes(body: u64) -> u64 {
    REQUEST_BASE_BYTES.saturating_add(body)
}

/// Returns a large request's freed heap to the system (glibc keeps all but
/// each arena's top: 1.4 GB left after a burst, 80 MB idle); at most one
/// `malloc_trim(0)` a second, on the blocking pool (it locks each arena).
pub fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static SCHEDULED: AtomicBool = AtomicBool::new(false);
        if SCHEDULED.swap(true, Ordering::AcqRel) {
            return;
        }
        let trim = || {
            // Cleared first: memory freed while this trim runs asks for the next.
            SCHEDULED.store(false, Ordering::Release);
            // SAFETY: malloc_trim only returns free heap pages to the kernel.
            unsafe { libc::malloc_trim(0) };
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn(async move {
                tokio::time::sleep(TRIM_AFTER).await;
                let _ = tokio::task::spawn_blocking(trim).await;
            })),
            Err(_) => trim(),
        }
    }
}

/// A trim covers the requests that end in the second after the one that asked.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn the_cost_follows_the_shape_as_well_as_the_bytes() {
        assert_eq!(model_bytes(0), REQUEST_BASE_BYTES);
        assert_eq!(model_bytes(MIB), REQUEST_BASE_BYTES + PER_BYTE * MIB);
        assert_eq!(body_bytes(MIB), REQUEST_BASE_BYTES + MIB);
        assert_eq!(model_bytes(u64::MAX), u64::MAX, "saturates");
        // Two bytes a number: the values cost far more than the bytes.
        let numbers = format!("[{}7]", "7,".repeat(999_999));
        let shape = Shape::of(numbers.as_bytes());
        assert_eq!((shape.nodes, shape.values), (1, 999_999));
        assert!(parsed_bytes(&shape) > 30 * shape.bytes);
        // Long texts cost little more than their bytes' factor.
        let text = format!(
            "{{\"messages\": [{{\"content\": \"{}\"}}]}}",
            "w".repeat(MIB as usize)
        );
        let shape = Shape::of(text.as_bytes());
        assert_eq!((shape.messages, shape.nodes), (1, 3));
        assert!(parsed_bytes(&shape) < model_bytes(shape.bytes) + 8 * 1024);
        assert!(worst_parsed_bytes(8 * MIB) > parsed_bytes(&shape));
    }
}
