// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The interpreter's per-block state: [`Ctx`], what a block's warps share (shared memory,
//! barriers, counters), the operand [`Scratch`] arrays, and a barrier's state ([`Bar`]).

use crate::{alu::Lanes, cluster::Cluster, error::Location, grid::Launch, memory::GlobalMem};

use super::warp::Warp;

/// Warp-instructions a warp runs before the block scheduler moves on (fairness for spin loops).
pub(super) const SLICE: u32 = 4096;

/// Per-block state the warps share.
pub(super) struct Ctx<'a> {
    pub(super) l: &'a Launch<'a>,
    pub(super) ctaid: [u32; 3],
    pub(super) block_linear: u64,
    pub(super) shared: Vec<u8>,
    pub(super) gmem: GlobalMem<'a>,
    pub(super) bars: [Bar; 16],
    pub(super) live: u32,
    pub(super) insts: u64,
    pub(super) winsts: u64,
    /// The block's cluster, in a launch with clusters of more than one block.
    pub(super) cl: Option<&'a Cluster>,
    /// The cluster of this block alone, made when a block that is no cluster's (a launch
    /// without clusters) reaches the cluster barrier: then the block's threads are the
    /// cluster's.
    pub(super) solo: Option<Box<Cluster>>,
    /// The block's rank in its cluster.
    pub(super) rank: u32,
}

/// Lane arrays for operands and results, reused across instructions.
pub(super) struct Scratch {
    pub(super) ins: [Lanes; 4],
    pub(super) out: [Lanes; 2],
    pub(super) addr: Lanes,
    pub(super) vals: [Lanes; 4],
}

impl Ctx<'_> {
    /// The block's cluster, if it has one (a launch with clusters) or made one (see `solo`).
    pub(super) fn cluster(&self) -> Option<&Cluster> {
        self.cl.or(self.solo.as_deref())
    }

    pub(super) fn loc(&self, w: &Warp, lane: usize, line: u32) -> Location {
        Location {
            block: self.ctaid,
            thread: [w.tid[0][lane], w.tid[1][lane], w.tid[2][lane]],
            line,
        }
    }
}

/// A barrier's state in the running block (`bar.sync`, `bar.arrive`, `bar.red`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Bar {
    pub(super) arrived: u32,
    pub(super) expected: u32,
    pub(super) popc: u32,
    pub(super) and: bool,
    pub(super) or: bool,
}
