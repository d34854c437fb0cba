// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Handle tables: what a guest holds instead of host pointers.
//!
//! A guest sees a stream, event, module or function as an opaque `u64` this table chose;
//! the CUDA object behind it never leaves the host. Handles carry a per-kind tag in their
//! top 16 bits, so a stream handle passed as an event is simply not found, and a counter
//! below it that only grows, so a destroyed handle is never reused. No handle is 0, 1 or 2
//! (the guest's `cudaStreamLegacy`/`cudaStreamPerThread` spellings and the null stream).

use std::collections::HashMap;

use crate::executor::{ExecResult, Status};

/// Which kind of object a table holds (the tag in a handle's top 16 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Kind {
    /// Streams.
    Stream = 0x5354,
    /// Events.
    Event = 0x4556,
    /// Modules.
    Module = 0x4d4f,
    /// Functions.
    Function = 0x4655,
    /// CUDA arrays.
    Array = 0x4152,
    /// CUDA mipmapped arrays.
    Mipmapped = 0x4d41,
    /// Graphs.
    Graph = 0x4752,
}

/// Bits of a handle below the tag.
const COUNTER_BITS: u32 = 48;

/// The counter value `handle` was given out at (its kind's tag taken off).
pub fn counter(handle: u64) -> u64 {
    handle & ((1 << COUNTER_BITS) - 1)
}

/// Maps guest handles to host objects of one kind.
#[derive(Debug)]
pub struct HandleTable<T> {
    kind: Kind,
    next: u64,
    map: HashMap<u64, T>,
}

impl<T> HandleTable<T> {
    /// An empty table for `kind`.
    pub fn new(kind: Kind) -> Self {
        Self {
            kind,
            next: 1,
            map: HashMap::new(),
        }
    }

    /// Stores `value` under a fresh handle.
    pub fn insert(&mut self, value: T) -> ExecResult<u64> {
        if self.next >= 1 << COUNTER_BITS {
            return Err(Status::MEMORY_ALLOCATION);
        }
        let h = (self.kind as u64) << COUNTER_BITS | self.next;
        self.next += 1;
        self.map.insert(h, value);
        Ok(h)
    }

    /// The counter behind the next handle (saved with a migrated session).
    pub fn next_counter(&self) -> u64 {
        self.next
    }

    /// Makes the next [`HandleTable::insert`] return `handle`, for a loaded session whose
    /// guest holds it: `false` (nothing changed) unless it is a handle of this table's kind,
    /// below `limit` (the saved counter) and not taken.
    pub fn expect(&mut self, handle: u64, limit: u64) -> bool {
        let n = counter(handle);
        let ok = handle >> COUNTER_BITS == self.kind as u64
            && n >= 1
            && n < limit.min(1 << COUNTER_BITS)
            && !self.map.contains_key(&handle);
        if ok {
            self.next = n;
        }
        ok
    }

    /// Sets the counter to a loaded session's `next`: `false` (nothing changed) where a
    /// handle already given out is not below it, or it is out of range.
    pub fn restore_next(&mut self, next: u64) -> bool {
        let mask = (1 << COUNTER_BITS) - 1;
        let ok =
            (1..=1 << COUNTER_BITS).contains(&next) && self.map.keys().all(|h| h & mask < next);
        if ok {
            self.next = next;
        }
        ok
    }

    /// The object behind `handle`.
    pub fn get(&self, handle: u64) -> ExecResult<&T> {
        self.map.get(&handle).ok_or(Status::INVALID_HANDLE)
    }

    /// The object behind `handle`, mutably.
    pub fn get_mut(&mut self, handle: u64) -> ExecResult<&mut T> {
        self.map.get_mut(&handle).ok_or(Status::INVALID_HANDLE)
    }

    /// Removes `handle`.
    pub fn remove(&mut self, handle: u64) -> ExecResult<T> {
        self.map.remove(&handle).ok_or(Status::INVALID_HANDLE)
    }

    /// Removes every entry for which `f` is true.
    pub fn retain(&mut self, f: impl FnMut(&u64, &mut T) -> bool) {
        self.map.retain(f);
    }

    /// Removes everything (handles are still never reused).
    pub fn clear(&mut self) {
        self.map.clear();
    }

    /// Every live object.
    /// Every handle with its object.
    pub fn iter(&self) -> impl Iterator<Item = (&u64, &T)> {
        self.map.iter()
    }

    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.map.values()
    }

    /// Number of live handles.
    pub fn count(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_tagged_unique_and_never_reused() {
        let mut t = HandleTable::new(Kind::Stream);
        let a = t.insert("a").unwrap();
        let b = t.insert("b").unwrap();
        assert_ne!(a, b);
        for h in [a, b] {
            assert!(h > 2, "collides with a special stream value");
            assert_eq!(h >> 48, Kind::Stream as u64);
        }
        assert_eq!(*t.get(a).unwrap(), "a");
        assert_eq!(t.remove(a).unwrap(), "a");
        assert_eq!(t.get(a), Err(Status::INVALID_HANDLE));
        assert_eq!(t.remove(a), Err(Status::INVALID_HANDLE));
        let c = t.insert("c").unwrap();
        assert!(c != a && c != b);
        t.clear();
        assert_eq!(t.count(), 0);
        assert!(t.insert("d").unwrap() > c);
    }

    #[test]
    fn guest_values_are_not_handles() {
        let mut streams = HandleTable::new(Kind::Stream);
        let mut events = HandleTable::new(Kind::Event);
        let s = streams.insert(()).unwrap();
        let e = events.insert(()).unwrap();
        // A stream handle is no event, and arbitrary values are nothing.
        assert_eq!(events.get(s), Err(Status::INVALID_HANDLE));
        assert_eq!(streams.get(e), Err(Status::INVALID_HANDLE));
        for v in [0, 1, 2, u64::MAX, 0x7f00_dead_beef, s + 1, s ^ (1 << 47)] {
            assert_eq!(streams.get(v), Err(Status::INVALID_HANDLE), "{v:#x}");
        }
    }

    #[test]
    fn loaded_handles_come_back_under_their_numbers() {
        let mut t = HandleTable::new(Kind::Event);
        let (a, b) = (t.insert(1).unwrap(), t.insert(2).unwrap());
        let next = t.next_counter();
        let mut u = HandleTable::new(Kind::Event);
        assert!(u.expect(b, next));
        assert_eq!(u.insert(2).unwrap(), b);
        assert!(!u.expect(b, next), "taken");
        assert!(!u.expect(a | 1 << 47, next), "another kind's tag");
        assert!(!u.expect(a, 1), "past the counter");
        assert!(u.expect(a, next));
        assert_eq!(u.insert(1).unwrap(), a);
        assert!(!u.restore_next(b & 0xffff), "below a handle given out");
        assert!(u.restore_next(next));
        assert!(u.insert(3).unwrap() > b);
    }

    #[test]
    fn exhaustion_is_an_error_not_a_wrap() {
        let mut t = HandleTable::new(Kind::Module);
        t.next = (1 << COUNTER_BITS) - 1;
        assert!(t.insert(()).is_ok());
        assert_eq!(t.insert(()), Err(Status::MEMORY_ALLOCATION));
    }
}
