// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The interpreter: each block's warps of 32 lanes in lockstep (the reference engine; the
//! launch layer, [`crate::launch`], runs blocks on it in parallel through [`worker`]).
//!
//! Divergence uses per-lane program counters with minimum-key scheduling: each step runs the
//! lanes whose (call-site stack, pc) key is smallest; lanes that branch ahead wait until the
//! others catch up, so they reconverge at the first common point (the immediate post-dominator
//! in the structured code nvcc emits). Warp operations see the lanes executing together.
//!
//! Split by topic: [`ctx`] holds the state a block's warps share, [`block`] runs one block (its
//! warps in turn, barriers), [`warp`] holds a warp's registers and the divergence scheduler,
//! [`step`] interprets instructions, [`access`] reads and writes the memory spaces,
//! [`operand`] reads source operands and special registers, [`call`] handles calls, returns
//! and the `vprintf` / `__assertfail` intrinsics, [`texture`] the texture and surface
//! instructions, [`wmma`] the warp matrix ones and [`cluster`] the thread-block cluster ones.

use self::block::Block;
use crate::{cluster::Cluster, grid::Launch};

/// A launch worker running interpreted blocks until the grid is done.
pub(crate) fn worker(l: &Launch<'_>) {
    let mut b = Block::new(l);
    while let Some(id) = l.claim_block() {
        let r = b.run(id);
        let (insts, winsts) = (
            std::mem::take(&mut b.ctx.insts),
            std::mem::take(&mut b.ctx.winsts),
        );
        if !l.block_done(id, r, insts, winsts) || l.cooperative() {
            break;
        }
    }
}

/// Runs one block of cluster `c` on this thread (the cluster's other blocks run on threads
/// of their own at the same time): the next rank of `cl` not yet taken.
pub(crate) fn cluster_block(l: &Launch<'_>, cl: &Cluster, c: u64) {
    let rank = cl.take_rank();
    let id = l.cluster_block_id(c, rank);
    let mut b = Block::new(l);
    b.ctx.cl = Some(cl);
    b.ctx.rank = rank;
    cl.publish(rank, &mut b.ctx.shared);
    let r = b.run(id);
    // The peers may still reach this block's shared memory: it lives as long as `cl`.
    cl.keep(std::mem::take(&mut b.ctx.shared));
    let (insts, winsts) = (b.ctx.insts, b.ctx.winsts);
    l.block_done(id, r, insts, winsts);
}

mod access;
mod block;
mod bulk;
mod call;
mod cluster;
mod ctx;
mod mma;
mod operand;
mod step;
mod texture;
mod warp;
mod wmma;
