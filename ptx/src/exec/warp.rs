// SPDX-License-Identifier: Apache-2.0 OR MIT
//! A warp's state: its lanes' registers, per-lane program counters, call frames and local
//! memory, and the minimum-key scheduler that picks which lanes run together (divergence and
//! reconvergence).

use crate::{
    alu::Lanes,
    grid::Launch,
    ir::{Reg, SINK},
};

/// All-zero lanes (an operand or value no lane sets).
pub(super) const ZERO: Lanes = [0; 32];

/// The barrier a blocked lane waits on, and where a `bar.red` result goes.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct BarWait {
    pub(super) id: u8,
    pub(super) kind: u8,
    pub(super) dst: u32,
}

/// A lane's call frame (pushed by `call`, popped by `ret`).
#[derive(Debug)]
pub(super) struct Frame {
    pub(super) call_pc: u32,
    pub(super) caller_base: u32,
    pub(super) func: u32,
    pub(super) saved: Option<Box<[u64]>>,
}

pub(super) struct Warp {
    pub(super) idx: u32,
    pub(super) full: u32,
    pub(super) tid: [[u32; 32]; 3],
    pub(super) regs: Vec<u64>,
    pub(super) pc: u32,
    pub(super) group: u32,
    pub(super) threshold: u32,
    pub(super) func: u32,
    pub(super) rb: usize,
    pub(super) lane_pc: [u32; 32],
    pub(super) exited: u32,
    pub(super) blocked: u32,
    pub(super) bar_wait: [BarWait; 32],
    pub(super) frames: Vec<Vec<Frame>>,
    pub(super) frame_base: [u32; 32],
    pub(super) local: Vec<Vec<u8>>,
    pub(super) any_frames: bool,
    pub(super) dirty: bool,
    /// Lanes that found an mbarrier phase open: the next schedule prefers the warp's other
    /// lanes, which may be the ones that still have to arrive.
    pub(super) yielded: u32,
    /// Per lane, the cluster barrier phase it arrived in and has not yet waited for
    /// ([`NO_PHASE`]: none).
    pub(super) cluster_phase: [u64; 32],
    /// Lanes whose exit the cluster barrier has counted.
    pub(super) cluster_exits: u32,
}

/// No cluster barrier phase (see [`Warp::cluster_phase`]).
pub(super) const NO_PHASE: u64 = u64::MAX;

/// The barrier id lanes waiting at the cluster barrier record (see [`BarWait::id`]).
pub(super) const CLUSTER_BAR: u8 = 16;

#[inline]
pub(super) fn lanes(mask: u32) -> impl Iterator<Item = usize> {
    let mut m = mask;
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            Some(l)
        }
    })
}

impl Warp {
    /// Makes `lane` wait at barrier `b`; released, it resumes after the current instruction.
    pub(super) fn wait_at(&mut self, lane: usize, b: BarWait) {
        self.bar_wait[lane] = b;
        self.lane_pc[lane] = self.pc + 1;
    }

    /// Takes the lanes of `mask`, waiting at barriers, out of the running group.
    pub(super) fn block(&mut self, mask: u32) {
        self.blocked |= mask;
        self.group &= !mask;
    }

    pub(super) fn new() -> Warp {
        Warp {
            idx: 0,
            full: 0,
            tid: [[0; 32]; 3],
            regs: Vec::new(),
            pc: 0,
            group: 0,
            threshold: u32::MAX,
            func: 0,
            rb: 0,
            lane_pc: [0; 32],
            exited: 0,
            blocked: 0,
            bar_wait: [BarWait::default(); 32],
            frames: (0..32).map(|_| Vec::new()).collect(),
            frame_base: [0; 32],
            local: (0..32).map(|_| Vec::new()).collect(),
            any_frames: false,
            dirty: false,
            yielded: 0,
            cluster_phase: [NO_PHASE; 32],
            cluster_exits: 0,
        }
    }

    pub(super) fn reset(&mut self, l: &Launch<'_>, idx: u32) {
        let kf = l.kernel.func as usize;
        let func = &l.module.funcs[kf];
        self.idx = idx;
        let first = idx * 32;
        let n = l.nthreads.saturating_sub(first).min(32);
        self.full = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
        let [bx, by, _] = l.cfg.block;
        let (mut x, mut y, mut z) = (first % bx, (first / bx) % by, first / (bx * by));
        for lane in 0..32 {
            self.tid[0][lane] = x;
            self.tid[1][lane] = y;
            self.tid[2][lane] = z;
            x += 1;
            if x == bx {
                x = 0;
                y += 1;
                if y == by {
                    y = 0;
                    z += 1;
                }
            }
        }
        // Registers start undefined in PTX; stale values from the previous block are not
        // cleared (only a larger file is zero-extended).
        self.regs.resize(l.total_regs as usize * 32, 0);
        self.pc = func.entry;
        self.group = self.full;
        self.threshold = u32::MAX;
        self.func = kf as u32;
        self.rb = l.reg_base[kf] as usize;
        self.lane_pc = [func.entry; 32];
        self.exited = 0;
        self.blocked = 0;
        self.cluster_phase = [NO_PHASE; 32];
        self.cluster_exits = 0;
        for f in &mut self.frames {
            f.clear();
        }
        self.frame_base = [0; 32];
        let fs = func.frame_size as usize;
        for loc in &mut self.local {
            if fs > 1 << 16 {
                // Large frames: fresh zeroed allocations, whose pages the OS maps lazily.
                *loc = vec![0; fs];
            } else {
                loc.clear();
                loc.resize(fs, 0);
            }
        }
        self.any_frames = false;
        self.dirty = false;
    }

