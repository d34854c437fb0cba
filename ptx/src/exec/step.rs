// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The instruction loop: runs one warp's current group of lanes through the decoded code until
//! the group empties, blocks or uses up its time slice. ALU instructions are one call to their
//! pre-decoded function; memory, control flow and warp-collective instructions (barriers,
//! shuffles, votes, match, redux) are interpreted here.

use std::sync::atomic::Ordering;

use super::{
    access::{Fault, ld_fixed, sext, st_fixed},
    cluster::{mapa, names_rank},
    ctx::{Ctx, SLICE, Scratch},
    warp::{BarWait, Warp, ZERO, lanes},
};
use crate::{
    access::{classify, window_addr},
    alu::Lanes,
    error::KernelError,
    ir::*,
    module::{LOCAL_WINDOW, SHARED_WINDOW},
};

/// An mbarrier object (64 bits): the pending arrival count in bits 0..21, the expected count
/// in bits 21..42, the transaction count in bits 42..63 (signed, 21 bits: copies may complete
/// bytes before they are expected), the current phase's parity in bit 63. The phase
/// completes when both counts are zero. A state token (what `arrive`
/// returns) holds the parity of the phase it arrived in (bit 63) and the pending count
/// before the arrival (bits 0..21): the PTX ISA's "state prior to the arrive-on operation",
/// and what `mbarrier.pending_count` reads on an H100 (4 after three of four arrivals).
const MBAR_COUNT: u64 = (1 << 21) - 1;
const MBAR_EXPECTED: u32 = 21;
const MBAR_TX: u32 = 42;

/// The transaction count of mbarrier word `word`.
fn mbar_tx(word: u64) -> i64 {
    // Sign-extend the 21-bit field.
    (((word >> MBAR_TX) & MBAR_COUNT) as i64) << 43 >> 43
}

/// `word` with transaction count `tx` (wrapping in 21 bits, as the hardware's range is).
fn with_tx(word: u64, tx: i64) -> u64 {
    (word & !(MBAR_COUNT << MBAR_TX)) | (((tx as u64) & MBAR_COUNT) << MBAR_TX)
}

/// `word` after its phase completed, if both its counts are zero: the next phase waits for
/// the expected arrivals again.
fn mbar_settle(word: u64) -> u64 {
    let pending = word & MBAR_COUNT;
    if pending != 0 || mbar_tx(word) != 0 {
        return word;
    }
    let expected = (word >> MBAR_EXPECTED) & MBAR_COUNT;
    let phase = (word >> 63) ^ 1;
    expected | (expected << MBAR_EXPECTED) | (phase << 63)
}

