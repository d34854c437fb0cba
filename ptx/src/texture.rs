// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Texture and surface objects as kernels see them.
//!
//! A kernel names a texture or surface by the 64-bit handle the program got from
//! `cudaCreateTextureObject` / `cudaCreateSurfaceObject` (passed as a kernel parameter). The
//! executor resolves a handle with [`DeviceMemory::texture`](crate::DeviceMemory::texture)
//! into a [`TexObject`]: where the texels are (device memory, read like global memory) and
//! how they are sampled. The `tex`, `tld4`, `txq`, `suld`, `sust` and `suq` instructions use it.

/// How a channel's bits are read (`cudaChannelFormatKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelKind {
    /// Two's complement integers (`cudaChannelFormatKindSigned`).
    Signed,
    /// Unsigned integers (`cudaChannelFormatKindUnsigned`).
    Unsigned,
    /// IEEE binary16 or binary32 (`cudaChannelFormatKindFloat`).
    Float,
}

/// What a coordinate outside the texture reads (`cudaTextureAddressMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressMode {
    /// Repeats (normalized coordinates only; clamps otherwise).
    Wrap,
    /// Clamps to the edge texel.
    Clamp,
    /// Repeats mirrored (normalized coordinates only; clamps otherwise).
    Mirror,
    /// Reads the border color.
    Border,
}

/// How texels are combined (`cudaTextureFilterMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterMode {
    /// The nearest texel.
    Point,
    /// Linear interpolation between neighbours (float results only).
    Linear,
}

/// A texture or surface object: the resource it views and, for textures, its sampler.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TexObject {
    /// A surface object (`suld`/`sust`/`suq`); otherwise a texture object (`tex`/`tld4`/`txq`).
    pub surface: bool,
    /// Device address of texel (0, 0, 0).
    pub base: u64,
    /// Dimensions of the resource: 1 (linear memory or a 1-D array), 2 (pitched memory or a
    /// 2-D array) or 3 (a 3-D array).
    pub dims: u8,
    /// Width in texels.
    pub width: u64,
    /// Height in texels (1 when `dims < 2`).
    pub height: u64,
    /// Depth in texels (1 when `dims < 3`).
    pub depth: u64,
    /// Bytes from one row to the next.
    pub pitch: u64,
    /// Bytes from one 2-D slice to the next.
    pub slice_pitch: u64,
    /// How channels are read.
    pub kind: ChannelKind,
    /// Bits of channels x, y, z, w (8, 16 or 32; 0 for a channel the format lacks). The
    /// present channels come first and have equal sizes.
    pub bits: [u8; 4],
    /// Address mode per coordinate (x, y, z).
    pub address: [AddressMode; 3],
    /// Filter mode.
    pub filter: FilterMode,
    /// `cudaReadModeNormalizedFloat`: 8- and 16-bit integer channels read as floats in
    /// [0, 1] (unsigned) or [-1, 1] (signed).
    pub normalized_float: bool,
    /// Coordinates in [0, 1) span the texture.
    pub normalized_coords: bool,
    /// sRGB to linear conversion of 8-bit unsigned channels on read.
    pub srgb: bool,
    /// The border color (address mode [`AddressMode::Border`]).
    pub border: [f32; 4],
    /// A layered array (`tex.a1d`/`tex.a2d`): `depth` counts layers of `dims` dimensions.
    pub layered: bool,
    /// A cube map (`tex.cube`/`tex.acube`): `depth` counts faces, six per layer.
    pub cube: bool,
    /// The levels of a mipmapped array and how fetches choose among them
    /// ([`Mipmap::NONE`] for every other texture, and for surfaces).
    pub mip: Mipmap,
}

/// The mipmap part of a texture object (`cudaTextureDesc`'s mipmap fields over a
/// `cudaMipmappedArray`).
///
/// Level `k` has level 0's width, height and depth halved `k` times (rounded down, at least
/// 1; the layers and cube faces of a layered or cube-map array are not halved, and the
/// dimensions a texture lacks stay 1). The levels lie one after another from the object's
/// `base`, each packed: rows of its own width, slices of its own height (the `pitch` and
/// `slice_pitch` of level 0 must be packed too). [`level_extent`] and [`level_offset`] give
/// where a level lies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mipmap {
    /// Levels (1: not mipmapped; the other fields are then not read).
    pub levels: u32,
    /// Filtering between two levels (`mipmapFilterMode`); point picks the nearest level.
    pub filter: FilterMode,
    /// Added to every fetch's level of detail (`mipmapLevelBias`).
    pub bias: f32,
    /// Least level of detail a fetch uses (`minMipmapLevelClamp`).
    pub min_clamp: f32,
    /// Greatest level of detail a fetch uses (`maxMipmapLevelClamp`).
    pub max_clamp: f32,
}

impl Mipmap {
    /// Not mipmapped: one level.
    pub const NONE: Mipmap = Mipmap {
        levels: 1,
        filter: FilterMode::Point,
        bias: 0.0,
        min_clamp: 0.0,
        max_clamp: 0.0,
    };
}

impl Default for Mipmap {
    fn default() -> Self {
        Self::NONE
    }
}

/// The extent (width, height, depth in texels) of level `k` of a mipmapped array whose level
/// 0 is `extent`: halved `k` times, at least 1. `keep_depth`: the depth counts layers or cube
/// faces and is not halved.
pub fn level_extent(extent: [u64; 3], keep_depth: bool, k: u32) -> [u64; 3] {
    let half = |n: u64| n.checked_shr(k).unwrap_or(0).max(1);
    [
        half(extent[0]),
        half(extent[1]),
        if keep_depth {
            extent[2].max(1)
        } else {
            half(extent[2])
        },
    ]
}

/// Bytes from level 0's first texel to level `k`'s, levels packed one after another
/// (saturating: the executor bounds the extents).
pub fn level_offset(extent: [u64; 3], keep_depth: bool, texel_bytes: u64, k: u32) -> u64 {
    (0..k).fold(0u64, |off, j| {
        let [w, h, d] = level_extent(extent, keep_depth, j);
        off.saturating_add(
            w.saturating_mul(h)
                .saturating_mul(d)
                .saturating_mul(texel_bytes),
        )
    })
}

impl TexObject {
    /// Bytes of one texel.
    pub fn texel_bytes(&self) -> u64 {
        self.bits.iter().map(|&b| b as u64).sum::<u64>() / 8
    }

    /// Channels per texel (1, 2 or 4).
    pub fn channels(&self) -> usize {
        self.bits.iter().filter(|&&b| b != 0).count()
    }
}
