// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Decoding of the texture and surface instructions: `tex`, `tld4`, `txq`, `suld.b`, `sust.b`
//! and `suq`, in the forms nvcc emits for CUDA's texture and surface object intrinsics (the
//! handle in a `.u64` register), including the layered (`a1d`, `a2d`) and cube (`cube`,
//! `acube`) texture geometries and the layered surface geometries (`a1d`, `a2d`, which CUDA's
//! layered and cube-map surface intrinsics use). `tex.level` and `tex.grad` give the level
//! of detail of a fetch from a mipmapped texture (`tex` and `tex.base`: level of detail 0),
//! and `txq.num_mipmap_levels` counts its levels.
//! Multisample geometries, explicit samplers, offsets, depth compare, `.f16x2` results and
//! formatted `sust.p` decode as unsupported instructions (they fail the launch when
//! executed).

use super::{
    lower::{DResult, Lower, unsup},
    scope::{FnState, Local},
};
use crate::{
    ast::{Operand, Value},
    ir::*,
    types::Ty,
};

fn has(mods: &[&str], w: &str) -> bool {
    mods.contains(&w)
}

/// A surface's geometry modifier: 1, 2 or 3 dimensions, and whether layered (`a1d`, `a2d`).
fn geometry(mods: &[&str]) -> DResult<(u8, bool)> {
    match tex_geometry(mods)? {
        (d, layered, false) => Ok((d, layered)),
        _ => unsup("surface geometry"),
    }
}

/// A texture's geometry: dimensions, layered (`a1d`, `a2d`, `acube`), cube (`cube`,
/// `acube`: three direction coordinates).
fn tex_geometry(mods: &[&str]) -> DResult<(u8, bool, bool)> {
    for m in mods {
        match *m {
            "1d" => return Ok((1, false, false)),
            "2d" => return Ok((2, false, false)),
            "3d" => return Ok((3, false, false)),
            "a1d" => return Ok((1, true, false)),
            "a2d" => return Ok((2, true, false)),
            "cube" => return Ok((3, false, true)),
            "acube" => return Ok((3, true, true)),
            "2dms" | "a2dms" => return unsup("multisample textures"),
            _ => {}
        }
    }
    unsup("texture geometry")
}

impl<'a> Lower<'a> {
    /// The texture or surface object operand: a register holding the handle, or a constant.
    fn handle(&mut self, st: &mut FnState<'a>, o: &Operand<'a>) -> DResult<Src> {
        match o {
            Operand::Name {
                name,
                comp: None,
                offset: 0,
                ..
            } if matches!(st.lookup(name), Some(Local::Reg(_))) => self.src(st, o, Ty::U64),
            Operand::Imm(Value::Int(v)) => Ok(Src::Imm(*v)),
            _ => unsup("texture or surface reference operand (only object handles in registers)"),
        }
    }

