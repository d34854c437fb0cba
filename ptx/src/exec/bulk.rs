// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Bulk copies (`cp.async.bulk`, `cp.async.bulk.tensor` in the tiled mode) and
//! `tensormap.replace`, one lane at a time. A copy is done when its instruction completes:
//! the bytes a load lands complete transactions on its mbarrier at once, so a phase waiting
//! for them completes as on a GPU once the copy and the arrivals are in.

use super::{access::Fault, ctx::Ctx, warp::Warp};
use crate::{
    access::window_addr,
    error::KernelError,
    ir::*,
    tensormap::{
        MAX_RANK, TENSOR_MAP_ALIGN, TENSOR_MAP_SIZE, TensorMap, TensorMapError, replace_slot,
        swizzle,
    },
};

impl<'a> Ctx<'a> {
    /// Reads and checks the tensor map at `at`.
    fn tensor_map(
        &mut self,
        w: &Warp,
        lane: usize,
        space: Space,
        at: u64,
        line: u32,
    ) -> Result<TensorMap, KernelError> {
        if !at.is_multiple_of(TENSOR_MAP_ALIGN) {
            return Err(self.fault(
                Fault::Misaligned {
                    addr: at,
                    size: TENSOR_MAP_SIZE as u32,
                },
                w,
                lane,
                line,
            ));
        }
        let mut b = [0u8; TENSOR_MAP_SIZE];
        for (k, c) in b.chunks_exact_mut(8).enumerate() {
            let v = self
                .load(w, lane, space, at.wrapping_add(8 * k as u64), 8)
                .map_err(|f| self.fault(f, w, lane, line))?;
            c.copy_from_slice(&v.to_le_bytes());
        }
        TensorMap::from_bytes(&b).map_err(|e| match e {
            TensorMapError::Unsupported(what) => KernelError::Unsupported {
                instruction: format!("cp.async.bulk.tensor with a tensor map using {what}"),
                loc: self.loc(w, lane, line),
            },
            TensorMapError::Invalid(why) => KernelError::InvalidTensorMap {
                addr: at,
                why,
                loc: self.loc(w, lane, line),
            },
        })
    }

    /// One lane's bulk copy.
    pub(super) fn bulk(
        &mut self,
        w: &mut Warp,
        lane: usize,
        op: &BulkOp,
        line: u32,
    ) -> Result<(), KernelError> {
        match op {
            BulkOp::Copy {
                dst,
                src,
                size,
                mbar,
            } => {
                let (ds, da) = (dst.0, self.addr_of(w, &dst.1, lane));
                let (ss, sa) = (src.0, self.addr_of(w, &src.1, lane));
                let n = self.val(w, size, lane) as u32 as u64;
                for a in [da, sa] {
                    if !a.is_multiple_of(16) {
                        let f = Fault::Misaligned { addr: a, size: 16 };
                        return Err(self.fault(f, w, lane, line));
                    }
                }
                if !n.is_multiple_of(16) {
                    let f = Fault::Misaligned { addr: n, size: 16 };
                    return Err(self.fault(f, w, lane, line));
                }
                // Shared memory bounds the copy (every direction has a shared side).
                if n > self.shared.len() as u64 {
                    let f = Fault::Illegal {
                        addr: if ds == Space::Shared { da } else { sa },
                        size: 16,
                        write: ds == Space::Shared,
                    };
                    return Err(self.fault(f, w, lane, line));
                }
                for k in (0..n).step_by(8) {
                    let v = self
                        .load(w, lane, ss, sa.wrapping_add(k), 8)
                        .map_err(|f| self.fault(f, w, lane, line))?;
                    self.store(w, lane, ds, da.wrapping_add(k), 8, v)
                        .map_err(|f| self.fault(f, w, lane, line))?;
                }
                if let Some(m) = mbar {
                    let at = self.addr_of(w, m, lane);
                    self.mbarrier(w, lane, MbarOp::CompleteTx, Space::Shared, at, n)
                        .map_err(|f| self.fault(f, w, lane, line))?;
                }
                Ok(())
            }
            BulkOp::TensorLoad {
                smem,
                map,
                coords,
                mbar,
            } => {
                let bytes = self.tensor_box(w, lane, map, coords, smem, true, line)?;
                let at = self.addr_of(w, mbar, lane);
                self.mbarrier(w, lane, MbarOp::CompleteTx, Space::Shared, at, bytes)
                    .map_err(|f| self.fault(f, w, lane, line))?;
                Ok(())
            }
            BulkOp::TensorStore { map, coords, smem } => self
                .tensor_box(w, lane, map, coords, smem, false, line)
                .map(drop),
        }
    }

