// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Texture and surface objects: their resources, flags, creation and destruction.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::array::ChannelFormat;

/// `TexObjectCreateReq::resource`: a CUDA array.
pub const RESOURCE_ARRAY: u32 = 0;
/// `TexObjectCreateReq::resource`: a CUDA mipmapped array (its handle in `array`).
pub const RESOURCE_MIPMAPPED_ARRAY: u32 = 1;
/// `TexObjectCreateReq::resource`: linear device memory (1-D).
pub const RESOURCE_LINEAR: u32 = 2;
/// `TexObjectCreateReq::resource`: pitched 2-D device memory.
pub const RESOURCE_PITCH2D: u32 = 3;

/// `TexObjectCreateReq::flags`: a surface object (otherwise a texture object).
pub const TEX_SURFACE: u32 = 1 << 0;
/// `TexObjectCreateReq::flags`: normalized coordinates.
pub const TEX_NORMALIZED_COORDS: u32 = 1 << 1;
/// `TexObjectCreateReq::flags`: `cudaReadModeNormalizedFloat`.
pub const TEX_READ_NORMALIZED_FLOAT: u32 = 1 << 2;
/// `TexObjectCreateReq::flags`: sRGB to linear conversion.
pub const TEX_SRGB: u32 = 1 << 3;
/// `TexObjectCreateReq::flags`: linear filtering (otherwise point).
pub const TEX_FILTER_LINEAR: u32 = 1 << 4;
/// `TexObjectCreateReq::flags`: linear filtering between mipmap levels (otherwise point).
pub const TEX_MIPMAP_LINEAR: u32 = 1 << 5;
/// `TexObjectCreateReq::flags`: a resource view (`cudaResourceViewDesc`) of an array or a
/// mipmapped array: the `view_*` fields apply.
pub const TEX_VIEW: u32 = 1 << 6;

wire_struct!(
    /// `TexObjectCreate` request: a texture or surface object over an array or device memory.
    TexObjectCreateReq, 136 {
        /// Device ordinal.
        device: u32,
        /// A `RESOURCE_*` type.
        resource: u32,
        /// The array handle (`RESOURCE_ARRAY`) or mipmapped array handle
        /// (`RESOURCE_MIPMAPPED_ARRAY`).
        array: u64,
        /// Device address of texel 0 (`RESOURCE_LINEAR`, `RESOURCE_PITCH2D`).
        ptr: u64,
        /// The texel format (linear and pitched memory; an array has its own).
        format: ChannelFormat,
        /// Bytes (`RESOURCE_LINEAR`).
        size: u64,
        /// Width in texels (`RESOURCE_PITCH2D`).
        width: u64,
        /// Height in texels (`RESOURCE_PITCH2D`).
        height: u64,
        /// Bytes from one row to the next (`RESOURCE_PITCH2D`).
        pitch: u64,
        /// `cudaTextureAddressMode` per coordinate.
        address: [u32; 3],
        /// `TEX_*` flags.
        flags: u32,
        /// The border color.
        border: [f32; 4],
        /// Added to every fetch's level of detail (a mipmapped array; 0 otherwise).
        mip_bias: f32,
        /// Least level of detail (a mipmapped array; 0 otherwise).
        mip_min_clamp: f32,
        /// Greatest level of detail (a mipmapped array; 0 otherwise).
        mip_max_clamp: f32,
        /// A view's texel format (no bits: the resource's own).
        view_format: ChannelFormat,
        /// A view's first and last mipmap level.
        view_levels: [u32; 2],
        /// A view's first and last layer (cube faces count as layers).
        view_layers: [u32; 2],
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `TexObjectDestroy` request. Texture and surface objects are numbered apart (on a
    /// GPU the two kinds may share values), so the request says which kind it names.
    TexObjectDestroyReq, 16 {
        /// The handle.
        handle: u64,
        /// `TEX_SURFACE` for a surface object; otherwise 0.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);
