// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Texture sampling and surface addressing as a GPU's texture units do them (CUDA C
//! Programming Guide, "Texture Fetching"; PTX ISA, "Texture Instructions" and "Surface
//! Instructions").
//!
//! A fetch yields four 32-bit words, whatever the instruction's destination type: the
//! texture unit's result depends only on the texture (its format and read mode), so
//! `tex.f32` on an integer texture read in element mode returns the integers' bits, as on a
//! GPU. The words are `f32`s when the texture *returns floats*: float channels, or 8- and
//! 16-bit integer channels read as normalized floats. Otherwise they are the channel integers,
//! sign- or zero-extended to 32 bits.
//!
//! Choices where the documentation is silent:
//! * Channels the format lacks read as 0, except w, which reads 1 (`1.0` for float results):
//!   the convention of Direct3D, OpenGL and Vulkan, which the same hardware implements.
//! * Float coordinates are mapped to texel space in `f64` (`x * size` for normalized
//!   coordinates), then floored to a texel index; NaN maps to texel 0 and infinities saturate
//!   (then go through the address mode like any other far-away coordinate).
//! * Address modes are applied per tap to integer texel indices (as Direct3D and Vulkan
//!   specify them): clamp to `[0, n-1]`; border reads the border color; wrap is `i mod n`;
//!   mirror repeats every `2n` texels, reflected. Wrap and mirror need normalized
//!   coordinates and clamp otherwise.
//! * Linear filtering: `xB = x - 0.5`, `i = floor(xB)`, `α = frac(xB)` rounded to the nearest
//!   multiple of 1/256 (the guide's 9-bit fixed point with 8 fractional bits; 9 bits because
//!   rounding can give 1.0; "snapped to nearest", NVIDIA developer forum thread "tex1D
//!   accuracy"). The weighted sum is computed in `f64` and rounded to `f32` once; taps of
//!   weight zero are not read.
//! * The border color gives all four words (bit patterns of the `f32`s, which CUDA documents
//!   as the way to pass integer border colors).
//! * Integer (`.s32`) coordinates are texel fetches (`tex1Dfetch`): no filtering and no
//!   address modes; a coordinate out of range reads zero in all four words.
//! * sRGB conversion applies to the x, y and z channels of 8-bit unsigned textures read as
//!   normalized floats, before filtering.
//!
//! Mipmapped textures, as OpenGL specifies level-of-detail selection (section 8.14 of the
//! 4.6 core profile), which CUDA's descriptor fields mirror:
//! * The level of detail λ is `tex.level`'s operand, 0 for `tex` and `tex.base` (a compute
//!   thread has no implicit derivatives), and for `tex.grad` `log2 ρ`, ρ the longer of the
//!   two gradient vectors measured in level 0's texels (normalized coordinates scaled by
//!   level 0's extent; a cube map's directions by half the face width over the major axis).
//! * Then `λ + mipmapLevelBias`, clamped to `[minMipmapLevelClamp, maxMipmapLevelClamp]`
//!   (NaN reads as the lower clamp). λ ≤ 0 reads level 0.
//! * Point mipmap filtering reads the nearest level (`ceil(λ + 1/2) - 1`); linear reads
//!   levels `floor(λ)` and the next, weighted by `frac(λ)` rounded to a multiple of 1/256 as
//!   the texel weights are, and blends their filtered results. Levels past the last clamp to
//!   it. Textures that return integers read one level.
//! * Unnormalized float coordinates are in level 0's texels (scaled to the level read);
//!   integer coordinates index the level read.

use crate::{
    float::f16_to_f32,
    ir::{SurfMode, TexQuery},
    texture::{
        AddressMode, ChannelKind, FilterMode, Mipmap, TexObject, level_extent, level_offset,
    },
};

/// A texel read that fell outside mapped device memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unmapped {
    pub addr: u64,
    pub size: u32,
}

/// Why a surface access failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SurfFault {
    /// Out of range with `.trap`; the address the coordinates name.
    OutOfRange(u64),
    /// The byte coordinate is not a multiple of the element size.
    Misaligned(u64),
}

/// Texture coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Coords {
    Float([f32; 3]),
    Int([i32; 3]),
}

