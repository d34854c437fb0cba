// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `mma.sync`, `ldmatrix`, `stmatrix` and `movmatrix`, interpreted, in the fragment layouts
//! of the PTX ISA (9.7.14.5).
//!
//! With `g` a lane's group (`laneid >> 2`), `t` its place in the group (`laneid % 4`) and
//! `e` the elements a register holds (one 32-bit or 64-bit element, two 16-bit, four 8-bit,
//! eight 4-bit or thirty-two single bits; low bits first), element `i` of a lane's fragment
//! lives in register `r = i / e` and is:
//! - of A (M x K): row `g + 8 (r mod M/8)`, column `(r div M/8) 4e + t e + i mod e`;
//! - of B (K x N): row `4e r + t e + i mod e`, column `g`;
//! - of C and D (M x N): row `g + 8 (i div 2)`, column `2t + i mod 2`.
//!
//! The m8n8k4 `.f16` shape (Volta's) differs: each quad pair (lanes `4p..4p+3` with
//! `4p+16..4p+19`) computes a product of its own ([`quad_pair`]).
//!
//! `mma` gathers the three matrices from the warp, computes `D = A B + C` exactly (floats in
//! `f64`, rounded once to the destination type; integers in `i64`, wrapping to 32 bits or
//! clamped with `.satfinite`; `.b1` counts the set bits of `a AND b` or `a XOR b`), and
//! scatters D back. `ldmatrix` gives lane `l`, for matrix `j`, row `l / 4`'s elements
//! `2 (l mod 4)` and `2 (l mod 4) + 1` (the low half first), rows read from the addresses
//! lanes `8j..8j+7` give; `.trans` gives the transposed matrix's.

use super::{
    access::Fault,
    ctx::Ctx,
    warp::{Warp, lanes},
    wmma::{float, float_bits, int, slot_get, slot_put},
};
use crate::{
    access::classify,
    error::KernelError,
    ir::{MmaOp, Space, Src, WmmaFrag, WmmaTy},
};

/// Rows and columns of a part's matrix.
fn dims([m, n, k]: [u32; 3], part: WmmaFrag) -> (u32, u32) {
    match part {
        WmmaFrag::A => (m, k),
        WmmaFrag::B => (k, n),
        WmmaFrag::C => (m, n),
    }
}

/// How a warp's fragments hold a product's matrices.
#[derive(Clone, Copy)]
struct Layout {
    shape: [u32; 3],
    /// m8n8k4 `.f16`: four products, one per quad pair.
    quads: bool,
    a_col: bool,
    b_row: bool,
}

impl Layout {
    /// Products the warp computes at once.
    fn count(&self) -> u32 {
        if self.quads { 4 } else { 1 }
    }

    /// Elements of a part each lane holds.
    fn per_lane(&self, part: WmmaFrag) -> u32 {
        let (r, c) = dims(self.shape, part);
        r * c * self.count() / 32
    }

    /// Product, row and column of element `i` of lane `lane`'s fragment of `part`, whose
    /// registers hold `e` elements each.
    fn position(&self, part: WmmaFrag, e: u32, lane: u32, i: u32) -> (u32, u32, u32) {
        if self.quads {
            return quad_pair(self, (part, e), lane, i);
        }
        let (g, t) = (lane >> 2, lane & 3);
        let r = i / e;
        let (row, col) = match part {
            WmmaFrag::A => {
                let halves = self.shape[0] / 8;
                (g + 8 * (r % halves), (r / halves) * 4 * e + t * e + i % e)
            }
            WmmaFrag::B => (4 * e * r + t * e + i % e, g),
            WmmaFrag::C => (g + 8 * (i / 2), 2 * t + i % 2),
        };
        (0, row, col)
    }
}

/// The m8n8k4 `.f16` layouts: quad pair `p` holds lanes `4p..4p+3` ("low") and
/// `4p+16..4p+19` ("high"); `t` is a lane's place in its quad. Each lane holds four
/// elements of A and of B and eight of C and D:
/// - A row-major: row `t` (low) or `t + 4` (high), column `i`; column-major: row `i` (low)
///   or `i + 4` (high), column `t`.
/// - B column-major: row `i`, column `t` (low) or `t + 4` (high); row-major: row `t`, column
///   `i` (low) or `i + 4` (high).
/// - C and D of `.f16`: row `t` (low) or `t + 4` (high), column `i`; of `.f32`: row
///   `(lane & 1) + (i & 2)` (plus 4 if high), column `(i & 4) + (lane & 2) + (i & 1)`.
fn quad_pair(l: &Layout, (part, e): (WmmaFrag, u32), lane: u32, i: u32) -> (u32, u32, u32) {
    let (p, t, high) = ((lane >> 2) & 3, lane & 3, lane >= 16);
    let h = if high { 4 } else { 0 };
    let (row, col) = match part {
        WmmaFrag::A if l.a_col => (i + h, t),
        WmmaFrag::A => (t + h, i),
        WmmaFrag::B if l.b_row => (t, i + h),
        WmmaFrag::B => (i, t + h),
        WmmaFrag::C if e == 1 => ((lane & 1) + (i & 2) + h, (i & 4) + (lane & 2) + (i & 1)),
        WmmaFrag::C => (t + h, i),
    };
    (p, row, col)
}

