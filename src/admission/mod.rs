//! Admission: what a request or background job holds while it works, in one
//! [`Ticket`]. A CPU task cannot be aborted (`tokens::cancel`), so a ticket
//! lets go only when its holder is done and its last task has stopped.

pub mod memory;

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Reservations count in KiB: a semaphore takes at most `u32` permits at once.
const UNIT: u64 = 1024;

/// The memory budget, shared by every request and job of the process.
#[derive(Debug, Clone, Default)]
pub struct MemoryBudget {
    /// None: no budget (`CONDENSE_MEMORY_BUDGET_BYTES=0`).
    units: Option<Arc<Semaphore>>,
    total: u32,
}

impl MemoryBudget {
    /// A budget of `bytes` (rounded down to KiB); `0` lifts it.
    pub fn new(bytes: u64) -> Self {
        let total = u32::try_from(bytes / UNIT).unwrap_or(u32::MAX);
        Self {
            units: (total > 0).then(|| Arc::new(Semaphore::new(total as usize))),
            total,
        }
    }

    /// A ticket holding `bytes`, or `None` when fewer are free. One larger
    /// than the whole budget runs alone rather than never.
    pub fn try_reserve(&self, bytes: u64) -> Option<Ticket> {
        let permit = match &self.units {
            None => None,
            Some(s) => Some(
                s.clone()
                    .try_acquire_many_owned(self.units_of(bytes))
                    .ok()?,
            ),
        };
        Some(Ticket(Arc::new(Mutex::new(Holding {
            budget: self.clone(),
            permit,
            held: bytes,
            place: None,
            working: 0,
            keep: None,
        }))))
    }

    /// `bytes` could be reserved now (as [`MemoryBudget::try_reserve`] would).
    pub fn has_free(&self, bytes: u64) -> bool {
        self.units
            .as_ref()
            .is_none_or(|s| s.available_permits() as u64 >= u64::from(self.units_of(bytes)))
    }

    /// The configured budget in bytes (0: none).
    pub fn total(&self) -> u64 {
        u64::from(self.total) * UNIT
    }

    /// `bytes` in whole units, at most the whole budget.
    fn units_of(&self, bytes: u64) -> u32 {
        u32::try_from(bytes.div_ceil(UNIT))
            .unwrap_or(u32::MAX)
            .min(self.total)
    }
}

/// The global concurrency limit: past N requests at work the next is
/// refused (503), not queued: a queue turns a burst into memory and late
/// answers. (Not tower's `ConcurrencyLimit`, which waits.) One caller (a
/// key, else an address) holds at most [`Overload::share`] of the places,
/// so the others always find one free.
#[derive(Debug, Clone)]
pub struct Overload {
    /// None: no limit (`CONDENSE_MAX_CONCURRENCY=0`).
    permits: Option<Arc<Semaphore>>,
    max: usize,
    /// The places each caller holds, by a hash of who it is.
    held: Held,
}

type Held = Arc<Mutex<HashMap<u64, usize>>>;

/// A place among the requests at work, held until dropped.
#[derive(Debug, Default)]
pub struct Permit {
    _place: Option<OwnedSemaphorePermit>,
    holder: Option<(Held, u64)>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some((held, who)) = &self.holder {
            let mut held = held.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(n) = held.get_mut(who) {
                *n -= 1;
                if *n == 0 {
                    held.remove(who);
                }
            }
        }
    }
}

impl Overload {
    /// At most `max` at once; `0` lifts the limit.
    pub fn new(max: usize) -> Self {
        Self {
            permits: (max > 0).then(|| Arc::new(Semaphore::new(max))),
            max,
            held: Arc::default(),
        }
    }

    /// A place for `who`, or `None` when `max` requests are already at work
    /// or `who` already holds its share.
    pub fn try_enter(&self, who: impl Hash) -> Option<Permit> {
        let Some(permits) = &self.permits else {
            return Some(Permit::default());
        };
        let who = rustc_hash::FxBuildHasher.hash_one(who);
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.get(&who).copied().unwrap_or(0) >= self.share() {
            return None;
        }
        let place = permits.clone().try_acquire_owned().ok()?;
        *held.entry(who).or_default() += 1;
        Some(Permit {
            _place: Some(place),
            holder: Some((self.held.clone(), who)),
        })
    }

    /// The configured limit (0: none).
    pub fn max(&self) -> usize {
        self.max
    }

