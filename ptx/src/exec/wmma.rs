// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Warp matrix multiply-accumulate (`wmma.load`, `wmma.store`, `wmma.mma`), interpreted.
//!
//! A fragment holds its matrix in row-major order spread over the warp's lanes (see
//! [`WmmaOp`]): lane `l` has elements `l * E/32 .. (l + 1) * E/32`, packed into its registers
//! in order (two 16-bit or four 8-bit elements to a 32-bit register, low bits first), and
//! registers past those repeat them, so element-wise code on fragments (`frag.x[i] *= s`)
//! sees every element the same number of times. Loads and stores read and write each lane's
//! elements through the memory spaces as `ld`/`st` do; `mma` gathers the three matrices
//! from the whole warp, computes `D = A B + C` exactly in `f64` (floats; `i64` for
//! integers), then rounds once to the destination type (`.tf32` inputs are truncated to
//! their 10-bit mantissa first; `.satfinite` clamps integers to `s32` and infinities to
//! the largest finite value).

use super::{
    ctx::Ctx,
    warp::{Warp, lanes},
};
use crate::{
    alu::f8_value,
    error::KernelError,
    float::{Rnd, f16_to_f32, f64_to_small},
    ir::{Src, WmmaFrag, WmmaMem, WmmaOp, WmmaTy},
    module::wmma_elements,
};

/// Rows and columns of a fragment's matrix.
fn dims([m, n, k]: [u32; 3], frag: WmmaFrag) -> (u64, u64) {
    let (r, c) = match frag {
        WmmaFrag::A => (m, k),
        WmmaFrag::B => (k, n),
        WmmaFrag::C => (m, n),
    };
    (u64::from(r), u64::from(c))
}

/// Element `s` of a lane's fragment registers, as raw bits.
pub(super) fn slot_get(regs: &[u64], ety: WmmaTy, s: usize) -> u64 {
    let per = ety.per_reg() as usize;
    if per == 1 {
        let v = regs.get(s).copied().unwrap_or(0);
        return if ety == WmmaTy::F64 {
            v
        } else {
            v & 0xffff_ffff
        };
    }
    let bits = 32 / per;
    (regs.get(s / per).copied().unwrap_or(0) >> ((s % per) * bits)) & ((1 << bits) - 1)
}

pub(super) fn slot_put(regs: &mut [u64], ety: WmmaTy, s: usize, raw: u64) {
    let per = ety.per_reg() as usize;
    let Some(r) = regs.get_mut(s / per) else {
        return;
    };
    if per == 1 {
        *r = raw;
        return;
    }
    let bits = 32 / per;
    let sh = (s % per) * bits;
    let m = ((1u64 << bits) - 1) << sh;
    *r = (*r & !m) | ((raw << sh) & m);
}

/// Puts element `s` and its repeats (every `per_lane` slots up to the registers' room).
fn slot_fill(regs: &mut [u64], ety: WmmaTy, s: usize, per_lane: usize, raw: u64) {
    let room = regs.len() * ety.per_reg() as usize;
    let mut t = s;
    while t < room {
        slot_put(regs, ety, t, raw);
        t += per_lane.max(1);
    }
}

/// A float element's value.
pub(super) fn float(ety: WmmaTy, raw: u64) -> f64 {
    match ety {
        WmmaTy::F16 => f64::from(f16_to_f32(raw as u16)),
        WmmaTy::Bf16 => f64::from(f32::from_bits((raw as u32) << 16)),
        // The tensor cores read a tf32's sign, exponent and top 10 mantissa bits.
        WmmaTy::Tf32 => f64::from(f32::from_bits(raw as u32 & 0xffff_e000)),
        WmmaTy::F64 => f64::from_bits(raw),
        WmmaTy::E4m3 => f8_value(raw as u8, false),
        WmmaTy::E5m2 => f8_value(raw as u8, true),
        _ => f64::from(f32::from_bits(raw as u32)),
    }
}

/// An integer element's value.
pub(super) fn int(ety: WmmaTy, raw: u64) -> i64 {
    match ety {
        WmmaTy::S8 => i64::from(raw as u8 as i8),
        WmmaTy::U8 => i64::from(raw as u8),
        WmmaTy::S4 => i64::from(((raw as u8) << 4) as i8 >> 4),
        WmmaTy::U4 => i64::from(raw as u8 & 0xf),
        WmmaTy::B1 => i64::from(raw as u8 & 1),
        _ => i64::from(raw as u32 as i32),
    }
}

/// A float result as `ety`'s raw bits.
pub(super) fn float_bits(ety: WmmaTy, v: f64, satfinite: bool) -> u64 {
    match ety {
        WmmaTy::F64 => v.to_bits(),
        WmmaTy::F16 => {
            // Straight from the double: one rounding.
            let h = f64_to_small(v, Rnd::Rn, 5, 10);
            // An infinity (overflowing or not) becomes the largest finite half.
            let h = if satfinite && h & 0x7fff == 0x7c00 {
                h - 1
            } else {
                h
            };
            u64::from(h)
        }
        _ => {
            let f = v as f32;
            let f = if satfinite && f.is_infinite() {
                f32::MAX.copysign(f)
            } else {
                f
            };
            u64::from(f.to_bits())
        }
    }
}

