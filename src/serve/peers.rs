//! Connections per client address ([`client_block`]), so one client cannot
//! take every slot of the cap, and a few cannot either: while another
//! address holds connections, an address takes at most half of the slots
//! still free (its own count never passes what remains), so each newcomer
//! finds room. A fixed per-address cap alone lets cap/per-address hosts (4
//! at the defaults) fill it; with this rule it takes some log2(cap) of them
//! (11 at 1,024), while one host alone (its many agents on 127.0.0.1) keeps
//! the whole cap up to its own limit.

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

    /// Counts a connection from `ip`, or `None` when its address holds the
    /// cap, or holds as many as the `free` slots left (with this one taken)
    /// while another address holds any.
    pub fn admit(&self, ip: IpAddr, free: usize) -> Option<PeerSlot> {
        let key = client_block(ip);
        let mut open = self.lock();
        let others = open.len() - usize::from(open.contains_key(&key));
        let n = open.entry(key).or_insert(0);
        if self.cap > 0 && *n >= self.cap || others > 0 && *n > free {
            if *n == 0 {
                open.remove(&key);
            }
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

    /// Plenty of free slots: only the per-address cap counts.
    const FREE: usize = 1 << 20;

    /// Hosts that hold as many connections as they can, one after another,
    /// against a cap of 1,024 slots and the default 256 per address: the
    /// connections each got.
    fn fill(hosts: usize) -> Vec<usize> {
        let (cap, peers) = (1024, Peers::new(256));
        let mut held = Vec::new();
        let mut got = vec![0; hosts];
        for (h, got) in got.iter_mut().enumerate() {
            let host = ip(&format!("10.0.0.{}", h + 1));
            while held.len() < cap {
                let free = cap - held.len() - 1;
                let Some(slot) = peers.admit(host, free) else {
                    break;
                };
                held.push(slot);
                *got += 1;
            }
        }
        got
    }

    #[test]
    fn each_newcomer_finds_half_of_what_is_free() {
        assert_eq!(fill(1), [256], "one host alone: its own cap");
        // Four hosts used to fill the cap; now the fifth finds room...
        assert_eq!(fill(5), [256, 256, 256, 128, 64]);
        // ...and so does every next one, until some eleven of them.
        let got = fill(10);
        assert!(got.iter().all(|&n| n > 0), "{got:?}");
        assert!(got.iter().sum::<usize>() < 1024, "{got:?}");
    }

    #[test]
    fn an_address_holds_at_most_the_cap_and_gets_slots_back() {
        let peers = Peers::new(2);
        let a = peers.admit(ip("10.0.0.1"), FREE).unwrap();
        let _b = peers.admit(ip("10.0.0.1"), FREE).unwrap();
        assert!(peers.admit(ip("10.0.0.1"), FREE).is_none());
        assert!(
            peers.admit(ip("10.0.0.2"), FREE).is_some(),
            "another address"
        );
        drop(a);
        assert!(peers.admit(ip("10.0.0.1"), FREE).is_some());
    }

    #[test]
    fn ipv6_counts_by_its_64_and_mapped_ipv4_as_ipv4() {
        let peers = Peers::new(1);
        let _a = peers.admit(ip("2001:db8:1:2::1"), FREE).unwrap();
        assert!(peers.admit(ip("2001:db8:1:2:ffff::9"), FREE).is_none());
        assert!(peers.admit(ip("2001:db8:1:3::1"), FREE).is_some());
        let _v4 = peers.admit(ip("192.0.2.7"), FREE).unwrap();
        assert!(peers.admit(ip("::ffff:192.0.2.7"), FREE).is_none());
    }

    #[test]
    fn zero_is_no_limit_and_the_map_forgets_closed_addresses() {
        let peers = Peers::new(0);
        let held: Vec<_> = (0..1000)
            .map(|_| peers.admit(ip("10.0.0.1"), FREE).unwrap())
            .collect();
        drop(held);
        assert!(peers.lock().is_empty());
    }
}