    /// `[handle, {c0, c1, ...}]`: the handle and the first `dims` coordinates (after the
    /// layer index, which comes first for a layered geometry).
    fn tex_operands(
        &mut self,
        st: &mut FnState<'a>,
        o: &Operand<'a>,
        dims: u8,
        layered: bool,
        cty: Ty,
    ) -> DResult<(Src, [Src; 3], Option<Src>)> {
        let Operand::Bracket(list) = o else {
            return unsup("texture operand form");
        };
        let [h, c] = list.as_slice() else {
            return unsup("explicit sampler or texture operand form");
        };
        let handle = self.handle(st, h)?;
        let cs: Vec<&Operand<'a>> = match c {
            Operand::Vec(v) => v.iter().collect(),
            o => vec![o],
        };
        let (layer, cs) = if layered {
            let Some((l, rest)) = cs.split_first() else {
                return unsup("coordinate count");
            };
            (Some(self.src(st, l, Ty::S32)?), rest.to_vec())
        } else {
            (None, cs)
        };
        // Three coordinates come as a 4-vector whose last element is ignored, and so do two
        // after a layer index.
        let n = dims as usize;
        let padded = if n == 3 || (layered && n == 2) {
            4 - usize::from(layered)
        } else {
            n
        };
        if cs.len() != padded && cs.len() != n {
            return unsup("coordinate count");
        }
        let mut coords = [Src::Imm(0); 3];
        for (k, o) in cs.iter().take(n).enumerate() {
            coords[k] = self.src(st, o, cty)?;
        }
        Ok((handle, coords, layer))
    }

    fn dst4(&mut self, st: &mut FnState<'a>, o: &Operand<'a>, n: usize) -> DResult<[Reg; 4]> {
        let Operand::Vec(ds) = o else {
            return unsup("destination vector");
        };
        if ds.len() != n {
            return unsup("destination vector length");
        }
        let mut d = [SINK; 4];
        for (k, o) in ds.iter().enumerate() {
            d[k] = self.dst(st, o)?;
        }
        Ok(d)
    }

    /// `tex{.base,.level,.grad}.geom.v4.dtype.ctype d{|p}, [a, c]{, lod | , dPdx, dPdy}` and
    /// `tld4.comp.2d.v4.dtype.f32 d{|p}, [a, c]`. The gradients are vectors of one element
    /// per coordinate (a 4-vector for three, its last element ignored), as nvcc emits them
    /// for `tex1DGrad` .. `texCubemapGrad`.
    pub(super) fn tex(
        &mut self,
        st: &mut FnState<'a>,
        gather: bool,
        mods: &[&str],
        args: &[Operand<'a>],
    ) -> DResult<Op> {
        let lod_operands = match (has(mods, "level"), has(mods, "grad")) {
            (false, false) => 0,
            (true, false) if !gather => 1,
            (false, true) if !gather => 2,
            _ => return unsup("texture level-of-detail form"),
        };
        let (dims, layered, cube) = tex_geometry(mods)?;
        if !has(mods, "v4") {
            return unsup("texture result other than .v4");
        }
        let types: Vec<Ty> = mods.iter().filter_map(|m| Ty::parse(m)).collect();
        let [dty, cty] = types.as_slice() else {
            return unsup("texture types");
        };
        if !matches!(dty, Ty::F32 | Ty::S32 | Ty::U32) {
            return unsup("texture result type");
        }
        let int_coords = match cty {
            Ty::F32 => false,
            Ty::S32 => true,
            _ => return unsup("texture coordinate type"),
        };
        let comp = if gather {
            let c = mods.iter().find_map(|m| match *m {
                "r" => Some(0),
                "g" => Some(1),
                "b" => Some(2),
                "a" => Some(3),
                _ => None,
            });
            if dims != 2 || layered || cube || int_coords || c.is_none() {
                return unsup("tld4 form");
            }
            c
        } else {
            None
        };
        if args.len() != 2 + lod_operands {
            return unsup("offset or depth-compare operands");
        }
        let (d, p) = match &args[0] {
            Operand::Pair(a, b) => (self.dst4(st, a, 4)?, self.dst(st, b)?),
            o => (self.dst4(st, o, 4)?, SINK),
        };
        if cube && int_coords {
            return unsup("cube texture with integer coordinates");
        }
        let (handle, coords, layer) = self.tex_operands(st, &args[1], dims, layered, *cty)?;
        let lod = match lod_operands {
            0 => TexLod::Base,
            1 => TexLod::Level(self.src(st, &args[2], Ty::F32)?),
            _ => TexLod::Grad(
                self.gradient(st, &args[2], dims)?,
                self.gradient(st, &args[3], dims)?,
            ),
        };
        Ok(Op::Tex(Box::new(TexOp {
            dims,
            int_coords,
            gather: comp,
            d,
            p,
            handle,
            coords,
            layer,
            cube,
            lod,
        })))
    }

    /// A `tex.grad` gradient: `dims` `.f32` elements, as a vector (padded to four for three
    /// dimensions) or, for one, a scalar.
    fn gradient(&mut self, st: &mut FnState<'a>, o: &Operand<'a>, dims: u8) -> DResult<[Src; 3]> {
        let items: Vec<&Operand<'a>> = match o {
            Operand::Vec(v) => v.iter().collect(),
            o => vec![o],
        };
        let n = dims as usize;
        if items.len() != n && !(n == 3 && items.len() == 4) {
            return unsup("gradient vector length");
        }
        let mut g = [Src::Imm(0); 3];
        for (k, o) in items.iter().take(n).enumerate() {
            g[k] = self.src(st, o, Ty::F32)?;
        }
        Ok(g)
    }

    /// `suld.b.geom{.vN}.btype.mode d, [a, c]` and `sust.b.geom{.vN}.btype.mode [a, c], v`.
    pub(super) fn surf(
        &mut self,
        st: &mut FnState<'a>,
        store: bool,
        mods: &[&str],
        args: &[Operand<'a>],
    ) -> DResult<Op> {
        if has(mods, "p") {
            return unsup("formatted surface stores");
        }
        if !has(mods, "b") {
            return unsup("surface access form");
        }
        let (dims, layered) = geometry(mods)?;
        let n: u8 = if has(mods, "v4") {
            4
        } else if has(mods, "v2") {
            2
        } else {
            1
        };
        let size: u8 = match mods.iter().rev().find_map(|m| Ty::parse(m)) {
            Some(Ty::B8) => 1,
            Some(Ty::B16) => 2,
            Some(Ty::B32) => 4,
            Some(Ty::B64) => 8,
            _ => return unsup("surface data type"),
        };
        let mode = if has(mods, "clamp") {
            SurfMode::Clamp
        } else if has(mods, "zero") {
            SurfMode::Zero
        } else {
            SurfMode::Trap
        };
        let [a0, a1] = args else {
            return unsup("surface operands");
        };
        let ety = match size {
            1 => Ty::B8,
            2 => Ty::B16,
            4 => Ty::B32,
            _ => Ty::B64,
        };
        let (addr, data) = if store { (a0, a1) } else { (a1, a0) };
        let (handle, mut coords, layer) = self.tex_operands(st, addr, dims, layered, Ty::S32)?;
        if let Some(l) = layer {
            coords[dims as usize] = l;
        }
        let mut d = [SINK; 4];
        let mut v = [Src::Imm(0); 4];
        let items: Vec<&Operand<'a>> = match data {
            Operand::Vec(xs) => xs.iter().collect(),
            o => vec![o],
        };
        if items.len() != n as usize {
            return unsup("surface vector length");
        }
        for (k, o) in items.into_iter().enumerate() {
            if store {
                v[k] = self.src(st, o, ety)?;
            } else {
                d[k] = self.dst(st, o)?;
            }
        }
        Ok(Op::Surf(Box::new(SurfOp {
            store,
            dims,
            size,
            n,
            mode,
            d,
            v,
            handle,
            coords,
            layered,
        })))
    }

    /// `txq.query.b32 d, [a]` and `suq.query.b32 d, [a]`.
    pub(super) fn tex_query(
        &mut self,
        st: &mut FnState<'a>,
        surface: bool,
        mods: &[&str],
        args: &[Operand<'a>],
    ) -> DResult<Op> {
        if has(mods, "level") {
            return unsup("query of a mipmap level");
        }
        let what = match mods.first().copied() {
            Some("width") => TexQuery::Width,
            Some("height") => TexQuery::Height,
            Some("depth") => TexQuery::Depth,
            Some("channel_data_type") => TexQuery::ChannelDataType,
            Some("channel_order") => TexQuery::ChannelOrder,
            Some("normalized_coords") if !surface => TexQuery::NormalizedCoords,
            Some("filter_mode") if !surface => TexQuery::FilterMode,
            Some("addr_mode_0") if !surface => TexQuery::AddrMode(0),
            Some("addr_mode_1") if !surface => TexQuery::AddrMode(1),
            Some("addr_mode_2") if !surface => TexQuery::AddrMode(2),
            Some("num_mipmap_levels") if !surface => TexQuery::MipmapLevels,
            _ => return unsup("query"),
        };
        let [d, a] = args else {
            return unsup("query operands");
        };
        let handle = match a {
            Operand::Addr(h) => self.handle(st, h)?,
            _ => return unsup("query operand form"),
        };
        Ok(Op::TexQuery {
            surface,
            what,
            d: self.dst(st, d)?,
            handle,
        })
    }
}
