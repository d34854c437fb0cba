// SPDX-License-Identifier: Apache-2.0 OR MIT
//! CUDA arrays and mipmapped arrays: texel formats, creation, levels and copies.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `cudaChannelFormatKindSigned`.
pub const CHANNEL_SIGNED: u32 = 0;
/// `cudaChannelFormatKindUnsigned`.
pub const CHANNEL_UNSIGNED: u32 = 1;
/// `cudaChannelFormatKindFloat`.
pub const CHANNEL_FLOAT: u32 = 2;

/// `cudaArrayLayered`: a 1-D or 2-D layered array (its depth counts layers).
pub const ARRAY_LAYERED: u32 = 0x01;
/// `cudaArrayCubemap`: six square faces (times the layers, with [`ARRAY_LAYERED`]).
pub const ARRAY_CUBEMAP: u32 = 0x04;
/// `cudaArraySurfaceLoadStore`: surfaces may view the array.
pub const ARRAY_SURFACE_LOAD_STORE: u32 = 0x02;
/// `cudaArrayTextureGather`: `tex2Dgather` may read the array.
pub const ARRAY_TEXTURE_GATHER: u32 = 0x08;

/// Largest width, height or depth of an array (the executors may allow less).
pub const MAX_ARRAY_DIM: u64 = 1 << 17;

wire_struct!(
    /// The texel format of an array or texture: `cudaChannelFormatDesc`.
    ChannelFormat, 8 {
        /// Bits of channels x, y, z, w (0 for an absent channel).
        bits: [u8; 4],
        /// A `CHANNEL_*` kind.
        kind: u32,
    }
);

wire_struct!(
    /// `ArrayCreate` request: a CUDA array of `width` x `height` x `depth` texels (`height`
    /// and `depth` 0 for fewer dimensions, as `cudaMalloc3DArray` takes them).
    ArrayCreateReq, 40 {
        /// Device ordinal.
        device: u32,
        /// `ARRAY_*` flags.
        flags: u32,
        /// The texel format.
        format: ChannelFormat,
        /// Width in texels.
        width: u64,
        /// Height in texels (0: a 1-D array).
        height: u64,
        /// Depth in texels (0: a 1-D or 2-D array).
        depth: u64,
    }
);

/// Most levels of a mipmapped array: enough to halve the widest array to one texel.
pub const MAX_MIPMAP_LEVELS: u32 = 18;

wire_struct!(
    /// `MipmappedArrayCreate` request: a CUDA mipmapped array whose level 0 is `array`'s
    /// shape (`cudaMallocMipmappedArray`).
    MipmappedArrayCreateReq, 48 {
        /// Level 0: device, flags, format and extent, as for an array.
        array: ArrayCreateReq,
        /// Levels, as the program asked (the executor clamps them to what the extent
        /// allows, as CUDA does).
        levels: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `MipmappedArrayGetLevel` request: the array handle of one level of a mipmapped array.
    MipmappedArrayLevelReq, 16 {
        /// The mipmapped array.
        handle: u64,
        /// The level.
        level: u32,
        /// Zero.
        reserved: u32,
    }
);

/// `MemcpyArrayReq::flags`: the copy goes from linear device memory into the array.
pub const ARRAY_COPY_TO_ARRAY: u32 = 1 << 0;
/// `MemcpyArrayReq::flags`: the guest does not wait (stream ordered).
pub const ARRAY_COPY_ASYNC: u32 = 1 << 1;

wire_struct!(
    /// `MemcpyArray` request: copies a box between an array and linear device memory.
    MemcpyArrayReq, 96 {
        /// Array handle.
        array: u64,
        /// The box's origin in the array: x in bytes, y and z in texels.
        x: u64,
        /// Row.
        y: u64,
        /// Slice.
        z: u64,
        /// Device address of the box in linear memory.
        ptr: u64,
        /// Bytes from one row to the next in linear memory.
        pitch: u64,
        /// Rows from one slice to the next in linear memory.
        rows: u64,
        /// Bytes per row of the box.
        width: u64,
        /// Rows of the box.
        height: u64,
        /// Slices of the box.
        depth: u64,
        /// Stream handle.
        stream: u64,
        /// `ARRAY_COPY_*` flags.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);
