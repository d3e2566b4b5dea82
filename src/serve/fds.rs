//! File descriptors: the connection cap must fit in the process's limit, or
//! a crowd of clients exhausts it and nothing (not even `/healthz`, not a
//! database connection) can be opened any more.

/// Descriptors any process of ours needs whatever its settings: the
/// standard streams, the runtime's poller and wake-ups, the listeners, files
/// read at start-up or on reload, a start-up database check. A running
/// server with an SQLite cache holds about a dozen besides its pool.
pub const BASE_FDS: u64 = 32;

/// Descriptors an SQLite connection holds (its file, journal and shared
/// memory); a PostgreSQL one holds one socket.
const FDS_PER_DB_CONNECTION: u64 = 3;

/// Descriptors one connection may need: its socket, and the provider
/// connection of a proxied request.
pub const FDS_PER_CONNECTION: u64 = 2;

/// Descriptors kept for everything that is not a client connection:
/// [`BASE_FDS`], the cache's pool, the upstream LLM client's connections
/// (one per call in flight, kept for reuse) and the probe listener's
/// connections. Counted from the settings rather than guessed: a flat
/// reserve large enough for any settings left a process under
/// `ulimit -n 128` room for one connection.
pub fn reserved_fds(db_connections: u32, upstream_calls: usize, probe_connections: usize) -> u64 {
    BASE_FDS
        + u64::from(db_connections) * FDS_PER_DB_CONNECTION
        + upstream_calls as u64
        + probe_connections as u64
}

/// The connection cap to use for `wanted` with `reserved` descriptors kept
/// for the rest ([`reserved_fds`]): raises the soft limit on open files to
/// the hard one (as the Go runtime does; the soft one is often a low 1024),
/// then lowers the cap, with a warning, if even that limit cannot hold
/// `wanted` connections.
pub fn connection_budget(wanted: usize, reserved: u64) -> usize {
    match nofile_limit() {
        Some(limit) => {
            let budget = fit(wanted, limit, reserved);
            if budget < wanted {
                tracing::warn!(
                    wanted,
                    budget,
                    open_files_limit = limit,
                    "the open-files limit cannot hold CONDENSE_MAX_CONNECTIONS connections; \
                     capping them lower (raise `ulimit -n` to allow more)"
                );
            }
            budget
        }
        None => wanted.max(1),
    }
}

/// The largest cap up to `wanted` whose connections fit in `limit`
/// descriptors, `reserved` of them kept for the rest.
pub fn fit(wanted: usize, limit: u64, reserved: u64) -> usize {
    let room = limit.saturating_sub(reserved) / FDS_PER_CONNECTION;
    (wanted as u64).min(room).max(1) as usize
}

/// The soft limit on open files after raising it as far as allowed.
#[cfg(unix)]
fn nofile_limit() -> Option<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if let (Some(soft), Some(hard)) = (limit.current, limit.maximum) {
        let raised = Rlimit {
            current: Some(hard),
            maximum: Some(hard),
        };
        if soft < hard && setrlimit(Resource::Nofile, raised).is_ok() {
            limit = getrlimit(Resource::Nofile);
        }
    }
    // `None` is unlimited.
    Some(limit.current.unwrap_or(u64::MAX))
}

#[cfg(not(unix))]
fn nofile_limit() -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_room_for_everything_else() {
        let reserved = reserved_fds(8, 4, 0);
        assert_eq!(reserved, 32 + 24 + 4);
        assert_eq!(fit(1024, 1_048_576, reserved), 1024);
        assert_eq!(fit(1024, 1024, reserved), (1024 - 60) / 2);
        assert_eq!(fit(1024, 40, reserved), 1);
        assert_eq!(fit(10, u64::MAX, reserved), 10);
    }

    #[test]
    fn a_low_open_files_limit_still_holds_dozens_of_connections() {
        // `ulimit -n 128` with the default settings (the flat reserve of
        // 256 this replaced allowed 1).
        assert_eq!(fit(1024, 128, reserved_fds(8, 4, 0)), 34);
        // A probe listener's connections come out of the same limit.
        assert_eq!(fit(1024, 128, reserved_fds(8, 4, 16)), 26);
    }
}