impl<'a> Ctx<'a> {
    /// One lane's `mbarrier` operation on the object at `at` (`av`: the count, state token or
    /// parity operand): what it writes to its destination, if anything. The block's warps
    /// run on one thread, so the read and the write need no atomicity between them.
    pub(super) fn mbarrier(
        &mut self,
        w: &mut Warp,
        lane: usize,
        op: MbarOp,
        space: Space,
        at: u64,
        av: u64,
    ) -> Result<Option<u64>, Fault> {
        if matches!(op, MbarOp::PendingCount) {
            return Ok(Some(av & MBAR_COUNT));
        }
        if !at.is_multiple_of(8) {
            return Err(Fault::Misaligned { addr: at, size: 8 });
        }
        // The object lives in shared memory (an update elsewhere would not be atomic
        // between blocks): any other address faults.
        let shared = match space {
            Space::Shared => true,
            Space::Generic => matches!(classify(at).0, Space::Shared),
            _ => false,
        };
        if !shared {
            return Err(Fault::Illegal {
                addr: at,
                size: 8,
                write: true,
            });
        }
        let rd = |ctx: &mut Self, w: &mut Warp| {
            ctx.atomic(w, lane, space, at, 8, AtomOp::Add, false, 0, 0)
        };
        let wr = |ctx: &mut Self, w: &mut Warp, v: u64| {
            ctx.atomic(w, lane, space, at, 8, AtomOp::Exch, false, v, 0)
                .map(drop)
        };
        let arrive = |word: u64, n: u64, drop: bool| {
            let pending = word & MBAR_COUNT;
            let mut expected = (word >> MBAR_EXPECTED) & MBAR_COUNT;
            if drop {
                expected = expected.saturating_sub(n);
            }
            let state = (word & (1 << 63)) | pending;
            let word = (word & !((MBAR_COUNT << MBAR_EXPECTED) | MBAR_COUNT))
                | pending.saturating_sub(n)
                | (expected << MBAR_EXPECTED);
            (mbar_settle(word), state)
        };
        Ok(match op {
            MbarOp::Init => {
                let n = av & MBAR_COUNT;
                wr(self, w, n | (n << MBAR_EXPECTED))?;
                None
            }
            MbarOp::Inval => {
                wr(self, w, 0)?;
                None
            }
            MbarOp::Arrive { drop } => {
                let word = rd(self, w)?;
                let (new, state) = arrive(word, av & 0xffff_ffff, drop);
                wr(self, w, new)?;
                Some(state)
            }
            MbarOp::ArriveExpectTx => {
                let word = rd(self, w)?;
                let word = with_tx(word, mbar_tx(word) + i64::from(av as u32));
                let (new, state) = arrive(word, 1, false);
                wr(self, w, new)?;
                Some(state)
            }
            MbarOp::ExpectTx | MbarOp::CompleteTx => {
                let word = rd(self, w)?;
                let n = i64::from(av as u32);
                let tx = if op == MbarOp::ExpectTx { n } else { -n };
                wr(self, w, mbar_settle(with_tx(word, mbar_tx(word) + tx)))?;
                None
            }
            MbarOp::CpAsyncArrive { noinc } => {
                if noinc {
                    let word = rd(self, w)?;
                    wr(self, w, arrive(word, 1, false).0)?;
                }
                None
            }
            MbarOp::Wait { parity } => {
                let word = rd(self, w)?;
                let want = if parity { av & 1 } else { av >> 63 };
                Some(u64::from(word >> 63 != want))
            }
            MbarOp::PendingCount => Some(av & MBAR_COUNT),
        })
    }