/// A fetch's level-of-detail operands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Lod {
    /// `tex`, `tex.base`.
    Base,
    /// `tex.level`.
    Level(f32),
    /// `tex.grad`: the gradients along x and along y.
    Grad([f32; 3], [f32; 3]),
}

/// Bytes a channel of `bits` occupies (0 for an absent channel).
fn chan_bytes(bits: u8) -> u32 {
    match bits {
        0 => 0,
        1..=8 => 1,
        9..=16 => 2,
        _ => 4,
    }
}

fn sext(v: u64, bits: u32) -> i64 {
    let sh = 64 - bits.clamp(1, 64);
    ((v << sh) as i64) >> sh
}

/// A float (floored or not) as a texel index: saturating, NaN as 0.
fn index(f: f64) -> i64 {
    f as i64
}

fn srgb_to_linear(c: f32) -> f32 {
    let c = c as f64;
    (if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }) as f32
}

impl TexObject {
    /// Size in texels along dimension `d` (at least 1).
    fn extent(&self, d: usize) -> u64 {
        [self.width, self.height, self.depth]
            .get(d)
            .copied()
            .unwrap_or(1)
            .max(1)
    }

    /// Bytes from one texel to the next.
    fn stride(&self) -> u64 {
        self.bits.iter().map(|&b| chan_bytes(b) as u64).sum()
    }

    /// Whether fetches return floats (and may filter linearly).
    pub(crate) fn returns_float(&self) -> bool {
        match self.kind {
            ChannelKind::Float => true,
            _ => self.normalized_float && matches!(chan_bytes(self.bits[0]), 1 | 2),
        }
    }

    /// The words of channels the format lacks.
    fn defaults(&self) -> [u32; 4] {
        if self.returns_float() {
            [0, 0, 0, 1f32.to_bits()]
        } else {
            [0, 0, 0, 1]
        }
    }

    fn texel_addr(&self, i: [u64; 3]) -> u64 {
        self.base
            .wrapping_add(i[2].wrapping_mul(self.slice_pitch))
            .wrapping_add(i[1].wrapping_mul(self.pitch))
            .wrapping_add(i[0].wrapping_mul(self.stride()))
    }

    /// Channel `c`'s raw bits as a result word.
    fn convert(&self, c: usize, raw: u64, bytes: u32) -> u32 {
        let bits = bytes * 8;
        let norm = self.normalized_float && bytes <= 2;
        match self.kind {
            ChannelKind::Float => match bytes {
                2 => f16_to_f32(raw as u16).to_bits(),
                _ => raw as u32,
            },
            ChannelKind::Unsigned if norm => {
                let f = raw as f32 / ((1u32 << bits) - 1) as f32;
                if self.srgb && bytes == 1 && c < 3 {
                    srgb_to_linear(f).to_bits()
                } else {
                    f.to_bits()
                }
            }
            ChannelKind::Signed if norm => {
                let v = sext(raw, bits) as f32;
                (v / ((1u32 << (bits - 1)) - 1) as f32).max(-1.0).to_bits()
            }
            ChannelKind::Unsigned => raw as u32,
            ChannelKind::Signed => sext(raw, bits) as u32,
        }
    }

    /// The texel at in-range indices `i`, as result words.
    fn texel<F>(&self, i: [u64; 3], load: &mut F) -> Result<[u32; 4], Unmapped>
    where
        F: FnMut(u64, u32) -> Result<u64, Unmapped>,
    {
        let mut out = self.defaults();
        let mut addr = self.texel_addr(i);
        for (c, o) in out.iter_mut().enumerate() {
            let b = chan_bytes(self.bits[c]);
            if b == 0 {
                continue;
            }
            let raw = load(addr, b)?;
            addr = addr.wrapping_add(b as u64);
            *o = self.convert(c, raw, b);
        }
        Ok(out)
    }

    /// The texel at a tap (`None`: outside with border addressing).
    fn tap<F>(&self, i: [Option<u64>; 3], load: &mut F) -> Result<[u32; 4], Unmapped>
    where
        F: FnMut(u64, u32) -> Result<u64, Unmapped>,
    {
        match i {
            [Some(x), Some(y), Some(z)] => self.texel([x, y, z], load),
            _ => Ok(self.border.map(f32::to_bits)),
        }
    }