    #[inline(always)]
    pub(super) fn reg(&self, r: Reg) -> &Lanes {
        let s = (self.rb + r as usize) * 32;
        self.regs
            .get(s..s + 32)
            .and_then(|x| x.try_into().ok())
            .unwrap_or(&ZERO)
    }

    #[inline(always)]
    pub(super) fn get(&self, r: Reg, lane: usize) -> u64 {
        self.regs
            .get((self.rb + r as usize) * 32 + lane)
            .copied()
            .unwrap_or(0)
    }

    #[inline(always)]
    pub(super) fn set(&mut self, r: Reg, lane: usize, v: u64) {
        if r != SINK
            && let Some(x) = self.regs.get_mut((self.rb + r as usize) * 32 + lane)
        {
            *x = v;
        }
    }

    #[inline(always)]
    pub(super) fn write(&mut self, r: Reg, mask: u32, v: &Lanes) {
        if r == SINK {
            return;
        }
        let s = (self.rb + r as usize) * 32;
        let Some(d) = self.regs.get_mut(s..s + 32) else {
            return;
        };
        if mask == u32::MAX {
            d.copy_from_slice(v);
        } else {
            for l in lanes(mask) {
                d[l] = v[l];
            }
        }
    }

    pub(super) fn pred_mask(&self, r: Reg) -> u32 {
        let v = self.reg(r);
        let mut m = 0u32;
        for (l, x) in v.iter().enumerate() {
            m |= ((*x & 1) as u32) << l;
        }
        m
    }

    fn key_elem(&self, lane: usize, i: usize) -> Option<u32> {
        let f = &self.frames[lane];
        match i.cmp(&f.len()) {
            std::cmp::Ordering::Less => Some(f[i].call_pc),
            std::cmp::Ordering::Equal => Some(self.lane_pc[lane]),
            std::cmp::Ordering::Greater => None,
        }
    }

    fn key_cmp(&self, a: usize, b: usize) -> std::cmp::Ordering {
        let mut i = 0;
        loop {
            match (self.key_elem(a, i), self.key_elem(b, i)) {
                (Some(x), Some(y)) if x == y => i += 1,
                (Some(x), Some(y)) => return x.cmp(&y),
                (None, None) => return std::cmp::Ordering::Equal,
                (None, _) => return std::cmp::Ordering::Less,
                (_, None) => return std::cmp::Ordering::Greater,
            }
        }
    }

    /// Picks the lanes with the smallest (call stack, pc) key as the new group.
    pub(super) fn schedule(&mut self, l: &Launch<'_>) {
        for lane in lanes(self.group) {
            self.lane_pc[lane] = self.pc;
        }
        self.dirty = false;
        let run = self.full & !self.exited & !self.blocked;
        if run == 0 {
            self.group = 0;
            return;
        }
        let kf = l.kernel.func;
        let yielded = std::mem::take(&mut self.yielded);
        if !self.any_frames {
            // Lanes that yielded go last if others can run.
            let pick = if run & !yielded != 0 {
                run & !yielded
            } else {
                run
            };
            let mut min = u32::MAX;
            for lane in lanes(pick) {
                min = min.min(self.lane_pc[lane]);
            }
            let (mut grp, mut thr) = (0u32, u32::MAX);
            for lane in lanes(run) {
                let p = self.lane_pc[lane];
                if p == min && pick & (1 << lane) != 0 {
                    grp |= 1 << lane;
                } else if p > min {
                    thr = thr.min(p);
                }
            }
            self.group = grp;
            self.pc = min;
            self.threshold = thr;
            self.func = kf;
        } else {
            let mut best = run.trailing_zeros() as usize;
            for lane in lanes(run) {
                if self.key_cmp(lane, best).is_lt() {
                    best = lane;
                }
            }
            let n = self.frames[best].len();
            let (mut grp, mut thr) = (0u32, u32::MAX);
            for lane in lanes(run) {
                if self.key_cmp(lane, best).is_eq() {
                    grp |= 1 << lane;
                    continue;
                }
                // When does the group's key (S, pc) reach this lane's key?
                let fw = &self.frames[lane];
                let same_prefix =
                    fw.len() >= n && (0..n).all(|i| fw[i].call_pc == self.frames[best][i].call_pc);
                if same_prefix {
                    let t = match self.key_elem(lane, n) {
                        Some(v) if fw.len() == n => v,
                        Some(v) => v.saturating_add(1),
                        None => u32::MAX,
                    };
                    thr = thr.min(t);
                }
            }
            self.group = grp;
            self.pc = self.lane_pc[best];
            self.threshold = thr;
            self.func = self.frames[best].last().map_or(kf, |f| f.func);
        }
        self.rb = l.reg_base.get(self.func as usize).copied().unwrap_or(0) as usize;
    }

    /// Sends the group's lanes to `taken ? target : fall` and reschedules.
    pub(super) fn diverge(&mut self, l: &Launch<'_>, taken: u32, target: u32, fall: u32) {
        for lane in lanes(self.group) {
            self.lane_pc[lane] = if taken >> lane & 1 != 0 { target } else { fall };
        }
        self.group = 0;
        self.schedule(l);
    }
}