    // Operands, destinations and lanes are parallel small arrays indexed together.
    #[allow(clippy::needless_range_loop)]
    pub(super) fn run_warp(&mut self, w: &mut Warp, sc: &mut Scratch) -> Result<(), KernelError> {
        let l = self.l;
        let code = &l.module.code;
        if w.dirty || w.group == 0 {
            w.schedule(l);
        }
        let mut budget = SLICE;
        while w.group != 0 {
            if w.pc >= w.threshold {
                w.schedule(l);
                // Counted against the slice too, so scheduling can never spin.
                budget -= 1;
                if budget == 0 {
                    break;
                }
                continue;
            }
            let Some(inst) = code.get(w.pc as usize) else {
                return Err(KernelError::Unsupported {
                    instruction: "execution past the end of the code".into(),
                    loc: self.loc(w, w.group.trailing_zeros() as usize, 0),
                });
            };
            let group = w.group;
            let mut mask = group;
            if let Some((g, neg)) = inst.guard {
                let p = w.pred_mask(g);
                mask &= if neg { !p } else { p };
            }
            self.insts += group.count_ones() as u64;
            self.winsts += 1;
            match &inst.op {
                Op::Alu {
                    f,
                    ctx,
                    src,
                    nsrc,
                    dst,
                    ndst,
                    ..
                } => {
                    if mask != 0 {
                        let ns = (*nsrc as usize).min(4);
                        for k in 0..ns {
                            if !matches!(src[k], Src::Reg(_)) {
                                self.fill(w, &src[k], &mut sc.ins[k]);
                            }
                        }
                        let mut refs: [&Lanes; 4] = [&ZERO; 4];
                        for k in 0..ns {
                            refs[k] = match src[k] {
                                Src::Reg(r) => w.reg(r),
                                _ => &sc.ins[k],
                            };
                        }
                        f(ctx, &refs, &mut sc.out);
                        for k in 0..(*ndst as usize).min(2) {
                            w.write(dst[k], mask, &sc.out[k]);
                        }
                    }
                    w.pc += 1;
                }
                Op::Mov { d, a, mask: m } => {
                    if mask != 0 {
                        match *a {
                            Src::Reg(r) => {
                                let v = &mut sc.ins[0];
                                for (x, y) in v.iter_mut().zip(w.reg(r)) {
                                    *x = *y & *m;
                                }
                                w.write(*d, mask, v);
                            }
                            _ => {
                                let v = &mut sc.ins[0];
                                self.fill(w, a, v);
                                for x in v.iter_mut() {
                                    *x &= *m;
                                }
                                w.write(*d, mask, v);
                            }
                        }
                    }
                    w.pc += 1;
                }
                Op::Pack { d, srcs, n, bits } => {
                    let em = if *bits >= 64 {
                        u64::MAX
                    } else {
                        (1u64 << bits) - 1
                    };
                    for lane in lanes(mask) {
                        let mut v = 0u64;
                        for k in 0..(*n as usize).min(4) {
                            v |= (self.val(w, &srcs[k], lane) & em) << (k as u32 * *bits as u32);
                        }
                        w.set(*d, lane, v);
                    }
                    w.pc += 1;
                }
                Op::Unpack { ds, n, bits, a } => {
                    let em = if *bits >= 64 {
                        u64::MAX
                    } else {
                        (1u64 << bits) - 1
                    };
                    for lane in lanes(mask) {
                        let v = self.val(w, a, lane);
                        for k in 0..(*n as usize).min(4) {
                            w.set(ds[k], lane, (v >> (k as u32 * *bits as u32)) & em);
                        }
                    }
                    w.pc += 1;
                }
                Op::Ld {
                    space,
                    size,
                    sext: sx,
                    n,
                    d,
                    addr,
                    ..
                } => {
                    if mask != 0 {
                        let (sz, n) = (*size as u32, (*n as usize).min(4));
                        let total = sz * n as u32;
                        let amask = total.next_power_of_two() as u64 - 1;
                        if !matches!(addr.base, Src::Reg(_)) {
                            self.fill(w, &addr.base, &mut sc.addr);
                        }
                        let base = match addr.base {
                            Src::Reg(r) => w.reg(r),
                            _ => &sc.addr,
                        };
                        if n == 1 && *space == Space::Shared {
                            let off = addr.off as u64;
                            let out = &mut sc.vals[0];
                            let r = match sz {
                                1 => ld_fixed::<1>(&self.shared, base, off, mask, *sx, out),
                                2 => ld_fixed::<2>(&self.shared, base, off, mask, *sx, out),
                                4 => ld_fixed::<4>(&self.shared, base, off, mask, *sx, out),
                                _ => ld_fixed::<8>(&self.shared, base, off, mask, *sx, out),
                            };
                            match r {
                                Ok(()) => {
                                    w.write(d[0], mask, &sc.vals[0]);
                                    w.pc += 1;
                                    continue;
                                }
                                // An address of a cluster peer's shared memory (`mapa`):
                                // the general path below reaches it.
                                Err((_, Fault::Illegal { addr, .. })) if names_rank(addr) => {}
                                Err((lane, f)) => return Err(self.fault(f, w, lane, inst.line)),
                            }
                        }
                        for lane in lanes(mask) {
                            let a = window_addr(*space, base[lane].wrapping_add(addr.off as u64));
                            if a & amask != 0 {
                                return Err(self.fault(
                                    Fault::Misaligned {
                                        addr: a,
                                        size: total,
                                    },
                                    w,
                                    lane,
                                    inst.line,
                                ));
                            }
                            for k in 0..n {
                                let ea = a.wrapping_add((k as u32 * sz) as u64);
                                let v = match *space {
                                    Space::Shared => {
                                        self.shared_load(ea, sz).ok_or(Fault::Illegal {
                                            addr: ea,
                                            size: sz,
                                            write: false,
                                        })
                                    }
                                    sp => self.load(w, lane, sp, ea, sz),
                                }
                                .map_err(|f| self.fault(f, w, lane, inst.line))?;
                                sc.vals[k][lane] = if *sx { sext(v, *size) } else { v };
                            }
                        }
                        for k in 0..n {
                            w.write(d[k], mask, &sc.vals[k]);
                        }
                    }
                    w.pc += 1;
                }
                Op::St {
                    space,
                    size,
                    n,
                    v,
                    addr,
                    ..
                } => {
                    if mask != 0 {
                        let (sz, n) = (*size as u32, (*n as usize).min(4));
                        let total = sz * n as u32;
                        let amask = total.next_power_of_two() as u64 - 1;
                        self.fill(w, &addr.base, &mut sc.addr);
                        for k in 0..n {
                            self.fill(w, &v[k], &mut sc.vals[k]);
                        }
                        if n == 1 && *space == Space::Shared {
                            let (off, base, vals) = (addr.off as u64, &sc.addr, &sc.vals[0]);
                            let r = match sz {
                                1 => st_fixed::<1>(&mut self.shared, base, off, mask, vals),
                                2 => st_fixed::<2>(&mut self.shared, base, off, mask, vals),
                                4 => st_fixed::<4>(&mut self.shared, base, off, mask, vals),
                                _ => st_fixed::<8>(&mut self.shared, base, off, mask, vals),
                            };
                            match r {
                                Ok(()) => {
                                    w.pc += 1;
                                    continue;
                                }
                                // As for loads: a cluster peer's, stored below (again for
                                // the lanes stored already, with the same values).
                                Err((_, Fault::Illegal { addr, .. })) if names_rank(addr) => {}
                                Err((lane, f)) => return Err(self.fault(f, w, lane, inst.line)),
                            }
                        }
                        for lane in lanes(mask) {
                            let a =
                                window_addr(*space, sc.addr[lane].wrapping_add(addr.off as u64));
                            if a & amask != 0 {
                                return Err(self.fault(
                                    Fault::Misaligned {
                                        addr: a,
                                        size: total,
                                    },
                                    w,
                                    lane,
                                    inst.line,
                                ));
                            }
                            for k in 0..n {
                                let ea = a.wrapping_add((k as u32 * sz) as u64);
                                let x = sc.vals[k][lane];
                                let r = match *space {
                                    Space::Shared => {
                                        self.shared_store(ea, sz, x).ok_or(Fault::Illegal {
                                            addr: ea,
                                            size: sz,
                                            write: true,
                                        })
                                    }
                                    sp => self.store(w, lane, sp, ea, sz, x),
                                };
                                if let Err(f) = r {
                                    return Err(self.fault(f, w, lane, inst.line));
                                }
                            }
                        }
                    }
                    w.pc += 1;
                }
                Op::Atom {
                    space,
                    op,
                    size,
                    signed,
                    d,
                    addr,
                    b,
                    c,
                } => {
                    let sz = *size as u32;
                    for lane in lanes(mask) {
                        let a = self.addr_of(w, addr, lane);
                        if !a.is_multiple_of(sz as u64) {
                            return Err(self.fault(
                                Fault::Misaligned { addr: a, size: sz },
                                w,
                                lane,
                                inst.line,
                            ));
                        }
                        let (bv, cv) = (self.val(w, b, lane), self.val(w, c, lane));
                        match self.atomic(w, lane, *space, a, sz, *op, *signed, bv, cv) {
                            Ok(old) => w.set(*d, lane, old),
                            Err(f) => return Err(self.fault(f, w, lane, inst.line)),
                        }
                    }
                    w.pc += 1;
                }
                Op::Cvta {
                    to,
                    space,
                    d,
                    a,
                    mask: m,
                } => {
                    let (base, win) = match space {
                        Space::Shared => (SHARED_WINDOW, true),
                        Space::Local => (LOCAL_WINDOW, true),
                        _ => (0, false),
                    };
                    for lane in lanes(mask) {
                        let v = self.val(w, a, lane);
                        let r = if !win {
                            v
                        } else if *to {
                            v.wrapping_sub(base)
                        } else {
                            v.wrapping_add(base)
                        };
                        w.set(*d, lane, r & m);
                    }
                    w.pc += 1;
                }
                Op::Isspacep { space, d, a } => {
                    for lane in lanes(mask) {
                        let (s, _) = classify(self.val(w, a, lane));
                        let r = match space {
                            Space::Global | Space::Const => s == Space::Global,
                            s2 => s == *s2,
                        };
                        w.set(*d, lane, r as u64);
                    }
                    w.pc += 1;
                }
                Op::Bra { target } => {
                    if mask == group {
                        w.pc = *target;
                    } else if mask == 0 {
                        w.pc += 1;
                    } else {
                        let fall = w.pc + 1;
                        w.diverge(l, mask, *target, fall);
                    }
                }
                Op::Brx { idx, targets } => {
                    let fall = w.pc + 1;
                    for lane in lanes(group) {
                        w.lane_pc[lane] = fall;
                    }
                    for lane in lanes(mask) {
                        let i = self.val(w, idx, lane) as u32 as usize;
                        match targets.get(i) {
                            Some(t) => w.lane_pc[lane] = *t,
                            None => {
                                return Err(KernelError::Unsupported {
                                    instruction: format!("brx.idx index {i} out of range"),
                                    loc: self.loc(w, lane, inst.line),
                                });
                            }
                        }
                    }
                    w.group = 0;
                    w.schedule(l);
                }
                Op::Call { target, args, .. } => self.call(w, mask, target, args, inst.line)?,
                Op::Ret => self.ret(w, mask),
                Op::Exit => {
                    w.exited |= mask;
                    self.live -= mask.count_ones().min(self.live);
                    w.group &= !mask;
                    w.pc += 1;
                    if w.group == 0 {
                        w.schedule(l);
                    }
                }
                Op::Trap | Op::Brkpt | Op::Unsupported(_) => {
                    if mask != 0 {
                        let loc = self.loc(w, mask.trailing_zeros() as usize, inst.line);
                        return Err(match &inst.op {
                            Op::Trap => KernelError::Trap { loc },
                            Op::Brkpt => KernelError::Breakpoint { loc },
                            Op::Unsupported(s) => KernelError::Unsupported {
                                instruction: s.to_string(),
                                loc,
                            },
                            _ => KernelError::Trap { loc },
                        });
                    }
                    w.pc += 1;
                }
                Op::Intrinsic { which, args, ret } => {
                    for lane in lanes(mask) {
                        self.intrinsic(w, lane, *which, args, *ret, inst.line)?;
                    }
                    w.pc += 1;
                }
                Op::Bar {
                    kind,
                    id,
                    count,
                    pred,
                    d,
                } => {
                    if mask != 0 {
                        let first = mask.trailing_zeros() as usize;
                        let bid = (self.val(w, id, first) & 15) as usize;
                        let cnt = count.as_ref().map(|c| self.val(w, c, first) as u32);
                        let n = mask.count_ones();
                        let bar = &mut self.bars[bid];
                        if let Some(c) = cnt {
                            bar.expected = c;
                        }
                        if bar.arrived == 0 {
                            bar.and = true;
                        }
                        bar.arrived += n;
                        let k = match kind {
                            BarKind::Arrive => 255,
                            BarKind::Sync => 0,
                            BarKind::RedPopc => 1,
                            BarKind::RedAnd => 2,
                            BarKind::RedOr => 3,
                        };
                        if k != 255 {
                            for lane in lanes(mask) {
                                if k != 0 {
                                    let p = self.val(w, pred, lane) & 1 != 0;
                                    let bar = &mut self.bars[bid];
                                    bar.popc += p as u32;
                                    bar.and &= p;
                                    bar.or |= p;
                                }
                                let dst = if *d == SINK {
                                    u32::MAX
                                } else {
                                    (w.rb + *d as usize) as u32
                                };
                                w.wait_at(
                                    lane,
                                    BarWait {
                                        id: bid as u8,
                                        kind: k,
                                        dst,
                                    },
                                );
                            }
                            w.block(mask);
                        }
                    }
                    w.pc += 1;
                    if w.group == 0 {
                        w.schedule(l);
                    }
                }
                Op::ClusterBar { wait } => self.cluster_bar(w, mask, *wait),
                Op::Mapa {
                    d,
                    a,
                    rank,
                    generic,
                } => {
                    for lane in lanes(mask) {
                        let (av, r) = (self.val(w, a, lane), self.val(w, rank, lane) as u32);
                        w.set(*d, lane, mapa(av, r, *generic));
                    }
                    w.pc += 1;
                }
                Op::GetCtaRank { d, a, generic } => {
                    for lane in lanes(mask) {
                        let r = self.cta_rank(self.val(w, a, lane), *generic);
                        w.set(*d, lane, u64::from(r));
                    }
                    w.pc += 1;
                }
                Op::Shfl {
                    mode,
                    d,
                    p,
                    a,
                    b,
                    c,
                } => {
                    if mask != 0 {
                        let av = &mut sc.addr;
                        self.fill(w, a, av);
                        for lane in lanes(mask) {
                            let bv = self.val(w, b, lane) as u32 & 31;
                            let cv = self.val(w, c, lane) as u32;
                            let seg = (cv >> 8) & 31;
                            let clamp = cv & 31;
                            let ln = lane as i32;
                            let max_lane = ((lane as u32 & seg) | (clamp & !seg)) as i32;
                            let min_lane = (lane as u32 & seg) as i32;
                            let (j, ok) = match mode {
                                ShflMode::Up => {
                                    let j = ln - bv as i32;
                                    (j, j >= max_lane)
                                }
                                ShflMode::Down => {
                                    let j = ln + bv as i32;
                                    (j, j <= max_lane)
                                }
                                ShflMode::Bfly => {
                                    let j = ln ^ bv as i32;
                                    (j, j <= max_lane)
                                }
                                ShflMode::Idx => {
                                    let j = min_lane | (bv & !seg) as i32;
                                    (j, j <= max_lane)
                                }
                            };
                            let src = if ok && (0..32).contains(&j) {
                                j as usize
                            } else {
                                lane
                            };
                            sc.out[0][lane] = av[src] & 0xffff_ffff;
                            sc.out[1][lane] = ok as u64;
                        }
                        w.write(*d, mask, &sc.out[0]);
                        w.write(*p, mask, &sc.out[1]);
                    }
                    w.pc += 1;
                }
                Op::Vote {
                    mode,
                    d,
                    a,
                    members,
                } => {
                    if mask != 0 {
                        let mut ballot = 0u32;
                        for lane in lanes(mask) {
                            ballot |= ((self.val(w, a, lane) & 1) as u32) << lane;
                        }
                        let groups = self.member_groups(w, members.as_ref(), mask);
                        for lane in lanes(mask) {
                            let g = groups[lane];
                            let b = ballot & g;
                            let r = match mode {
                                VoteMode::Ballot => b as u64,
                                VoteMode::All => (b == g) as u64,
                                VoteMode::Any => (b != 0) as u64,
                                VoteMode::Uni => (b == 0 || b == g) as u64,
                            };
                            w.set(*d, lane, r);
                        }
                    }
                    w.pc += 1;
                }
                Op::Match {
                    all,
                    d,
                    p,
                    a,
                    mask64,
                    members,
                } => {
                    if mask != 0 {
                        let vm = if *mask64 { u64::MAX } else { 0xffff_ffff };
                        let mut v = [0u64; 32];
                        self.fill(w, a, &mut v);
                        let groups = self.member_groups(w, Some(members), mask);
                        for lane in lanes(mask) {
                            let g = groups[lane];
                            let same = lanes(g)
                                .filter(|&k| v[k] & vm == v[lane] & vm)
                                .fold(0u32, |m, k| m | 1 << k);
                            let same_all = same == g;
                            let m = match (*all, same_all) {
                                (false, _) => same,
                                (true, true) => g,
                                (true, false) => 0,
                            };
                            w.set(*d, lane, m as u64);
                            w.set(*p, lane, same_all as u64);
                        }
                    }
                    w.pc += 1;
                }
                Op::Redux {
                    op,
                    signed,
                    d,
                    a,
                    members,
                } => {
                    if mask != 0 {
                        let mut v = [0u64; 32];
                        self.fill(w, a, &mut v);
                        let groups = self.member_groups(w, Some(members), mask);
                        for lane in lanes(mask) {
                            let g = groups[lane];
                            let r = redux(*op, *signed, lanes(g).map(|l| v[l] as u32));
                            w.set(*d, lane, r as u64);
                        }
                    }
                    w.pc += 1;
                }
                Op::Mbar {
                    op,
                    space,
                    d,
                    addr,
                    a,
                } => {
                    let mut waiting = false;
                    for lane in lanes(mask) {
                        let at = self.addr_of(w, addr, lane);
                        let av = self.val(w, a, lane);
                        match self.mbarrier(w, lane, *op, *space, at, av) {
                            Ok(Some(v)) => {
                                waiting |= matches!(op, MbarOp::Wait { .. }) && v == 0;
                                w.set(*d, lane, v);
                            }
                            Ok(None) => {}
                            Err(f) => return Err(self.fault(f, w, lane, inst.line)),
                        }
                    }
                    w.pc += 1;
                    if waiting {
                        // The phase is not complete: let the warp's other lanes and the
                        // block's other warps arrive rather than spin out the time slice.
                        w.yielded = group;
                        w.dirty = true;
                        break;
                    }
                }
                Op::CpAsync {
                    dst,
                    src,
                    size,
                    src_size,
                } => {
                    let sz = *size as u64;
                    for lane in lanes(mask) {
                        let da = self.addr_of(w, dst, lane);
                        let sa = self.addr_of(w, src, lane);
                        let n = src_size
                            .as_ref()
                            .map_or(sz, |s| (self.val(w, s, lane) as u32 as u64).min(sz));
                        for (a, size) in [(da, *size as u32), (sa, *size as u32)] {
                            if a % sz != 0 {
                                return Err(self.fault(
                                    Fault::Misaligned { addr: a, size },
                                    w,
                                    lane,
                                    inst.line,
                                ));
                            }
                        }
                        for k in 0..sz {
                            let v = if k < n {
                                self.load(w, lane, Space::Generic, sa.wrapping_add(k), 1)
                                    .map_err(|f| self.fault(f, w, lane, inst.line))?
                            } else {
                                0
                            };
                            if let Err(f) =
                                self.store(w, lane, Space::Shared, da.wrapping_add(k), 1, v)
                            {
                                return Err(self.fault(f, w, lane, inst.line));
                            }
                        }
                    }
                    w.pc += 1;
                }
                Op::Bulk(b) => {
                    for lane in lanes(mask) {
                        self.bulk(w, lane, b, inst.line)?;
                    }
                    w.pc += 1;
                }
                Op::TensormapReplace {
                    field,
                    space,
                    addr,
                    ord,
                    a,
                } => {
                    for lane in lanes(mask) {
                        self.tensormap_replace(w, lane, *field, *space, addr, ord, a, inst.line)?;
                    }
                    w.pc += 1;
                }
                Op::Activemask { d } => {
                    for lane in lanes(mask) {
                        w.set(*d, lane, group as u64);
                    }
                    w.pc += 1;
                }
                Op::Elect { d, p } => {
                    if mask != 0 {
                        let leader = mask.trailing_zeros() as usize;
                        for lane in lanes(mask) {
                            w.set(*d, lane, leader as u64);
                            w.set(*p, lane, (lane == leader) as u64);
                        }
                    }
                    w.pc += 1;
                }
                Op::Fence => {
                    std::sync::atomic::fence(Ordering::SeqCst);
                    w.pc += 1;
                }
                Op::Nop => w.pc += 1,
                Op::Yield => {
                    std::thread::yield_now();
                    w.pc += 1;
                }
                Op::Tex(op) => {
                    self.exec_tex(w, mask, op, inst.line)?;
                    w.pc += 1;
                }
                Op::Wmma(op) => {
                    self.exec_wmma(w, mask, op, inst.line)?;
                    w.pc += 1;
                }
                Op::Mma(op) => {
                    self.exec_mma(w, mask, op, inst.line)?;
                    w.pc += 1;
                }
                Op::Surf(op) => {
                    self.exec_surf(w, mask, op, inst.line)?;
                    w.pc += 1;
                }
                Op::TexQuery {
                    surface,
                    what,
                    d,
                    handle,
                } => {
                    self.exec_tex_query(w, mask, (*surface, *what, *d, handle), inst.line)?;
                    w.pc += 1;
                }
            }
            budget -= 1;
            if budget == 0 {
                break;
            }
        }
        Ok(())
    }
}

