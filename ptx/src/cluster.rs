// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Thread-block clusters (sm_90): the state the blocks of one running cluster share.
//!
//! A cluster's blocks run at once, each on a thread of its own, so they can wait for each
//! other at the cluster barrier (`barrier.cluster.arrive`/`wait`) and read and write each
//! other's shared memory (distributed shared memory: `mapa`, `ld`/`st`/`atom` on
//! `.shared::cluster` or generic addresses).
//!
//! Addresses: a block's own shared memory is offsets `0..` of the shared window, as without
//! clusters; `mapa` names block `r`'s shared memory by setting `(r + 1) << 24` in the offset
//! ([`RANK_SHIFT`]), which stays within the 32 bits of a shared address and above the
//! largest shared memory a block has. An access with those bits clear is the block's own.
//!
//! Memory: each block's shared buffer stays alive, through [`Cluster::keep`], until every
//! block of the cluster has finished (the cluster's threads are joined), so a block that
//! touches a peer that already exited (a program bug: CUDA requires a cluster barrier
//! first) reads memory that is still the peer's, never freed memory. Accesses to a peer are
//! atomic (relaxed; atomics sequentially consistent); a racy program may see torn values, as
//! on a GPU.

use std::sync::{
    Mutex,
    atomic::{
        AtomicPtr, AtomicU8, AtomicU16, AtomicU32, AtomicU64, AtomicUsize,
        Ordering::{Acquire, Relaxed, Release, SeqCst},
    },
};

use crate::{ir::AtomOp, memory::atomic_apply};

/// Most blocks in a cluster (CUDA's portable limit; sm_90 allows 16 with
/// `cudaFuncAttributeNonPortableClusterSizeAllowed`, which the CPU executor does not).
pub const MAX_CLUSTER_SIZE: u32 = 8;

/// Where a block's rank sits in a shared address set by `mapa` (see the module docs).
pub(crate) const RANK_SHIFT: u32 = 24;

/// The part of a shared address below the rank.
pub(crate) const OFFSET_MASK: u64 = (1 << RANK_SHIFT) - 1;

/// Splits a 32-bit shared address into (rank, offset): `None` for the running block's own.
#[inline]
pub(crate) fn split(addr: u64) -> (Option<u32>, u64) {
    let r = (addr & 0xffff_ffff) >> RANK_SHIFT;
    if r == 0 {
        (None, addr & OFFSET_MASK)
    } else {
        (Some(r as u32 - 1), addr & OFFSET_MASK)
    }
}

/// The shared address of `addr`'s offset in block `rank`'s shared memory (`mapa`).
#[inline]
pub(crate) fn map(addr: u64, rank: u32) -> u64 {
    ((u64::from(rank) + 1) << RANK_SHIFT) | (addr & OFFSET_MASK)
}

/// One block's shared memory as its peers see it.
#[derive(Default)]
struct Slot {
    ptr: AtomicPtr<u8>,
    len: AtomicUsize,
}

/// The cluster barrier: phase `phase` completes once every thread of the cluster has
/// arrived or exited.
#[derive(Default)]
struct Barrier {
    phase: u64,
    arrived: u64,
    /// Threads that exited (they count as arrived in every later phase).
    exited: u64,
    /// Threads that arrived in this phase and exited since: counted with `exited` from the
    /// next phase on.
    deferred: u64,
    total: u64,
}

impl Barrier {
    fn settle(&mut self) {
        if self.arrived > 0 && self.arrived + self.exited >= self.total {
            self.phase += 1;
            self.arrived = 0;
            self.exited += self.deferred;
            self.deferred = 0;
        }
    }
}

/// The state the blocks of one running cluster share.
pub(crate) struct Cluster {
    slots: Vec<Slot>,
    bar: Mutex<Barrier>,
    /// Shared buffers of blocks that finished, kept until the cluster is done.
    kept: Mutex<Vec<Vec<u8>>>,
    /// The next rank for a block of this cluster to take.
    next: AtomicU32,
}