    /// Applies the address mode of dimension `d` to texel index `i` (`None`: border).
    fn address(&self, d: usize, i: i64) -> Option<u64> {
        let n = self.extent(d).min(i64::MAX as u64) as i64;
        let mut mode = self.address.get(d).copied().unwrap_or(AddressMode::Clamp);
        if !self.normalized_coords && matches!(mode, AddressMode::Wrap | AddressMode::Mirror) {
            mode = AddressMode::Clamp;
        }
        Some(match mode {
            AddressMode::Clamp => i.clamp(0, n - 1) as u64,
            AddressMode::Border => {
                if (0..n).contains(&i) {
                    i as u64
                } else {
                    return None;
                }
            }
            AddressMode::Wrap => i.rem_euclid(n) as u64,
            AddressMode::Mirror => {
                let (i, n) = (i as i128, n as i128);
                let m = i.rem_euclid(2 * n);
                (if m >= n { 2 * n - 1 - m } else { m }) as u64
            }
        })
    }

    /// Level `k` of a mipmapped texture as a texture of its own (one level, packed).
    pub(crate) fn level(&self, k: u32) -> TexObject {
        let keep = self.layered || self.cube;
        let e0 = [self.width, self.height, self.depth];
        let [w, h, d] = level_extent(e0, keep, k);
        let texel = self.stride();
        TexObject {
            base: self.base.wrapping_add(level_offset(e0, keep, texel, k)),
            width: w,
            height: h,
            depth: d,
            pitch: w.saturating_mul(texel),
            slice_pitch: w.saturating_mul(h).saturating_mul(texel),
            mip: Mipmap::NONE,
            ..*self
        }
    }

    /// The level of detail of a fetch at `coords` over `dims` coordinates, before the bias
    /// and the clamps.
    fn level_of_detail(&self, dims: usize, coords: [f32; 3], lod: Lod) -> f64 {
        let (gx, gy) = match lod {
            Lod::Base => return 0.0,
            Lod::Level(l) => return f64::from(l),
            Lod::Grad(gx, gy) => (gx, gy),
        };
        let (n, scale) = if self.cube {
            // A face spans two units of direction at the major axis's distance.
            let ma = coords.iter().fold(0f64, |m, c| m.max(f64::from(*c).abs()));
            let s = if ma > 0.0 {
                self.width as f64 / (2.0 * ma)
            } else {
                0.0
            };
            (3, [s; 3])
        } else if self.normalized_coords {
            (dims, [0, 1, 2].map(|d| self.extent(d) as f64))
        } else {
            (dims, [1.0; 3])
        };
        let len = |g: [f32; 3]| {
            (0..n.min(3))
                .map(|d| (f64::from(g[d]) * scale[d]).powi(2))
                .sum::<f64>()
                .sqrt()
        };
        len(gx).max(len(gy)).log2()
    }

    /// The levels a fetch at level of detail `lod` reads and the weight of the second (0
    /// when it reads one).
    fn pick_levels(&self, lod: f64) -> (u32, u32, f64) {
        let m = &self.mip;
        let last = m.levels.max(1) - 1;
        // Bias, then the clamps (NaN becomes the lower clamp; an upper clamp below the
        // lower wins, without a panic).
        let l = (lod + f64::from(m.bias))
            .max(f64::from(m.min_clamp))
            .min(f64::from(m.max_clamp));
        if l.is_nan() || l <= 0.0 {
            return (0, 0, 0.0);
        }
        if m.filter == FilterMode::Point || !self.returns_float() {
            let k = ((l + 0.5).ceil() - 1.0).clamp(0.0, f64::from(last)) as u32;
            return (k, k, 0.0);
        }
        let fl = l.floor();
        if fl >= f64::from(last) {
            return (last, last, 0.0);
        }
        let k = fl as u32;
        let w = ((l - fl) * 256.0).round() / 256.0;
        if w >= 1.0 {
            (k + 1, k + 1, 0.0)
        } else {
            (k, k + 1, w)
        }
    }