impl Ctx<'_> {
    /// The addresses of lane `lane`'s elements of the fragment `mem` names, in slot order.
    fn element_addrs(
        &self,
        w: &Warp,
        lane: usize,
        mem: &WmmaMem,
    ) -> impl Iterator<Item = u64> + use<> {
        let (rows, cols) = dims(mem.shape, mem.frag);
        let per_lane = (wmma_elements(mem.shape, mem.frag) / 32) as usize;
        // The leading dimension in elements the lane gives, or the matrix's own.
        let natural = if mem.col { rows } else { cols };
        let ld = mem
            .stride
            .as_ref()
            .map_or(natural, |s| u64::from(self.val(w, s, lane) as u32));
        let base = self
            .val(w, &mem.addr.base, lane)
            .wrapping_add(mem.addr.off as u64);
        let (col, bytes) = (mem.col, u64::from(mem.ety.bytes()));
        (0..per_lane).map(move |s| {
            let idx = (lane * per_lane + s) as u64;
            let (r, c) = (idx / cols, idx % cols);
            let off = if col { c * ld + r } else { r * ld + c };
            base.wrapping_add(off.wrapping_mul(bytes))
        })
    }

    /// Each lane's fragment registers, as the whole warp's matrix (row-major).
    fn gather(&self, w: &Warp, mask: u32, srcs: &[Src], n: usize, ety: WmmaTy) -> Vec<u64> {
        let per_lane = n / 32;
        let mut out = vec![0u64; n];
        for lane in lanes(mask) {
            let regs: Vec<u64> = srcs.iter().map(|s| self.val(w, s, lane)).collect();
            for s in 0..per_lane {
                out[lane * per_lane + s] = slot_get(&regs, ety, s);
            }
        }
        out
    }

    pub(super) fn exec_wmma(
        &mut self,
        w: &mut Warp,
        mask: u32,
        op: &WmmaOp,
        line: u32,
    ) -> Result<(), KernelError> {
        match op {
            WmmaOp::Load { mem, d } => {
                let per_lane = (wmma_elements(mem.shape, mem.frag) / 32) as usize;
                for lane in lanes(mask) {
                    let mut regs = vec![0u64; d.len()];
                    for (s, a) in self.element_addrs(w, lane, mem).enumerate() {
                        let raw = self
                            .load(w, lane, mem.space, a, mem.ety.bytes())
                            .map_err(|f| self.fault(f, w, lane, line))?;
                        slot_fill(&mut regs, mem.ety, s, per_lane, raw);
                    }
                    for (r, v) in d.iter().zip(regs) {
                        w.set(*r, lane, v);
                    }
                }
            }
            WmmaOp::Store { mem, v } => {
                for lane in lanes(mask) {
                    let regs: Vec<u64> = v.iter().map(|s| self.val(w, s, lane)).collect();
                    for (s, a) in self.element_addrs(w, lane, mem).enumerate() {
                        let raw = slot_get(&regs, mem.ety, s);
                        self.store(w, lane, mem.space, a, mem.ety.bytes(), raw)
                            .map_err(|f| self.fault(f, w, lane, line))?;
                    }
                }
            }
            WmmaOp::Mma {
                shape,
                tys,
                satfinite,
                d,
                a,
                b,
                c,
            } => {
                let [m, n, k] = shape.map(|x| x as usize);
                let [dty, aty, bty, cty] = *tys;
                let am = self.gather(w, mask, a, m * k, aty);
                let bm = self.gather(w, mask, b, k * n, bty);
                let cm = self.gather(w, mask, c, m * n, cty);
                let mut dm = vec![0u64; m * n];
                let integer = matches!(dty, WmmaTy::S32);
                for i in 0..m {
                    for j in 0..n {
                        dm[i * n + j] = if integer {
                            let s = (0..k).fold(int(cty, cm[i * n + j]), |acc, x| {
                                acc.wrapping_add(
                                    int(aty, am[i * k + x]).wrapping_mul(int(bty, bm[x * n + j])),
                                )
                            });
                            let s = if *satfinite {
                                s.clamp(i64::from(i32::MIN), i64::from(i32::MAX))
                            } else {
                                s
                            };
                            u64::from(s as i32 as u32)
                        } else {
                            let s = (0..k).fold(float(cty, cm[i * n + j]), |acc, x| {
                                acc + float(aty, am[i * k + x]) * float(bty, bm[x * n + j])
                            });
                            float_bits(dty, s, *satfinite)
                        };
                    }
                }
                let per_lane = m * n / 32;
                for lane in lanes(mask) {
                    let mut regs = vec![0u64; d.len()];
                    for s in 0..per_lane {
                        slot_fill(&mut regs, dty, s, per_lane, dm[lane * per_lane + s]);
                    }
                    for (r, v) in d.iter().zip(regs) {
                        w.set(*r, lane, v);
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragment_slots_pack_and_repeat() {
        let mut regs = vec![0u64; 4];
        for s in 0..4 {
            slot_fill(&mut regs, WmmaTy::F16, s, 4, 0x100 + s as u64);
        }
        // Two halves to a register, then the four repeated in registers 2 and 3.
        assert_eq!(regs, [0x0101_0100, 0x0103_0102, 0x0101_0100, 0x0103_0102]);
        assert_eq!(slot_get(&regs, WmmaTy::F16, 3), 0x103);
        let mut b = vec![0u64; 2];
        for s in 0..8 {
            slot_put(&mut b, WmmaTy::S8, s, s as u64 + 1);
        }
        assert_eq!(b, [0x0403_0201, 0x0807_0605]);
        assert_eq!(int(WmmaTy::S8, 0xff), -1);
        assert_eq!(float(WmmaTy::Tf32, 0x3f80_1fff), 1.0);
        assert_eq!(float_bits(WmmaTy::F16, 1e9, true), 0x7bff);
        // Rounded once, from the double: just above the halfway point between 1 and the
        // next half rounds up (through a float it would tie to even, down to 1).
        let v = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(float_bits(WmmaTy::F16, v, false), 0x3c01);
    }
}
