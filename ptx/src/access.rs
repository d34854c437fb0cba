// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Device-memory helpers both engines use: where a generic address lands ([`classify`]), the
//! 32-bit wrap of shared and local addresses ([`window_addr`]), and one lane's texture fetch
//! ([`tex_fetch`]) and surface access ([`surf_access`]) over the launch's region-checked
//! global memory.

use crate::{
    ir::{Space, SurfMode, SurfOp, TexLod, TexOp},
    memory::GlobalMem,
    module::{LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, WINDOW_SIZE},
    sampler::{Coords, Lod, SurfFault, Unmapped},
    texture::TexObject,
};

/// The state space and offset a generic address falls in (the shared, local and parameter
/// windows; everything else is global).
pub(crate) fn classify(addr: u64) -> (Space, u64) {
    if (SHARED_WINDOW..SHARED_WINDOW + WINDOW_SIZE).contains(&addr) {
        (Space::Shared, addr - SHARED_WINDOW)
    } else if (LOCAL_WINDOW..LOCAL_WINDOW + WINDOW_SIZE).contains(&addr) {
        (Space::Local, addr - LOCAL_WINDOW)
    } else if (PARAM_WINDOW..PARAM_WINDOW + WINDOW_SIZE).contains(&addr) {
        (Space::Param, addr)
    } else {
        (Space::Global, addr)
    }
}

/// An address in an explicit state space: shared and local addresses are 32 bits wide on
/// the GPU, so arithmetic on them wraps there (`[%r+68]` with `%r` = -64 is shared offset 4,
/// not 2^32 + 4).
#[inline(always)]
pub(crate) fn window_addr(space: Space, addr: u64) -> u64 {
    match space {
        Space::Shared | Space::Local => addr & 0xffff_ffff,
        _ => addr,
    }
}

/// Why a surface access faults.
pub(crate) enum SurfError {
    /// Outside the surface (trap mode) or outside device memory.
    Illegal { addr: u64, size: u32 },
    /// Not aligned to the element size.
    Misaligned { addr: u64, size: u32 },
}

/// One lane's `suld.b`/`sust.b` on surface `t`: `coords` are the lane's coordinate register
/// values, `vals` the values a store writes. A load returns its elements (zero where the
/// `zero` boundary mode reads nothing). Both engines access surfaces through this (the
/// compiler through `jit::rt::h_surf`).
pub(crate) fn surf_access(
    t: &TexObject,
    op: &SurfOp,
    coords: [u64; 3],
    vals: [u64; 4],
    gmem: &mut GlobalMem<'_>,
) -> Result<[u64; 4], SurfError> {
    let (size, n) = (op.size as u32, (op.n as usize).min(4));
    let total = size * n as u32;
    let dims = (op.dims as usize).min(2);
    let mut c = coords.map(|v| v as u32 as i32);
    // A layered access picks the layer (cube face) first: an index past the last is out of
    // range as a coordinate is, under the same boundary mode.
    let layer;
    let t = if op.layered {
        let layers = t.depth.max(1);
        let mut index = coords[dims] as u32 as u64;
        if index >= layers {
            match op.mode {
                SurfMode::Trap => {
                    let addr = t.base.wrapping_add(index.wrapping_mul(t.slice_pitch));
                    return Err(SurfError::Illegal { addr, size: total });
                }
                SurfMode::Zero => return Ok([0; 4]),
                SurfMode::Clamp => index = layers - 1,
            }
        }
        c[dims] = 0;
        // (`index` is below the layer count, which the array limits keep small.)
        layer = t.slice(index as i64);
        &layer
    } else {
        t
    };
    let addr = match t.surf_addr(op.dims as usize, size, n as u32, c, op.mode) {
        Ok(a) => a,
        Err(SurfFault::OutOfRange(addr)) => return Err(SurfError::Illegal { addr, size: total }),
        Err(SurfFault::Misaligned(addr)) => return Err(SurfError::Misaligned { addr, size }),
    };
    let mut out = [0u64; 4];
    let Some(base) = addr else {
        return Ok(out);
    };
    for k in 0..n {
        let a = base.wrapping_add(k as u64 * size as u64);
        let r = if op.store {
            gmem.store(a, size, vals[k]).map(|_| 0)
        } else {
            gmem.load(a, size)
        };
        match r {
            Ok(v) => out[k] = v,
            Err(_) => return Err(SurfError::Illegal { addr: a, size }),
        }
    }
    Ok(out)
}

/// One lane's `tex`/`tld4` on object `t`: `coords`, `layer` and `lod` are the lane's
/// register values of the instruction's coordinate, layer and level-of-detail operands (in
/// [`TexLod::operands`]' order). Both engines fetch through this (the compiler through
/// `jit::rt::h_tex`).
pub(crate) fn tex_fetch<F>(
    t: &TexObject,
    op: &TexOp,
    coords: [u64; 3],
    layer: u64,
    lod: [u64; 7],
    load: &mut F,
) -> Result<[u32; 4], Unmapped>
where
    F: FnMut(u64, u32) -> Result<u64, Unmapped>,
{
    let c = coords.map(|v| v as u32);
    let coords = if op.int_coords {
        Coords::Int(c.map(|v| v as i32))
    } else {
        Coords::Float(c.map(f32::from_bits))
    };
    let layer = layer as u32;
    let mut one = |t: &TexObject, coords: Coords| match coords {
        Coords::Float(xyz) if op.cube => t.sample_cube(xyz, layer, load),
        _ if op.layer.is_some() => t.sample_layer(op.dims as usize, coords, layer, op.gather, load),
        _ => t.sample(op.dims as usize, coords, op.gather, load),
    };
    if t.mip.levels <= 1 {
        return one(t, coords);
    }
    let f = |k: usize| f32::from_bits(lod[k] as u32);
    let lod = match op.lod {
        TexLod::Base => Lod::Base,
        TexLod::Level(_) => Lod::Level(f(0)),
        TexLod::Grad(..) => Lod::Grad([f(1), f(2), f(3)], [f(4), f(5), f(6)]),
    };
    t.sample_mipmapped(op.dims as usize, coords, lod, one)
}