impl Cluster {
    /// A cluster of `size` blocks of `threads` threads each.
    pub(crate) fn new(size: u32, threads: u32) -> Cluster {
        Cluster {
            slots: (0..size).map(|_| Slot::default()).collect(),
            bar: Mutex::new(Barrier {
                total: u64::from(size) * u64::from(threads),
                ..Barrier::default()
            }),
            kept: Mutex::new(Vec::new()),
            next: AtomicU32::new(0),
        }
    }

    /// A rank for a starting block (each once).
    pub(crate) fn take_rank(&self) -> u32 {
        self.next.fetch_add(1, Relaxed)
    }

    /// Publishes block `rank`'s shared memory to its peers.
    pub(crate) fn publish(&self, rank: u32, buf: &mut [u8]) {
        if let Some(s) = self.slots.get(rank as usize) {
            s.len.store(buf.len(), Release);
            s.ptr.store(buf.as_mut_ptr(), Release);
        }
    }

    /// Keeps a finished block's shared memory alive until the cluster is done.
    pub(crate) fn keep(&self, buf: Vec<u8>) {
        if let Ok(mut k) = self.kept.lock() {
            k.push(buf);
        }
    }

    /// Block `rank`'s shared memory at `off..off + size`: the address, if the block has
    /// started and the range is inside it, aligned to `size`.
    fn at(&self, rank: u32, off: u64, size: u32) -> Option<*mut u8> {
        let s = self.slots.get(rank as usize)?;
        let p = s.ptr.load(Acquire);
        let len = s.len.load(Acquire) as u64;
        if p.is_null()
            || off.checked_add(u64::from(size))? > len
            || !off.is_multiple_of(u64::from(size))
        {
            return None;
        }
        // SAFETY: `off + size <= len`, the length of the buffer `p` points to.
        Some(unsafe { p.add(off as usize) })
    }

    /// Loads `size` bytes (1, 2, 4 or 8) from block `rank`'s shared memory.
    pub(crate) fn load(&self, rank: u32, off: u64, size: u32) -> Option<u64> {
        let p = self.at(rank, off, size)?;
        // SAFETY: `p` is inside a buffer that lives until the cluster is done (`keep`) and is
        // aligned to `size` (`at`).
        Some(unsafe {
            match size {
                1 => u64::from(AtomicU8::from_ptr(p).load(Relaxed)),
                2 => u64::from(AtomicU16::from_ptr(p.cast()).load(Relaxed)),
                4 => u64::from(AtomicU32::from_ptr(p.cast()).load(Relaxed)),
                8 => AtomicU64::from_ptr(p.cast()).load(Relaxed),
                _ => return None,
            }
        })
    }

    /// Stores `size` bytes (1, 2, 4 or 8) into block `rank`'s shared memory.
    pub(crate) fn store(&self, rank: u32, off: u64, size: u32, v: u64) -> Option<()> {
        let p = self.at(rank, off, size)?;
        // SAFETY: as in `load`.
        unsafe {
            match size {
                1 => AtomicU8::from_ptr(p).store(v as u8, Relaxed),
                2 => AtomicU16::from_ptr(p.cast()).store(v as u16, Relaxed),
                4 => AtomicU32::from_ptr(p.cast()).store(v as u32, Relaxed),
                8 => AtomicU64::from_ptr(p.cast()).store(v, Relaxed),
                _ => return None,
            }
        }
        Some(())
    }