    /// The most places one caller may hold: all but a quarter of them
    /// (rounded down; with fewer than 4 places, all).
    pub fn share(&self) -> usize {
        self.max - self.max / 4
    }
}

/// One request's or job's admission; clones are the same ticket, given back
/// when the last lets go. `Default`: nothing held.
#[derive(Debug, Clone, Default)]
pub struct Ticket(Arc<Mutex<Holding>>);

#[derive(Debug, Default)]
struct Holding {
    budget: MemoryBudget,
    /// Its units of the budget (None: no budget, or nothing reserved).
    permit: Option<OwnedSemaphorePermit>,
    /// What it holds, in bytes (counted without a budget too: see [`memory::give_back`]).
    held: u64,
    place: Option<Permit>,
    /// CPU tasks at work for it ([`Work`]).
    working: usize,
    /// Set by [`Ticket::done`]: the bytes its answer still needs.
    keep: Option<u64>,
}

impl Ticket {
    /// Takes a place among the requests at work for `who`; false when none
    /// is free, or `who` holds its share.
    pub fn enter(&self, places: &Overload, who: impl Hash) -> bool {
        let Some(place) = places.try_enter(who) else {
            return false;
        };
        self.lock().place = Some(place);
        true
    }

    /// Grows the reservation to `bytes` if free; false (unchanged) otherwise.
    pub fn try_grow_to(&self, bytes: u64) -> bool {
        let h = &mut *self.lock();
        let want = h.budget.units_of(bytes);
        if let (Some(p), Some(units)) = (h.permit.as_mut(), &h.budget.units) {
            let have = p.num_permits() as u32;
            if want > have {
                let Ok(more) = units.clone().try_acquire_many_owned(want - have) else {
                    return false;
                };
                p.merge(more);
            }
        }
        h.held = h.held.max(bytes);
        true
    }

    /// The whole budget its memory is part of (for the refusal's detail).
    pub fn budget(&self) -> u64 {
        self.lock().budget.total()
    }

    /// Its holder is done but for sending `keep` bytes: the rest goes now,
    /// or when its last CPU task stops.
    pub fn done(&self, keep: u64) {
        let mut h = self.lock();
        h.keep = Some(h.keep.map_or(keep, |k| k.min(keep)));
        if h.working == 0 {
            h.release();
        }
    }

    /// A share for a CPU task, counted as its work until dropped.
    pub fn work(&self) -> Work {
        self.lock().working += 1;
        Work(self.clone())
    }

    fn lock(&self) -> MutexGuard<'_, Holding> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Holding {
    /// Lets go of all but `keep`; memory freed by a large shrink (a parsed
    /// body once compressed) goes back to the system now, not when the
    /// request ends, which for a stalled provider may be minutes later.
    fn release(&mut self) {
        let Some(keep) = self.keep else { return };
        self.place = None;
        if self.held.saturating_sub(keep) >= memory::GIVE_BACK_AFTER_BYTES {
            memory::give_back();
        }
        self.held = self.held.min(keep);
        let keep = self.budget.units_of(keep) as usize;
        if let Some(p) = self.permit.as_mut() {
            drop(p.split(p.num_permits().saturating_sub(keep)));
        }
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        if self.held >= memory::GIVE_BACK_AFTER_BYTES {
            memory::give_back();
        }
    }
}

/// A CPU task's share of a [`Ticket`] (see [`Ticket::work`]).
#[derive(Debug)]
pub struct Work(Ticket);

