// SPDX-License-Identifier: Apache-2.0 OR MIT
//! One thread block: runs its warps in turn until all have exited, releases barriers when
//! enough threads have arrived, and detects deadlock.

use std::sync::atomic::Ordering;

use super::{
    ctx::{Bar, Ctx, Scratch},
    warp::{CLUSTER_BAR, NO_PHASE, Warp, lanes},
};
use crate::{cluster::Cluster, error::KernelError, grid::Launch, memory::GlobalMem};

/// A block being run: the state its warps share, and the warps.
pub(super) struct Block<'a> {
    pub(super) ctx: Ctx<'a>,
    pub(super) warps: Vec<Warp>,
    pub(super) sc: Box<Scratch>,
}

impl<'a> Block<'a> {
    pub(super) fn new(l: &'a Launch<'a>) -> Block<'a> {
        let nwarps = l.nthreads.div_ceil(32) as usize;
        Block {
            ctx: Ctx {
                l,
                ctaid: [0; 3],
                block_linear: 0,
                shared: vec![0; l.shared_alloc()],
                gmem: GlobalMem::new(l.mem),
                bars: [Bar::default(); 16],
                live: 0,
                insts: 0,
                winsts: 0,
                cl: None,
                solo: None,
                rank: 0,
            },
            warps: (0..nwarps).map(|_| Warp::new()).collect(),
            sc: Box::new(Scratch {
                ins: [[0; 32]; 4],
                out: [[0; 32]; 2],
                addr: [0; 32],
                vals: [[0; 32]; 4],
            }),
        }
    }

    pub(super) fn run(&mut self, id: u64) -> Result<(), KernelError> {
        let l = self.ctx.l;
        let [gx, gy, _] = l.cfg.grid;
        self.ctx.ctaid = [
            (id % gx as u64) as u32,
            ((id / gx as u64) % gy as u64) as u32,
            (id / (gx as u64 * gy as u64)) as u32,
        ];
        self.ctx.block_linear = id;
        self.ctx.shared.fill(0);
        self.ctx.bars = [Bar::default(); 16];
        self.ctx.live = l.nthreads;
        self.ctx.solo = None;
        for (i, w) in self.warps.iter_mut().enumerate() {
            w.reset(l, i as u32);
        }
        loop {
            let mut ran = false;
            for w in &mut self.warps {
                if w.full & !w.exited & !w.blocked != 0 {
                    ran = true;
                    self.ctx.run_warp(w, &mut self.sc)?;
                }
            }
            let mut released = self.release_barriers();
            if let Some(cl) = self.ctx.cluster() {
                released |= cluster_round(cl, &mut self.warps);
            }
            if self.warps.iter().all(|w| w.exited == w.full) {
                return Ok(());
            }
            let cluster_wait = || {
                self.warps
                    .iter()
                    .any(|w| lanes(w.blocked).any(|lane| w.bar_wait[lane].id == CLUSTER_BAR))
            };
            if !ran && !released {
                if !cluster_wait() {
                    return Err(KernelError::Deadlock {
                        block: self.ctx.ctaid,
                    });
                }
                // Waiting for the cluster's other blocks (on threads of their own).
                std::thread::yield_now();
            }
            if l.abort.load(Ordering::Relaxed) {
                return Ok(());
            }
            l.check_stop()?;
            if l.cooperative() {
                // A warp may be spinning at a grid barrier: let the blocks it waits for run.
                std::thread::yield_now();
            }
            if let Some(limit) = l.opts.instruction_limit
                && l.insts
                    .load(Ordering::Relaxed)
                    .saturating_add(self.ctx.insts)
                    > limit
            {
                return Err(KernelError::InstructionLimit { limit });
            }
        }
    }

    fn release_barriers(&mut self) -> bool {
        let mut released = false;
        for id in 0..16u8 {
            let bar = self.ctx.bars[id as usize];
            if bar.arrived == 0 {
                continue;
            }
            let expected = if bar.expected != 0 {
                bar.expected
            } else {
                self.ctx.live
            };
            if bar.arrived < expected {
                continue;
            }
            for w in &mut self.warps {
                for lane in lanes(w.blocked) {
                    let bw = w.bar_wait[lane];
                    if bw.id != id {
                        continue;
                    }
                    w.blocked &= !(1 << lane);
                    w.dirty = true;
                    let v = match bw.kind {
                        1 => bar.popc as u64,
                        2 => bar.and as u64,
                        3 => bar.or as u64,
                        _ => continue,
                    };
                    if let Some(x) = w.regs.get_mut(bw.dst as usize * 32 + lane) {
                        *x = v;
                    }
                }
            }
            self.ctx.bars[id as usize] = Bar::default();
            released = true;
        }
        released
    }
}

/// Tells the cluster barrier which of the block's threads exited since the last round, and
/// lets the lanes waiting for a phase that completed go on: whether any did.
fn cluster_round(cl: &Cluster, warps: &mut [Warp]) -> bool {
    let mut pending = Vec::new();
    let mut others = 0u32;
    for w in warps.iter_mut() {
        let new = w.exited & !w.cluster_exits;
        if new == 0 {
            continue;
        }
        w.cluster_exits |= new;
        for lane in lanes(new) {
            match std::mem::replace(&mut w.cluster_phase[lane], NO_PHASE) {
                NO_PHASE => others += 1,
                p => pending.push(p),
            }
        }
    }
    if !pending.is_empty() || others != 0 {
        cl.exit(&pending, others);
    }
    let phase = cl.phase();
    let mut released = false;
    for w in warps.iter_mut() {
        for lane in lanes(w.blocked) {
            if w.bar_wait[lane].id == CLUSTER_BAR && w.cluster_phase[lane] < phase {
                w.blocked &= !(1 << lane);
                w.cluster_phase[lane] = NO_PHASE;
                w.dirty = true;
                released = true;
            }
        }
    }
    released
}
