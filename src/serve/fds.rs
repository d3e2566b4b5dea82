//! File descriptors: the connection cap must fit in the process's limit, or
//! a crowd of clients exhausts it and nothing (not even `/healthz`, not a
//! database connection) can be opened any more.

/// Descriptors kept for everything that is not a client connection: the
/// listener, database pools, upstream clients' pools, files, the runtime.
pub const RESERVED_FDS: u64 = 256;

/// Descriptors one connection may need: its socket, and the provider
/// connection of a proxied request.
pub const FDS_PER_CONNECTION: u64 = 2;

/// The connection cap to use for `wanted`: raises the soft limit on open
/// files to the hard one (as the Go runtime does; the soft one is often a
/// low 1024), then lowers the cap, with a warning, if even that limit cannot
/// hold `wanted` connections.
pub fn connection_budget(wanted: usize) -> usize {
    match nofile_limit() {
        Some(limit) => {
            let budget = fit(wanted, limit);
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

/// The largest cap up to `wanted` whose connections fit in `limit` descriptors.
pub fn fit(wanted: usize, limit: u64) -> usize {
    let room = limit.saturating_sub(RESERVED_FDS) / FDS_PER_CONNECTION;
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
        assert_eq!(fit(1024, 1_048_576), 1024);
        assert_eq!(fit(1024, 1024), (1024 - 256) / 2);
        assert_eq!(fit(1024, 100), 1);
        assert_eq!(fit(10, u64::MAX), 10);
    }
}