    /// An atomic operation on block `rank`'s shared memory: the old value. The running
    /// block's own atomics come here too in a cluster launch, so that they and its peers'
    /// are atomic with respect to each other.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn atomic(
        &self,
        rank: u32,
        off: u64,
        size: u32,
        op: AtomOp,
        signed: bool,
        b: u64,
        c: u64,
    ) -> Option<u64> {
        let p = self.at(rank, off, size)?;
        let f = |old: u64| atomic_apply(op, size, signed, old, b, c);
        // SAFETY: as in `load`.
        Some(unsafe {
            match size {
                4 => match AtomicU32::from_ptr(p.cast())
                    .fetch_update(SeqCst, SeqCst, |o| Some(f(u64::from(o)) as u32))
                {
                    Ok(v) | Err(v) => u64::from(v),
                },
                8 => match AtomicU64::from_ptr(p.cast())
                    .fetch_update(SeqCst, SeqCst, |o| Some(f(o)))
                {
                    Ok(v) | Err(v) => v,
                },
                2 => match AtomicU16::from_ptr(p.cast())
                    .fetch_update(SeqCst, SeqCst, |o| Some(f(u64::from(o)) as u16))
                {
                    Ok(v) | Err(v) => u64::from(v),
                },
                _ => return None,
            }
        })
    }

    /// `n` threads arrive at the barrier: the phase they arrived in.
    pub(crate) fn arrive(&self, n: u32) -> u64 {
        let mut b = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        let phase = b.phase;
        b.arrived += u64::from(n);
        b.settle();
        phase
    }

    /// Threads exited: `pending` of them had arrived in phase `phases` (their wait not yet
    /// done), `others` not.
    pub(crate) fn exit(&self, pending: &[u64], others: u32) {
        let mut b = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        let now = b.phase;
        for &p in pending {
            if p == now {
                b.deferred += 1;
            } else {
                b.exited += 1;
            }
        }
        b.exited += u64::from(others);
        b.settle();
    }

    /// The barrier's current phase (every earlier one is complete).
    pub(crate) fn phase(&self) -> u64 {
        self.bar.lock().unwrap_or_else(|e| e.into_inner()).phase
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_name_ranks_above_any_shared_memory() {
        assert_eq!(split(0x1234), (None, 0x1234));
        let a = map(0x1234, 3);
        assert_eq!(split(a), (Some(3), 0x1234));
        // Mapping a mapped address names the new rank.
        assert_eq!(split(map(a, 0)), (Some(0), 0x1234));
        assert!(a <= u64::from(u32::MAX));
    }

    #[test]
    fn the_barrier_waits_for_every_thread_and_counts_exits() {
        let c = Cluster::new(2, 2);
        assert_eq!(c.arrive(2), 0);
        assert_eq!(c.phase(), 0);
        // One thread exits without arriving, then the last arrives.
        c.exit(&[], 1);
        assert_eq!(c.phase(), 0);
        assert_eq!(c.arrive(1), 0);
        assert_eq!(c.phase(), 1);
        // Phase 1: three threads left; one arrives and exits before the others arrive.
        assert_eq!(c.arrive(1), 1);
        c.exit(&[1], 0);
        assert_eq!(c.phase(), 1);
        c.arrive(2);
        assert_eq!(c.phase(), 2);
        // Phase 2: two threads left.
        c.arrive(2);
        assert_eq!(c.phase(), 3);
    }

    #[test]
    fn peers_reach_only_published_memory_inside_its_bounds() {
        let c = Cluster::new(2, 1);
        assert_eq!(c.load(1, 0, 4), None);
        let mut buf = vec![0u8; 16];
        c.publish(1, &mut buf);
        assert_eq!(c.store(1, 4, 4, 7), Some(()));
        assert_eq!(c.load(1, 4, 4), Some(7));
        assert_eq!(c.atomic(1, 4, 4, AtomOp::Add, false, 5, 0), Some(7));
        assert_eq!(c.load(1, 4, 4), Some(12));
        assert_eq!(c.load(1, 16, 1), None);
        assert_eq!(c.load(1, 2, 4), None);
        assert_eq!(c.load(2, 0, 4), None);
        c.keep(buf);
        assert_eq!(c.load(1, 4, 4), Some(12));
    }
}
