//! Connections per client address ([`client_block`]), so one client cannot
//! take every slot of the cap.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use crate::guard::rate::client_block;

/// How many connections each address holds.
#[derive(Debug, Clone)]
pub struct Peers {
    /// Most connections per address; 0: no limit.
    cap: usize,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One connection counted against its address, until dropped.
#[derive(Debug)]
pub struct PeerSlot {
    peers: Peers,
    key: IpAddr,
}

impl Peers {
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            open: Arc::default(),
        }
    }

    /// Counts a connection from `ip`, or `None` when its address holds the cap.
    pub fn admit(&self, ip: IpAddr) -> Option<PeerSlot> {
        let key = client_block(ip);
        let mut open = self.lock();
        let n = open.entry(key).or_insert(0);
        if self.cap > 0 && *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(PeerSlot {
            peers: self.clone(),
            key,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, usize>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self.peers.lock();
        if let Some(n) = open.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                // The map holds only addresses with open connections.
                open.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn an_address_holds_at_most_the_cap_and_gets_slots_back() {
        let peers = Peers::new(2);
        let a = peers.admit(ip("10.0.0.1")).unwrap();
        let _b = peers.admit(ip("10.0.0.1")).unwrap();
        assert!(peers.admit(ip("10.0.0.1")).is_none());
        assert!(peers.admit(ip("10.0.0.2")).is_some(), "another address");
        drop(a);
        assert!(peers.admit(ip("10.0.0.1")).is_some());
    }

    #[test]
    fn ipv6_counts_by_its_64_and_mapped_ipv4_as_ipv4() {
        let peers = Peers::new(1);
        let _a = peers.admit(ip("2001:db8:1:2::1")).unwrap();
        assert!(peers.admit(ip("2001:db8:1:2:ffff::9")).is_none());
        assert!(peers.admit(ip("2001:db8:1:3::1")).is_some());
        let _v4 = peers.admit(ip("192.0.2.7")).unwrap();
        assert!(peers.admit(ip("::ffff:192.0.2.7")).is_none());
    }

    #[test]
    fn zero_is_no_limit_and_the_map_forgets_closed_addresses() {
        let peers = Peers::new(0);
        let held: Vec<_> = (0..1000)
            .map(|_| peers.admit(ip("10.0.0.1")).unwrap())
            .collect();
        drop(held);
        assert!(peers.lock().is_empty());
    }
}