    /// A fetch from a mipmapped texture: picks the levels `lod` selects and reads each with
    /// `read` (which samples one level as a texture of its own), blending two.
    pub(crate) fn sample_mipmapped<G>(
        &self,
        dims: usize,
        coords: Coords,
        lod: Lod,
        mut read: G,
    ) -> Result<[u32; 4], Unmapped>
    where
        G: FnMut(&TexObject, Coords) -> Result<[u32; 4], Unmapped>,
    {
        let float = match coords {
            Coords::Float(c) => c,
            Coords::Int(_) => [0.0; 3],
        };
        let (k0, k1, w) = self.pick_levels(self.level_of_detail(dims, float, lod));
        let mut at = |k: u32| {
            let lv = self.level(k);
            let c = match coords {
                // Level 0's texels, scaled to this level's.
                Coords::Float(c) if !self.normalized_coords && !self.cube => {
                    let mut c = c;
                    for (d, x) in c.iter_mut().enumerate().take(dims.min(3)) {
                        let r = lv.extent(d) as f64 / self.extent(d) as f64;
                        *x = (f64::from(*x) * r) as f32;
                    }
                    Coords::Float(c)
                }
                c => c,
            };
            read(&lv, c)
        };
        let a = at(k0)?;
        if w == 0.0 {
            return Ok(a);
        }
        let b = at(k1)?;
        let mut out = [0u32; 4];
        for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
            let v = (1.0 - w) * f64::from(f32::from_bits(x)) + w * f64::from(f32::from_bits(y));
            *o = (v as f32).to_bits();
        }
        Ok(out)
    }

    /// The same object seen as one of its layers (or cube faces): slice `slice` (clamped to
    /// the slices there are) as a texture of its own.
    pub(crate) fn slice(&self, slice: i64) -> TexObject {
        let last = self.depth.max(1) - 1;
        let s = slice.clamp(0, last as i64) as u64;
        TexObject {
            base: self.base.wrapping_add(s.wrapping_mul(self.slice_pitch)),
            depth: 1,
            layered: false,
            cube: false,
            ..*self
        }
    }

    /// A fetch from layer `layer` of a layered texture (`tex.a1d`, `tex.a2d`): `dims`
    /// coordinates within the layer; the layer index is unsigned and clamped to the layers
    /// there are (a GPU reads the last layer for -3: measured on an H100).
    pub(crate) fn sample_layer<F>(
        &self,
        dims: usize,
        coords: Coords,
        layer: u32,
        gather: Option<u8>,
        load: &mut F,
    ) -> Result<[u32; 4], Unmapped>
    where
        F: FnMut(u64, u32) -> Result<u64, Unmapped>,
    {
        self.slice(i64::from(layer))
            .sample(dims, coords, gather, load)
    }

    /// A cube-map fetch (`tex.cube`, `tex.acube`) in direction `(x, y, z)`: the face of the
    /// major axis, then that face's coordinates (the cube-map convention CUDA shares with
    /// OpenGL), sampled with normalized coordinates and no filtering across faces. `layer`
    /// picks the cube of a layered cube map (unsigned, clamped to the last cube, as layers
    /// are).
    pub(crate) fn sample_cube<F>(
        &self,
        [x, y, z]: [f32; 3],
        layer: u32,
        load: &mut F,
    ) -> Result<[u32; 4], Unmapped>
    where
        F: FnMut(u64, u32) -> Result<u64, Unmapped>,
    {
        let (ax, ay, az) = (x.abs(), y.abs(), z.abs());
        let (face, sc, tc, ma) = if ax >= ay && ax >= az {
            if x >= 0.0 {
                (0, -z, -y, ax)
            } else {
                (1, z, -y, ax)
            }
        } else if ay >= az {
            if y >= 0.0 {
                (2, x, z, ay)
            } else {
                (3, x, -z, ay)
            }
        } else if z >= 0.0 {
            (4, x, -y, az)
        } else {
            (5, -x, -y, az)
        };
        let (s, t) = if ma > 0.0 {
            ((sc / ma + 1.0) * 0.5, (tc / ma + 1.0) * 0.5)
        } else {
            (0.5, 0.5)
        };
        let cubes = (self.depth.max(1) / 6).max(1);
        let cube = u64::from(layer).min(cubes - 1) as i64;
        let mut f = self.slice(6 * cube + face);
        f.normalized_coords = true;
        f.sample(2, Coords::Float([s, t, 0.0]), None, load)
    }

    /// A `tex` fetch (`gather`: None) or a `tld4` gather of channel `gather` over `dims`
    /// coordinates. `load` reads `size` bytes of device memory.
    pub(crate) fn sample<F>(
        &self,
        dims: usize,
        coords: Coords,
        gather: Option<u8>,
        load: &mut F,
    ) -> Result<[u32; 4], Unmapped>
    where
        F: FnMut(u64, u32) -> Result<u64, Unmapped>,
    {
        let dims = dims.clamp(1, 3);
        let c = match coords {
            Coords::Int(c) => {
                let mut idx = [0u64; 3];
                for d in 0..dims {
                    match u64::try_from(c[d]) {
                        Ok(i) if i < self.extent(d) => idx[d] = i,
                        _ => return Ok([0; 4]),
                    }
                }
                return self.texel(idx, load);
            }
            Coords::Float(c) => c,
        };
        let linear =
            gather.is_some() || (self.returns_float() && self.filter == FilterMode::Linear);
        // Per dimension: the two taps and the weight of the second.
        let mut taps = [[Some(0u64); 2]; 3];
        let mut alpha = [0f64; 3];
        for d in 0..dims {
            let n = self.extent(d);
            let u = if self.normalized_coords {
                c[d] as f64 * n as f64
            } else {
                c[d] as f64
            };
            if linear {
                let xb = u - 0.5;
                let fl = xb.floor();
                let i0 = index(fl);
                alpha[d] = if xb.is_finite() {
                    ((xb - fl) * 256.0).round() / 256.0
                } else {
                    0.0
                };
                taps[d] = [self.address(d, i0), self.address(d, i0.saturating_add(1))];
            } else {
                let i = self.address(d, index(u.floor()));
                taps[d] = [i, i];
            }
        }
        if let Some(comp) = gather {
            // Counter-clockwise from the lower left: (i0, j1), (i1, j1), (i1, j0), (i0, j0).
            let mut out = [0u32; 4];
            for (k, (a, b)) in [(0, 1), (1, 1), (1, 0), (0, 0)].into_iter().enumerate() {
                let t = self.tap([taps[0][a], taps[1][b], Some(0)], load)?;
                out[k] = t[comp as usize & 3];
            }
            return Ok(out);
        }
        if !linear {
            return self.tap([taps[0][0], taps[1][0], taps[2][0]], load);
        }
        let mut sum = [0f64; 4];
        for corner in 0..(1usize << dims) {
            let mut wt = 1f64;
            let mut at = [Some(0u64); 3];
            for d in 0..dims {
                let hi = (corner >> d) & 1;
                wt *= if hi == 1 { alpha[d] } else { 1.0 - alpha[d] };
                at[d] = taps[d][hi];
            }
            if wt == 0.0 {
                continue;
            }
            let t = self.tap(at, load)?;
            for (s, v) in sum.iter_mut().zip(t) {
                *s += wt * f32::from_bits(v) as f64;
            }
        }
        Ok(sum.map(|s| (s as f32).to_bits()))
    }

    /// The address of a surface access of `n` `size`-byte elements at `c` (x in bytes), or
    /// `None` when `.zero` skips it. `.clamp` moves the whole access inside the row.
    pub(crate) fn surf_addr(
        &self,
        dims: usize,
        size: u32,
        n: u32,
        c: [i32; 3],
        mode: SurfMode,
    ) -> Result<Option<u64>, SurfFault> {
        let elem = size.max(1) as i64;
        let size = elem * n.max(1) as i64;
        let [x, y, z] = c.map(|v| v as i64);
        let at = |x: i64, y: i64, z: i64| {
            self.base
                .wrapping_add((z as u64).wrapping_mul(self.slice_pitch))
                .wrapping_add((y as u64).wrapping_mul(self.pitch))
                .wrapping_add(x as u64)
        };
        let raw = at(x, y, z);
        if x.rem_euclid(elem) != 0 {
            return Err(SurfFault::Misaligned(raw));
        }
        let row = self
            .extent(0)
            .saturating_mul(self.stride())
            .min(i64::MAX as u64) as i64;
        let (h, dpt) = (
            self.extent(1).min(i64::MAX as u64) as i64,
            self.extent(2).min(i64::MAX as u64) as i64,
        );
        let inside = x >= 0
            && x + size <= row
            && (dims < 2 || (0..h).contains(&y))
            && (dims < 3 || (0..dpt).contains(&z));
        if inside {
            return Ok(Some(raw));
        }
        match mode {
            SurfMode::Trap => Err(SurfFault::OutOfRange(raw)),
            SurfMode::Zero => Ok(None),
            SurfMode::Clamp => {
                let last = (row - size).max(0);
                let x = x.clamp(0, last) / size * size;
                let y = if dims < 2 { y } else { y.clamp(0, h - 1) };
                let z = if dims < 3 { z } else { z.clamp(0, dpt - 1) };
                Ok(Some(at(x, y, z)))
            }
        }
    }

    /// The value `txq` / `suq` returns. Channel data types are the driver API's
    /// `CUarray_format` codes and the channel order is the number of channels (CUDA has no
    /// enumeration of its own for either).
    pub(crate) fn query(&self, q: TexQuery) -> u32 {
        let sat = |v: u64| v.min(u32::MAX as u64) as u32;
        match q {
            TexQuery::Width => sat(self.width),
            TexQuery::Height => sat(self.height),
            TexQuery::Depth => sat(self.depth),
            TexQuery::ChannelDataType => match (self.kind, chan_bytes(self.bits[0])) {
                (ChannelKind::Unsigned, 1) => 0x01,
                (ChannelKind::Unsigned, 2) => 0x02,
                (ChannelKind::Unsigned, 4) => 0x03,
                (ChannelKind::Signed, 1) => 0x08,
                (ChannelKind::Signed, 2) => 0x09,
                (ChannelKind::Signed, 4) => 0x0a,
                (ChannelKind::Float, 2) => 0x10,
                (ChannelKind::Float, 4) => 0x20,
                _ => 0,
            },
            TexQuery::ChannelOrder => self.channels() as u32,
            TexQuery::NormalizedCoords => self.normalized_coords as u32,
            TexQuery::MipmapLevels => self.mip.levels.max(1),
            TexQuery::FilterMode => (self.filter == FilterMode::Linear) as u32,
            // PTX: enum { wrap, mirror, clamp_ogl, clamp_to_edge, clamp_to_border }.
            TexQuery::AddrMode(d) => match self.address.get(d as usize) {
                Some(AddressMode::Wrap) => 0,
                Some(AddressMode::Mirror) => 1,
                Some(AddressMode::Clamp) | None => 3,
                Some(AddressMode::Border) => 4,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tex(kind: ChannelKind, bits: [u8; 4], w: u64, h: u64) -> TexObject {
        let stride: u64 = bits.iter().map(|&b| b as u64 / 8).sum();
        TexObject {
            surface: false,
            base: 0x1000,
            dims: if h > 1 { 2 } else { 1 },
            width: w,
            height: h,
            depth: 1,
            pitch: w * stride,
            slice_pitch: w * h * stride,
            kind,
            bits,
            address: [AddressMode::Clamp; 3],
            filter: FilterMode::Point,
            normalized_float: false,
            normalized_coords: false,
            srgb: false,
            border: [0.5, 0.25, 0.125, 2.0],
            layered: false,
            cube: false,
            mip: crate::texture::Mipmap::NONE,
        }
    }

    /// A memory of `data` at 0x1000.
    fn mem(data: &[u8]) -> impl FnMut(u64, u32) -> Result<u64, Unmapped> + '_ {
        move |a, s| {
            let o = a.wrapping_sub(0x1000) as usize;
            let b = data
                .get(o..o.wrapping_add(s as usize))
                .ok_or(Unmapped { addr: a, size: s })?;
            Ok(b.iter().rev().fold(0u64, |v, x| v << 8 | *x as u64))
        }
    }

    #[test]
    fn normalized_conversions_and_defaults() {
        let mut t = tex(ChannelKind::Signed, [8, 8, 0, 0], 2, 1);
        t.normalized_float = true;
        let data = [0x80u8, 0x7f, 0x00, 0xc1];
        let r = t
            .sample(1, Coords::Int([0, 0, 0]), None, &mut mem(&data))
            .unwrap();
        assert_eq!(r.map(f32::from_bits), [-1.0, 1.0, 0.0, 1.0]);
        t.normalized_float = false;
        let r = t
            .sample(1, Coords::Int([1, 0, 0]), None, &mut mem(&data))
            .unwrap();
        assert_eq!(r, [0, (-63i32) as u32, 0, 1]);
        // Out of range integer fetch: zero everywhere.
        let r = t
            .sample(1, Coords::Int([2, 0, 0]), None, &mut mem(&data))
            .unwrap();
        assert_eq!(r, [0; 4]);
    }

    #[test]
    fn address_modes() {
        let mut t = tex(ChannelKind::Float, [32, 0, 0, 0], 4, 1);
        t.normalized_coords = true;
        t.address[0] = AddressMode::Wrap;
        assert_eq!(t.address(0, -1), Some(3));
        assert_eq!(t.address(0, 9), Some(1));
        assert_eq!(t.address(0, i64::MIN), Some(0));
        t.address[0] = AddressMode::Mirror;
        let m: Vec<u64> = (-5..9).map(|i| t.address(0, i).unwrap()).collect();
        assert_eq!(m, [3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0, 0]);
        assert_eq!(t.address(0, i64::MAX), Some(0));
        t.address[0] = AddressMode::Border;
        assert_eq!(t.address(0, 4), None);
        t.normalized_coords = false;
        t.address[0] = AddressMode::Wrap;
        assert_eq!(t.address(0, 7), Some(3));
    }

    #[test]
    fn hostile_coordinates_are_defined() {
        let mut t = tex(ChannelKind::Float, [32, 0, 0, 0], 3, 1);
        t.filter = FilterMode::Linear;
        let data: Vec<u8> = [1f32, 2.0, 4.0]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        for x in [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            -f32::MAX,
        ] {
            for a in [AddressMode::Clamp, AddressMode::Border] {
                t.address[0] = a;
                for norm in [false, true] {
                    t.normalized_coords = norm;
                    t.sample(1, Coords::Float([x, 0.0, 0.0]), None, &mut mem(&data))
                        .unwrap();
                }
            }
        }
        t.address[0] = AddressMode::Clamp;
        t.normalized_coords = false;
        let r = t
            .sample(
                1,
                Coords::Float([f32::NAN, 0.0, 0.0]),
                None,
                &mut mem(&data),
            )
            .unwrap();
        assert_eq!(f32::from_bits(r[0]), 1.0);
        // Halfway between texels 0 and 1, and an 8-bit fraction.
        let r = t
            .sample(1, Coords::Float([1.0, 0.0, 0.0]), None, &mut mem(&data))
            .unwrap();
        assert_eq!(f32::from_bits(r[0]), 1.5);
        let r = t
            .sample(
                1,
                Coords::Float([1.5 + 0.3, 0.0, 0.0]),
                None,
                &mut mem(&data),
            )
            .unwrap();
        let a = (0.3f64 * 256.0).round() / 256.0;
        assert_eq!(f32::from_bits(r[0]), (2.0 * (1.0 - a) + 4.0 * a) as f32);
    }

    #[test]
    fn surface_modes() {
        let t = tex(ChannelKind::Unsigned, [32, 0, 0, 0], 4, 2);
        let a = |x, y, m| t.surf_addr(2, 4, 1, [x, y, 0], m);
        assert_eq!(a(4, 1, SurfMode::Trap), Ok(Some(0x1000 + 16 + 4)));
        assert_eq!(a(16, 0, SurfMode::Trap), Err(SurfFault::OutOfRange(0x1010)));
        assert_eq!(a(2, 0, SurfMode::Zero), Err(SurfFault::Misaligned(0x1002)));
        assert_eq!(a(16, 0, SurfMode::Zero), Ok(None));
        assert_eq!(a(-4, 5, SurfMode::Clamp), Ok(Some(0x1010)));
        assert_eq!(a(i32::MAX - 3, -9, SurfMode::Clamp), Ok(Some(0x100c)));
        assert_eq!(
            t.surf_addr(2, 8, 1, [i32::MIN, i32::MIN, 0], SurfMode::Clamp),
            Ok(Some(0x1000))
        );
        // A two-element access: wholly inside the row, or moved inside by `.clamp`.
        let v2 = |x, m| t.surf_addr(2, 4, 2, [x, 0, 0], m);
        assert_eq!(v2(8, SurfMode::Trap), Ok(Some(0x1008)));
        assert_eq!(v2(12, SurfMode::Trap), Err(SurfFault::OutOfRange(0x100c)));
        assert_eq!(v2(16, SurfMode::Clamp), Ok(Some(0x1008)));
    }
}
