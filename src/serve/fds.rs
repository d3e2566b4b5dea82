//! File descriptors: the connection cap must fit in the process's limit, or
//! a crowd of clients leaves none for `/healthz` or the database.

/// Descriptors any process of ours needs whatever its settings.
const BASE_FDS: u64 = 32;

/// SQLite: file, journal and shared memory.
const FDS_PER_DB_CONNECTION: u64 = 3;

/// A connection's socket, and the provider connection of a proxied request.
const FDS_PER_CONNECTION: u64 = 2;

/// Descriptors kept for everything but client connections, from the settings.
pub fn reserved_fds(db_connections: u32, upstream_calls: usize, probe_connections: usize) -> u64 {
    BASE_FDS
        + u64::from(db_connections) * FDS_PER_DB_CONNECTION
        + upstream_calls as u64
        + probe_connections as u64
}

/// The connection cap for `wanted`: raises the soft open-files limit to the
/// hard one, then lowers the cap (warning) if even that is short.
pub fn connection_budget(wanted: usize, reserved: u64) -> usize {
    let Some(limit) = nofile_limit() else {
        return wanted.max(1);
    };
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

/// The largest cap up to `wanted` that fits in `limit` after `reserved`.
fn fit(wanted: usize, limit: u64, reserved: u64) -> usize {
    let room = limit.saturating_sub(reserved) / FDS_PER_CONNECTION;
    (wanted as u64).min(room).max(1) as usize
}

/// The soft open-files limit after raising it as far as allowed.
fn nofile_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let limit = getrlimit(Resource::Nofile);
        if let (Some(soft), Some(hard)) = (limit.current, limit.maximum)
            && soft < hard
        {
            let raised = Rlimit {
                current: Some(hard),
                maximum: Some(hard),
            };
            let _ = setrlimit(Resource::Nofile, raised);
        }
        // `None` is unlimited.
        Some(getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX))
    }
    #[cfg(not(unix))]
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