    /// Copies the box at `coords` of the tensor `map` describes between global memory and
    /// the shared memory at `smem` (`load`: into shared memory, out-of-bounds elements
    /// filled; otherwise out, out-of-bounds elements skipped). Returns the box's bytes.
    #[allow(clippy::too_many_arguments)]
    fn tensor_box(
        &mut self,
        w: &mut Warp,
        lane: usize,
        map: &(Space, Addr),
        coords: &[Src],
        smem: &Addr,
        load: bool,
        line: u32,
    ) -> Result<u64, KernelError> {
        let at = self.addr_of(w, &map.1, lane);
        let m = self.tensor_map(w, lane, map.0, at, line)?;
        if coords.len() != m.rank as usize {
            return Err(KernelError::InvalidTensorMap {
                addr: at,
                why: "rank differs from the instruction's dimensions",
                loc: self.loc(w, lane, line),
            });
        }
        let base = window_addr(Space::Shared, self.addr_of(w, smem, lane));
        if !base.is_multiple_of(16) {
            let f = Fault::Misaligned {
                addr: base,
                size: 16,
            };
            return Err(self.fault(f, w, lane, line));
        }
        let (n, bytes) = m.box_extent();
        if base.saturating_add(bytes) > self.shared.len() as u64 {
            let f = Fault::Illegal {
                addr: base,
                size: bytes.min(u64::from(u32::MAX)) as u32,
                write: load,
            };
            return Err(self.fault(f, w, lane, line));
        }
        let mut start = [0i64; MAX_RANK];
        for (i, c) in coords.iter().enumerate() {
            start[i] = i64::from(self.val(w, c, lane) as u32 as i32);
        }
        let esize = m.elem.size();
        let fill = if m.nan_fill {
            m.elem.nan().unwrap_or(0)
        } else {
            0
        };
        let total = bytes / u64::from(esize);
        let mut idx = [0u64; MAX_RANK];
        for linear in 0..total {
            // The element's global coordinates and whether they lie inside the tensor.
            let mut inside = true;
            let mut ga = m.address;
            for i in 0..m.rank as usize {
                let g = start[i] + (idx[i] * m.traversal_stride(i)) as i64;
                if g < 0 || g as u64 >= m.global_dim[i] {
                    inside = false;
                    break;
                }
                ga = ga.wrapping_add((g as u64).wrapping_mul(m.global_stride[i]));
            }
            let sa = swizzle(m.swizzle, base + linear * u64::from(esize));
            if load {
                let v = if inside {
                    self.load(w, lane, Space::Global, ga, esize)
                        .map_err(|f| self.fault(f, w, lane, line))?
                } else {
                    fill
                };
                self.store(w, lane, Space::Shared, sa, esize, v)
                    .map_err(|f| self.fault(f, w, lane, line))?;
            } else if inside {
                let v = self
                    .load(w, lane, Space::Shared, sa, esize)
                    .map_err(|f| self.fault(f, w, lane, line))?;
                self.store(w, lane, Space::Global, ga, esize, v)
                    .map_err(|f| self.fault(f, w, lane, line))?;
            }
            // Next box index, innermost dimension first.
            for i in 0..MAX_RANK {
                idx[i] += 1;
                if idx[i] < n[i] {
                    break;
                }
                idx[i] = 0;
            }
        }
        Ok(bytes)
    }

    /// One lane's `tensormap.replace`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tensormap_replace(
        &mut self,
        w: &mut Warp,
        lane: usize,
        field: crate::tensormap::Field,
        space: Space,
        addr: &Addr,
        ord: &Src,
        a: &Src,
        line: u32,
    ) -> Result<(), KernelError> {
        let at = self.addr_of(w, addr, lane);
        let at = window_addr(space, at);
        if !at.is_multiple_of(TENSOR_MAP_ALIGN) {
            let f = Fault::Misaligned {
                addr: at,
                size: TENSOR_MAP_SIZE as u32,
            };
            return Err(self.fault(f, w, lane, line));
        }
        let ord = self.val(w, ord, lane);
        let v = self.val(w, a, lane);
        let Some((off, size, v)) = replace_slot(field, ord, v) else {
            return Err(KernelError::Unsupported {
                instruction: format!("tensormap.replace with ordinal {ord}"),
                loc: self.loc(w, lane, line),
            });
        };
        self.store(w, lane, space, at.wrapping_add(off), size, v)
            .map_err(|f| self.fault(f, w, lane, line))
    }
}