impl Drop for Work {
    fn drop(&mut self) {
        let mut h = self.0.lock();
        h.working -= 1;
        if h.working == 0 {
            h.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    /// Bytes reserved now (0 without a budget: nothing is counted).
    fn in_use(b: &MemoryBudget) -> u64 {
        let free = |s: &Arc<Semaphore>| u64::from(b.total) - s.available_permits() as u64;
        b.units.as_ref().map_or(0, free) * UNIT
    }

    #[test]
    fn refuses_what_is_not_free_and_admits_again_when_it_is() {
        let b = MemoryBudget::new(10 * MIB);
        let a = b.try_reserve(6 * MIB).unwrap();
        assert_eq!(in_use(&b), 6 * MIB);
        assert!(b.try_reserve(5 * MIB).is_none());
        let c = b.try_reserve(4 * MIB).unwrap();
        assert!(b.try_reserve(1).is_none(), "a byte is a whole unit");
        drop(a);
        assert!(b.try_reserve(5 * MIB).is_some());
        drop(c);
        assert_eq!(in_use(&b), 0);
    }

    #[test]
    fn a_reservation_grows_only_into_free_memory_and_shrinks() {
        let b = MemoryBudget::new(10 * MIB);
        let held = b.try_reserve(2 * MIB).unwrap();
        let other = b.try_reserve(5 * MIB).unwrap();
        assert!(!held.try_grow_to(6 * MIB));
        assert_eq!(in_use(&b), 7 * MIB, "a failed growth changes nothing");
        assert!(held.try_grow_to(5 * MIB));
        assert_eq!(in_use(&b), 10 * MIB);
        held.done(MIB);
        assert_eq!(in_use(&b), 6 * MIB);
        // Held by several, given back when the last lets go.
        let again = held.clone();
        drop(held);
        assert_eq!(in_use(&b), 6 * MIB);
        drop(again);
        drop(other);
        assert_eq!(in_use(&b), 0);
    }

    #[test]
    fn a_request_larger_than_the_budget_runs_alone() {
        let b = MemoryBudget::new(4 * MIB);
        let big = b.try_reserve(100 * MIB).unwrap();
        assert_eq!(in_use(&b), 4 * MIB);
        assert!(b.try_reserve(1).is_none());
        drop(big);
        let small = b.try_reserve(1).unwrap();
        assert!(b.try_reserve(100 * MIB).is_none(), "not while another runs");
        drop(small);
    }

    #[test]
    fn no_budget_admits_everything() {
        let b = MemoryBudget::new(0);
        let held: Vec<_> = (0..100).map(|_| b.try_reserve(u64::MAX).unwrap()).collect();
        assert!(held[0].try_grow_to(u64::MAX));
        assert_eq!((in_use(&b), b.total(), held[0].budget()), (0, 0, 0));
    }

    #[test]
    fn refuses_past_the_limit_and_admits_again_when_one_ends() {
        let o = Overload::new(2);
        let a = o.try_enter(1).unwrap();
        let _b = o.try_enter(1).unwrap();
        assert_eq!(o.max - o.permits.as_ref().unwrap().available_permits(), 2);
        assert!(o.try_enter(2).is_none());
        drop(a);
        assert!(o.try_enter(2).is_some());
        let unlimited = Overload::new(0);
        let held: Vec<_> = (0..1000).map(|_| unlimited.try_enter(1).unwrap()).collect();
        assert_eq!(held.len(), 1000);
    }

    #[test]
    fn one_caller_leaves_a_quarter_of_the_places_to_the_others() {
        let o = Overload::new(8);
        let mine: Vec<_> = (0..6).map(|_| o.try_enter("a").unwrap()).collect();
        assert!(o.try_enter("a").is_none(), "six of eight is a's share");
        let others: Vec<_> = (0..2).map(|_| o.try_enter("b").unwrap()).collect();
        assert!(o.try_enter("c").is_none(), "all eight are taken");
        drop(mine);
        assert_eq!(o.held.lock().unwrap().len(), 1, "a holds none: forgotten");
        drop(others);
        assert!(o.held.lock().unwrap().is_empty());
        assert_eq!(Overload::new(1).share(), 1);
        assert_eq!(Overload::new(16).share(), 12);
    }

    #[test]
    fn a_ticket_lets_go_when_its_holder_is_done_and_its_work_has_stopped() {
        let (budget, places) = (MemoryBudget::new(10 * MIB), Overload::new(1));
        let ticket = budget.try_reserve(2 * MIB).unwrap();
        assert!(ticket.enter(&places, 1) && ticket.try_grow_to(6 * MIB));
        let work = ticket.work();
        ticket.done(MIB);
        assert_eq!(in_use(&budget), 6 * MIB, "a task still runs");
        assert!(places.try_enter(2).is_none());
        drop(work);
        assert_eq!(in_use(&budget), MIB, "what its answer needs");
        assert!(places.try_enter(2).is_some());
        drop(ticket);
        assert_eq!(in_use(&budget), 0);
    }

    #[test]
    fn a_ticket_dropped_before_it_is_done_holds_until_its_work_stops() {
        let (budget, places) = (MemoryBudget::new(10 * MIB), Overload::new(1));
        let ticket = budget.try_reserve(2 * MIB).unwrap();
        assert!(ticket.enter(&places, 1));
        let work = ticket.work();
        drop(ticket);
        assert_eq!(in_use(&budget), 2 * MIB);
        assert!(places.try_enter(2).is_none());
        drop(work);
        assert_eq!(in_use(&budget), 0);
        assert!(places.try_enter(2).is_some());
    }
}