/// `redux.sync`'s reduction of `vals`.
fn redux(op: ReduxOp, signed: bool, vals: impl Iterator<Item = u32>) -> u32 {
    match (op, signed) {
        (ReduxOp::Add, _) => vals.fold(0u32, |x, y| x.wrapping_add(y)),
        (ReduxOp::Min, false) => vals.min().unwrap_or(0),
        (ReduxOp::Max, false) => vals.max().unwrap_or(0),
        (ReduxOp::Min, true) => vals.map(|x| x as i32).min().unwrap_or(0) as u32,
        (ReduxOp::Max, true) => vals.map(|x| x as i32).max().unwrap_or(0) as u32,
        (ReduxOp::And, _) => vals.fold(u32::MAX, |x, y| x & y),
        (ReduxOp::Or, _) => vals.fold(0, |x, y| x | y),
        (ReduxOp::Xor, _) => vals.fold(0, |x, y| x ^ y),
    }
}

impl Ctx<'_> {
    /// The lanes each executing lane of a `.sync` warp operation works with: its membermask
    /// (`members`; all lanes without one) within the lanes executing (`mask`). Lanes of one
    /// converged warp may name different masks (`__match_any_sync` partitions, labeled
    /// cooperative groups): each lane then votes, matches or reduces within its own.
    fn member_groups(&self, w: &Warp, members: Option<&Src>, mask: u32) -> [u32; 32] {
        let mut g = [mask; 32];
        if let Some(m) = members {
            for lane in lanes(mask) {
                g[lane] = self.val(w, m, lane) as u32 & mask;
            }
        }
        g
    }
}