/// 16-bit element `c` of an 8-element row.
fn half(row: u128, c: u32) -> u64 {
    ((row >> (16 * c)) & 0xffff) as u64
}

impl Ctx<'_> {
    /// Each lane's fragment of `part`, as the warp's matrices (row-major, one after another).
    fn collect(
        &self,
        w: &Warp,
        mask: u32,
        l: &Layout,
        (part, ety): (WmmaFrag, WmmaTy),
        srcs: &[Src],
    ) -> Vec<u64> {
        let (rows, cols) = dims(l.shape, part);
        let mut out = vec![0u64; (rows * cols * l.count()) as usize];
        for lane in lanes(mask) {
            let regs: Vec<u64> = srcs.iter().map(|s| self.val(w, s, lane)).collect();
            for i in 0..l.per_lane(part) {
                let (q, r, c) = l.position(part, ety.per_reg(), lane as u32, i);
                if let Some(slot) = out.get_mut(((q * rows + r) * cols + c) as usize) {
                    *slot = slot_get(&regs, ety, i as usize);
                }
            }
        }
        out
    }

    /// Runs `mma.sync`.
    fn mma(&self, w: &mut Warp, mask: u32, op: &MmaOp) {
        let MmaOp::Mma {
            shape,
            tys,
            a_col,
            b_row,
            satfinite,
            bit_and,
            d,
            a,
            b,
            c,
        } = op
        else {
            return;
        };
        let [dty, aty, bty, cty] = *tys;
        let l = Layout {
            shape: *shape,
            quads: *shape == [8, 8, 4] && aty == WmmaTy::F16,
            a_col: *a_col,
            b_row: *b_row,
        };
        let am = self.collect(w, mask, &l, (WmmaFrag::A, aty), a);
        let bm = self.collect(w, mask, &l, (WmmaFrag::B, bty), b);
        let cm = self.collect(w, mask, &l, (WmmaFrag::C, cty), c);
        let [m, n, k] = shape.map(|x| x as usize);
        let mut dm = vec![0u64; cm.len()];
        for q in 0..l.count() as usize {
            let (a0, b0, c0) = (q * m * k, q * k * n, q * m * n);
            for i in 0..m {
                for j in 0..n {
                    let (ai, bj) = (|x: usize| am[a0 + i * k + x], |x: usize| bm[b0 + x * n + j]);
                    let cv = cm[c0 + i * n + j];
                    dm[c0 + i * n + j] = if dty == WmmaTy::S32 {
                        let s = (0..k).fold(int(cty, cv), |acc, x| {
                            let p = if aty == WmmaTy::B1 {
                                let (x, y) = (ai(x) & 1, bj(x) & 1);
                                (if *bit_and { x & y } else { x ^ y }) as i64
                            } else {
                                int(aty, ai(x)).wrapping_mul(int(bty, bj(x)))
                            };
                            acc.wrapping_add(p)
                        });
                        let s = if *satfinite {
                            s.clamp(i64::from(i32::MIN), i64::from(i32::MAX))
                        } else {
                            s
                        };
                        u64::from(s as i32 as u32)
                    } else if dty == WmmaTy::F64 {
                        // As a chain of double fused multiply-adds, rounded to nearest.
                        let s = (0..k).fold(float(cty, cv), |acc, x| {
                            float(aty, ai(x)).mul_add(float(bty, bj(x)), acc)
                        });
                        s.to_bits()
                    } else {
                        // Narrower products are exact in a double; the sum is rounded once.
                        let s = (0..k).fold(float(cty, cv), |acc, x| {
                            acc + float(aty, ai(x)) * float(bty, bj(x))
                        });
                        float_bits(dty, s, false)
                    };
                }
            }
        }
        let cols = n as u32;
        for lane in lanes(mask) {
            let mut regs = vec![0u64; d.len()];
            for i in 0..l.per_lane(WmmaFrag::C) {
                let (q, r, c) = l.position(WmmaFrag::C, dty.per_reg(), lane as u32, i);
                let v = dm[((q * shape[0] + r) * cols + c) as usize];
                slot_put(&mut regs, dty, i as usize, v);
            }
            for (r, v) in d.iter().zip(regs) {
                w.set(*r, lane, v);
            }
        }
    }

    /// The address lane `lane` gives for a matrix row, checked to be 16-byte aligned and,
    /// when generic, to fall in shared memory (the only space these instructions reach).
    fn row_addr(&self, w: &Warp, lane: usize, op: &MmaOp) -> Result<u64, Fault> {
        let (space, addr, write) = match op {
            MmaOp::Ldmatrix { space, addr, .. } => (*space, addr, false),
            MmaOp::Stmatrix { space, addr, .. } => (*space, addr, true),
            _ => return Ok(0),
        };
        let a = self.val(w, &addr.base, lane).wrapping_add(addr.off as u64);
        if !a.is_multiple_of(16) {
            return Err(Fault::Misaligned { addr: a, size: 16 });
        }
        if space == Space::Generic && classify(a).0 != Space::Shared {
            return Err(Fault::Illegal {
                addr: a,
                size: 16,
                write,
            });
        }
        Ok(a)
    }

    pub(super) fn exec_mma(
        &mut self,
        w: &mut Warp,
        mask: u32,
        op: &MmaOp,
        line: u32,
    ) -> Result<(), KernelError> {
        match op {
            MmaOp::Mma { .. } => self.mma(w, mask, op),
            MmaOp::Ldmatrix {
                trans, space, d, ..
            } => {
                // Row `8j + r` of the matrices, eight 16-bit elements, low first; a lane that
                // is not running gives no row (it reads as zeros).
                let mut rows = vec![0u128; d.len() * 8];
                for (lane, row) in rows.iter_mut().enumerate() {
                    if mask & (1 << lane) == 0 {
                        continue;
                    }
                    let mut word = |o: u64| {
                        let a = self.row_addr(w, lane, op)?;
                        self.load(w, lane, *space, a + o, 8)
                    };
                    let (lo, hi) = (word(0), word(8));
                    let f = |f| self.fault(f, w, lane, line);
                    *row = u128::from(lo.map_err(f)?) | u128::from(hi.map_err(f)?) << 64;
                }
                for lane in lanes(mask) {
                    let (r, c) = (lane / 4, 2 * (lane % 4) as u32);
                    for (j, reg) in d.iter().enumerate() {
                        let m = &rows[j * 8..j * 8 + 8];
                        let (x, y) = if *trans {
                            (
                                half(m[c as usize], r as u32),
                                half(m[c as usize + 1], r as u32),
                            )
                        } else {
                            (half(m[r], c), half(m[r], c + 1))
                        };
                        w.set(*reg, lane, x | y << 16);
                    }
                }
            }
            MmaOp::Stmatrix {
                trans, space, v, ..
            } => {
                let mut rows = vec![0u128; v.len() * 8];
                for lane in lanes(mask) {
                    let (r, c) = (lane / 4, 2 * (lane % 4));
                    for (j, s) in v.iter().enumerate() {
                        let x = self.val(w, s, lane) as u32;
                        for h in 0..2 {
                            let e = u128::from((x >> (16 * h)) & 0xffff);
                            let (row, col) = if *trans { (c + h, r) } else { (r, c + h) };
                            rows[j * 8 + row] |= e << (16 * col);
                        }
                    }
                }
                // A lane that is not running stores no row.
                for (lane, row) in rows.iter().enumerate() {
                    if mask & (1 << lane) == 0 {
                        continue;
                    }
                    let a = self
                        .row_addr(w, lane, op)
                        .map_err(|f| self.fault(f, w, lane, line))?;
                    for (o, part) in [(0, *row as u64), (8, (*row >> 64) as u64)] {
                        self.store(w, lane, *space, a + o, 8, part)
                            .map_err(|f| self.fault(f, w, lane, line))?;
                    }
                }
            }
            MmaOp::Movmatrix { d, a } => {
                // Lane `l` holds row `l / 4`, columns `2 (l mod 4)` and the next; the result
                // holds the transpose's, i.e. column `l / 4` of rows `2 (l mod 4)` and the next.
                let vals: Vec<u64> = (0..32).map(|l| self.val(w, a, l) & 0xffff_ffff).collect();
                let at =
                    |row: usize, col: usize| (vals[row * 4 + col / 2] >> (16 * (col % 2))) & 0xffff;
                for lane in lanes(mask) {
                    let (r, c) = (lane / 4, 2 * (lane % 4));
                    w.set(*d, lane, at(c, r) | at(c + 1, r) << 16);
                }
            }
        }
        Ok(())
    }
}
