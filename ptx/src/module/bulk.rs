// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Decoding of the bulk copies and tensor maps of sm_90: `cp.async.bulk` between global and
//! shared memory, `cp.async.bulk.tensor` in the tiled mode (loads completing on an mbarrier,
//! stores in bulk groups), their prefetches (nothing to do here) and `tensormap.replace`.
//! The executor runs one CTA per cluster, so `.shared::cluster` is the CTA's own shared
//! memory; multicast, im2col, gather/scatter and the reductions decode as unsupported
//! instructions (they fail the launch when executed).

use super::{
    decode::space_of,
    lower::{DResult, Lower, unsup},
    scope::FnState,
};
use crate::{ast::Operand, ir::*, tensormap::Field, types::Ty};

fn has(mods: &[&str], w: &str) -> bool {
    mods.contains(&w)
}

/// The state spaces a modifier list names, in order (destination first).
fn spaces(mods: &[&str]) -> Vec<Space> {
    mods.iter()
        .filter_map(|m| space_of(std::slice::from_ref(m)))
        .collect()
}

/// A tensor operand: the map's address (and its space) and the box's coordinates.
type TensorOperand = ((Space, Addr), Box<[Src]>);

fn arg<'b, 'a>(args: &'b [Operand<'a>], k: usize) -> DResult<&'b Operand<'a>> {
    match args.get(k) {
        Some(o) => Ok(o),
        None => unsup(format!("missing operand {}", k + 1)),
    }
}

impl<'a> Lower<'a> {
    /// `cp.async.bulk*` (`mods` after `async`, `bulk`).
    pub(super) fn bulk(
        &mut self,
        st: &mut FnState<'a>,
        mods: &[&str],
        args: &[Operand<'a>],
    ) -> DResult<Op> {
        if has(mods, "commit_group") || has(mods, "wait_group") || has(mods, "prefetch") {
            // Copies are done when their instruction completes; a prefetch is a hint.
            return Ok(Op::Nop);
        }
        if mods.iter().any(|m| m.starts_with("multicast")) {
            return unsup("multicast bulk copy");
        }
        if mods
            .iter()
            .any(|m| m.starts_with("cp_mask") || m.starts_with("cta_group"))
        {
            return unsup("bulk copy form");
        }
        let sp = spaces(mods);
        let [dst, src] = sp.as_slice() else {
            return unsup("bulk copy spaces");
        };
        let to_shared = *dst == Space::Shared;
        let completes = mods.iter().any(|m| m.starts_with("mbarrier::complete_tx"));
        if has(mods, "tensor") {
            if mods
                .iter()
                .any(|m| m.starts_with("im2col") || m.starts_with("tile::"))
            {
                return unsup("bulk tensor copy mode other than tile");
            }
            let dims = match mods.iter().find_map(|m| m.strip_suffix('d')) {
                Some(d) => d.parse::<usize>().ok().filter(|d| (1..=5).contains(d)),
                None => None,
            };
            let Some(dims) = dims else {
                return unsup("bulk tensor dimensions");
            };
            return match (*dst, *src) {
                (Space::Shared, Space::Global) if completes => {
                    let (_, smem) = self.addr(st, arg(args, 0)?, Space::Shared)?;
                    let (map, coords) = self.tensor_operand(st, arg(args, 1)?, dims)?;
                    let (_, mbar) = self.addr(st, arg(args, 2)?, Space::Shared)?;
                    Ok(Op::Bulk(Box::new(BulkOp::TensorLoad {
                        smem,
                        map,
                        coords,
                        mbar,
                    })))
                }
                (Space::Global, Space::Shared) => {
                    let (map, coords) = self.tensor_operand(st, arg(args, 0)?, dims)?;
                    let (_, smem) = self.addr(st, arg(args, 1)?, Space::Shared)?;
                    Ok(Op::Bulk(Box::new(BulkOp::TensorStore {
                        map,
                        coords,
                        smem,
                    })))
                }
                _ => unsup("bulk tensor copy direction"),
            };
        }
        if !matches!(
            (*dst, *src),
            (Space::Shared, Space::Global)
                | (Space::Global, Space::Shared)
                | (Space::Shared, Space::Shared)
        ) || (to_shared != completes)
        {
            return unsup("bulk copy direction");
        }
        let d = self.addr(st, arg(args, 0)?, *dst)?;
        let s = self.addr(st, arg(args, 1)?, *src)?;
        let size = self.src(st, arg(args, 2)?, Ty::U32)?;
        let mbar = if completes {
            Some(self.addr(st, arg(args, 3)?, Space::Shared)?.1)
        } else {
            None
        };
        Ok(Op::Bulk(Box::new(BulkOp::Copy {
            dst: d,
            src: s,
            size,
            mbar,
        })))
    }

    /// `[map, {c0, ...}]`: the tensor map's address and `dims` signed coordinates.
    fn tensor_operand(
        &mut self,
        st: &mut FnState<'a>,
        o: &Operand<'a>,
        dims: usize,
    ) -> DResult<TensorOperand> {
        let Operand::Bracket(list) = o else {
            return unsup("bulk tensor operand form");
        };
        let [m, c] = list.as_slice() else {
            return unsup("bulk tensor operand form");
        };
        let map = self.addr(st, &Operand::Addr(Box::new(m.clone())), Space::Generic)?;
        let cs: Vec<&Operand<'a>> = match c {
            Operand::Vec(v) => v.iter().collect(),
            o => vec![o],
        };
        if cs.len() != dims {
            return unsup("bulk tensor coordinate count");
        }
        let mut coords = Vec::with_capacity(dims);
        for c in cs {
            coords.push(self.src(st, c, Ty::S32)?);
        }
        Ok((map, coords.into_boxed_slice()))
    }

    /// `tensormap.replace.tile.<field>.<space>.b1024.<type> [addr], {ord,} new_val`.
    pub(super) fn tensormap(
        &mut self,
        st: &mut FnState<'a>,
        mods: &[&str],
        args: &[Operand<'a>],
    ) -> DResult<Op> {
        if mods.first() == Some(&"cp_fenceproxy") {
            // `tensormap.cp_fenceproxy.global.shared::cta...`: 128 bytes from shared to
            // global memory, then a fence (every access here is in one proxy).
            let d = self.addr(st, arg(args, 0)?, Space::Global)?;
            let s = self.addr(st, arg(args, 1)?, Space::Shared)?;
            let size = self.src(st, arg(args, 2)?, Ty::U32)?;
            return Ok(Op::Bulk(Box::new(BulkOp::Copy {
                dst: d,
                src: s,
                size,
                mbar: None,
            })));
        }
        if mods.first() != Some(&"replace") || !has(mods, "tile") {
            return unsup("tensormap operation");
        }
        let Some(field) = mods.iter().find_map(|m| Field::parse(m)) else {
            return unsup("tensormap field");
        };
        let space = space_of(mods).unwrap_or(Space::Generic);
        if !matches!(space, Space::Global | Space::Shared | Space::Generic) {
            return unsup("tensormap space");
        }
        let ty = if has(mods, "b64") { Ty::B64 } else { Ty::B32 };
        let (space, addr) = self.addr(st, arg(args, 0)?, space)?;
        let (ord, a) = if field.ordinal() {
            (
                self.src(st, arg(args, 1)?, Ty::U32)?,
                self.src(st, arg(args, 2)?, ty)?,
            )
        } else {
            (Src::Imm(0), self.src(st, arg(args, 1)?, ty)?)
        };
        Ok(Op::TensormapReplace {
            field,
            space,
            addr,
            ord,
            a,
        })
    }
}
