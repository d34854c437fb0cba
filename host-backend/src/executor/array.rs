// SPDX-License-Identifier: Apache-2.0 OR MIT
//! CUDA arrays, texture and surface objects: the checks both executors share.
//!
//! Everything here comes from the guest: formats, extents, boxes and sampler settings are
//! validated before an executor allocates or copies anything.

use vcuda_protocol::status;
use vcuda_protocol::{
    ARRAY_COPY_ASYNC, ARRAY_COPY_TO_ARRAY, ARRAY_CUBEMAP, ARRAY_LAYERED, ARRAY_SURFACE_LOAD_STORE,
    ARRAY_TEXTURE_GATHER, ArrayCreateReq, CHANNEL_FLOAT, CHANNEL_SIGNED, CHANNEL_UNSIGNED,
    ChannelFormat, MemcpyArrayReq, MipmappedArrayCreateReq, RESOURCE_ARRAY, RESOURCE_LINEAR,
    RESOURCE_MIPMAPPED_ARRAY, RESOURCE_PITCH2D, TEX_FILTER_LINEAR, TEX_MIPMAP_LINEAR,
    TEX_NORMALIZED_COORDS, TEX_READ_NORMALIZED_FLOAT, TEX_SRGB, TEX_SURFACE, TEX_VIEW,
    TexObjectCreateReq,
};
use vcuda_ptx::{AddressMode, ChannelKind, FilterMode, Mipmap, level_extent, level_offset};

use super::{ExecResult, Status};

/// Widest 1-D array (`cudaDevAttrMaxTexture1DWidth` on sm_90).
pub const MAX_1D_WIDTH: u64 = 131_072;
/// Largest 2-D array (`cudaDevAttrMaxTexture2DWidth` x `Height` on sm_90).
pub const MAX_2D: (u64, u64) = (131_072, 65_536);
/// Largest 3-D array edge (`cudaDevAttrMaxTexture3DWidth` on sm_90).
pub const MAX_3D: u64 = 16_384;
/// Most texels of a texture over linear memory (`cudaDevAttrMaxTexture1DLinearWidth`).
pub const MAX_LINEAR_TEXELS: u64 = 1 << 28;
/// Largest texture over pitched memory: width, height, pitch in bytes
/// (`cudaDevAttrMaxTexture2DLinear*` on sm_90).
pub const MAX_PITCH2D: (u64, u64, u64) = (131_072, 65_000, 2_097_120);
/// Most layers of a layered array (`cudaDevAttrMaxTexture2DLayeredLayers` on sm_90).
pub const MAX_LAYERS: u64 = 2048;
/// Widest 2-D layered array (`cudaDevAttrMaxTexture2DLayeredWidth`/`Height` on sm_90).
pub const MAX_2D_LAYERED: u64 = 32_768;
/// Widest cube-map face (`cudaDevAttrMaxTextureCubemapWidth` on sm_90).
pub const MAX_CUBEMAP: u64 = 32_768;
/// Widest 1-D mipmapped array (`cudaDevAttrMaxTexture1DMipmappedWidth` on sm_90).
pub const MAX_1D_MIPMAPPED: u64 = 32_768;
/// Largest 2-D mipmapped array edge (`cudaDevAttrMaxTexture2DMipmappedWidth`/`Height` on
/// sm_90).
pub const MAX_2D_MIPMAPPED: u64 = 32_768;
/// Largest array that `tex2Dgather` may read (`cudaDevAttrMaxTexture2DGather*`).
pub const MAX_GATHER: u64 = 32_768;
/// Alignment of a texture's base address (`cudaDevAttrTextureAlignment`).
pub const TEXTURE_ALIGNMENT: u64 = 512;
/// Alignment of a pitched texture's pitch (`cudaDevAttrTexturePitchAlignment`).
pub const TEXTURE_PITCH_ALIGNMENT: u64 = 32;

/// `cudaErrorInvalidChannelDescriptor`.
const INVALID_CHANNEL: Status = Status(status::INVALID_CHANNEL_DESCRIPTOR);

/// A checked texel format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    /// How channels read.
    pub kind: ChannelKind,
    /// Bits per channel x, y, z, w.
    pub bits: [u8; 4],
    /// Channels (1, 2 or 4).
    pub channels: u32,
    /// Bytes per channel.
    pub channel_bytes: u64,
}

impl Format {
    /// Checks a guest's channel format: 1, 2 or 4 channels of equal size, present ones
    /// first; 8, 16 or 32-bit integers or 16 or 32-bit floats.
    pub fn check(f: &ChannelFormat) -> ExecResult<Format> {
        let kind = match f.kind {
            CHANNEL_SIGNED => ChannelKind::Signed,
            CHANNEL_UNSIGNED => ChannelKind::Unsigned,
            CHANNEL_FLOAT => ChannelKind::Float,
            _ => return Err(INVALID_CHANNEL),
        };
        let channels = f.bits.iter().take_while(|&&b| b != 0).count();
        let b = f.bits[0];
        if channels == 0
            || channels == 3
            || f.bits[channels..].iter().any(|&x| x != 0)
            || f.bits[..channels].iter().any(|&x| x != b)
        {
            return Err(INVALID_CHANNEL);
        }
        let ok = match kind {
            ChannelKind::Float => matches!(b, 16 | 32),
            _ => matches!(b, 8 | 16 | 32),
        };
        if !ok {
            return Err(INVALID_CHANNEL);
        }
        Ok(Format {
            kind,
            bits: f.bits,
            channels: channels as u32,
            channel_bytes: u64::from(b / 8),
        })
    }

    /// Bytes per texel.
    pub fn texel_bytes(&self) -> u64 {
        self.channel_bytes * u64::from(self.channels)
    }
}

/// A checked array shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrayShape {
    /// Texel format.
    pub format: Format,
    /// 1, 2 or 3.
    pub dims: u8,
    /// Width in texels.
    pub width: u64,
    /// Height in texels (1 for a 1-D array).
    pub height: u64,
    /// Depth in texels (1 for fewer dimensions).
    pub depth: u64,
    /// `ARRAY_*` flags.
    pub flags: u32,
}

impl ArrayShape {
    /// Checks an `ArrayCreate` request. Layered (1-D and 2-D) and cube-map arrays keep
    /// their layers (or faces) as the depth; sparse and deferred-mapping arrays are not
    /// supported.
    pub fn check(r: &ArrayCreateReq) -> ExecResult<ArrayShape> {
        let known = ARRAY_SURFACE_LOAD_STORE | ARRAY_TEXTURE_GATHER | ARRAY_LAYERED | ARRAY_CUBEMAP;
        if r.flags & !known != 0 {
            return Err(Status::NOT_SUPPORTED);
        }
        let format = Format::check(&r.format)?;
        let (layered, cube) = (r.flags & ARRAY_LAYERED != 0, r.flags & ARRAY_CUBEMAP != 0);
        if layered || cube {
            let (w, h, d) = (r.width, r.height, r.depth);
            let ok = if cube {
                // Square faces, six per layer.
                w == h
                    && w != 0
                    && w <= MAX_CUBEMAP
                    && d != 0
                    && d.is_multiple_of(6)
                    && (layered || d == 6)
                    && d / 6 <= MAX_LAYERS / 6
            } else {
                w != 0
                    && w <= MAX_2D_LAYERED
                    && h <= MAX_2D_LAYERED
                    && (1..=MAX_LAYERS).contains(&d)
            };
            if !ok || r.flags & ARRAY_TEXTURE_GATHER != 0 {
                return Err(Status::INVALID_VALUE);
            }
            return Ok(ArrayShape {
                format,
                dims: if h == 0 { 1 } else { 2 },
                width: w,
                height: h.max(1),
                depth: d,
                flags: r.flags,
            });
        }
        let (dims, ok) = match (r.width, r.height, r.depth) {
            (w, 0, 0) => (1, w <= MAX_1D_WIDTH),
            (w, h, 0) => (2, w <= MAX_2D.0 && h <= MAX_2D.1),
            (w, h, d) => (3, w <= MAX_3D && h <= MAX_3D && d <= MAX_3D && h != 0),
        };
        let gather_ok = r.flags & ARRAY_TEXTURE_GATHER == 0
            || (dims == 2 && r.width <= MAX_GATHER && r.height <= MAX_GATHER);
        if r.width == 0 || !ok || !gather_ok {
            return Err(Status::INVALID_VALUE);
        }
        Ok(ArrayShape {
            format,
            dims,
            width: r.width,
            height: r.height.max(1),
            depth: r.depth.max(1),
            flags: r.flags,
        })
    }

    /// Whether the depth counts layers or cube faces (which mipmap levels do not halve).
    pub fn keeps_depth(&self) -> bool {
        self.flags & (ARRAY_LAYERED | ARRAY_CUBEMAP) != 0
    }

    /// Bytes of one row.
    pub fn row_bytes(&self) -> u64 {
        self.width * self.format.texel_bytes()
    }

    /// Bytes of the whole array, packed (bounded by the dimension limits: < 2^50).
    pub fn bytes(&self) -> u64 {
        self.row_bytes() * self.height * self.depth
    }

    /// Checks that a copy's box lies inside the array and that its linear side is
    /// consistent; returns the bytes the linear side spans from `ptr`.
    pub fn check_box(&self, r: &MemcpyArrayReq) -> ExecResult<u64> {
        if r.flags & !(ARRAY_COPY_TO_ARRAY | ARRAY_COPY_ASYNC) != 0 || r.reserved != 0 {
            return Err(Status::INVALID_VALUE);
        }
        let inside = |o: u64, n: u64, total: u64| o.checked_add(n).is_some_and(|e| e <= total);
        if !inside(r.x, r.width, self.row_bytes())
            || !inside(r.y, r.height, self.height)
            || !inside(r.z, r.depth, self.depth)
        {
            return Err(Status::INVALID_VALUE);
        }
        // The driver's rule: byte offsets and widths in whole texels.
        let texel = self.format.texel_bytes();
        if !r.x.is_multiple_of(texel) || !r.width.is_multiple_of(texel) {
            return Err(Status::INVALID_VALUE);
        }
        if r.width == 0 || r.height == 0 || r.depth == 0 {
            return Ok(0);
        }
        if r.pitch < r.width || (r.depth > 1 && r.rows < r.height) {
            return Err(Status::INVALID_PITCH);
        }
        // The last byte of the linear side: ((depth-1)*rows + height-1)*pitch + width.
        // Saturating: rows and pitch are the guest's; a saturated span fails the range
        // check of the executor.
        let last_row = (r.depth - 1)
            .saturating_mul(r.rows)
            .saturating_add(r.height - 1);
        Ok(last_row.saturating_mul(r.pitch).saturating_add(r.width))
    }
}

/// A checked mipmapped array shape: level 0 and the number of levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MipShape {
    /// Level 0.
    pub base: ArrayShape,
    /// Levels (at least 1; level `levels - 1` is at least one texel wide).
    pub levels: u32,
}

impl MipShape {
    /// Checks a `MipmappedArrayCreate` request: level 0 as an array (without texture
    /// gather, and within the mipmapped limits for one and two dimensions), and the levels
    /// clamped to `[1, 1 + floor(log2(largest halved extent))]` as `cudaMallocMipmappedArray`
    /// clamps them.
    pub fn check(r: &MipmappedArrayCreateReq) -> ExecResult<MipShape> {
        if r.reserved != 0 || r.array.flags & ARRAY_TEXTURE_GATHER != 0 {
            return Err(Status::INVALID_VALUE);
        }
        let base = ArrayShape::check(&r.array)?;
        let keep = base.keeps_depth();
        let too_big = match (base.dims, keep) {
            (1, _) => base.width > MAX_1D_MIPMAPPED,
            (2, false) => base.width > MAX_2D_MIPMAPPED || base.height > MAX_2D_MIPMAPPED,
            _ => false,
        };
        if too_big {
            return Err(Status::INVALID_VALUE);
        }
        let largest = base
            .width
            .max(base.height)
            .max(if keep { 1 } else { base.depth });
        let most = 64 - largest.leading_zeros();
        Ok(MipShape {
            base,
            levels: r.levels.clamp(1, most),
        })
    }

    fn extent(&self) -> [u64; 3] {
        [self.base.width, self.base.height, self.base.depth]
    }

    /// Level `k`'s shape.
    pub fn level(&self, k: u32) -> ArrayShape {
        let [width, height, depth] = level_extent(self.extent(), self.base.keeps_depth(), k);
        ArrayShape {
            width,
            height,
            depth,
            ..self.base
        }
    }

    /// Bytes from level 0 to level `k` (levels packed one after another, as the PTX
    /// engines read them).
    pub fn offset(&self, k: u32) -> u64 {
        let texel = self.base.format.texel_bytes();
        level_offset(self.extent(), self.base.keeps_depth(), texel, k)
    }

    /// Bytes of all levels.
    pub fn bytes(&self) -> u64 {
        self.offset(self.levels)
    }
}

/// The checked settings of a texture or surface object.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampler {
    /// A surface object.
    pub surface: bool,
    /// Address modes.
    pub address: [AddressMode; 3],
    /// Filtering.
    pub filter: FilterMode,
    /// `cudaReadModeNormalizedFloat`.
    pub normalized_float: bool,
    /// Normalized coordinates.
    pub normalized_coords: bool,
    /// sRGB.
    pub srgb: bool,
    /// Border color.
    pub border: [f32; 4],
    /// The mipmap settings (levels 1 here: the resource's level count goes in later).
    pub mip: Mipmap,
    /// A resource view.
    pub view: Option<ResourceView>,
}

/// A resource view as the guest asked for it (`cudaResourceViewDesc`), checked against
/// the resource by [`ResourceView::apply`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResourceView {
    /// Texel format (`None`: the resource's).
    pub format: Option<Format>,
    /// First and last mipmap level.
    pub levels: [u32; 2],
    /// First and last layer (cube faces count as layers).
    pub layers: [u32; 2],
}

/// What a texture over an array or a mipmapped array reads: the whole resource, or a view.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Viewed {
    /// Texel format.
    pub format: Format,
    /// The first level read.
    pub first_level: u32,
    /// Levels read (1 for an array).
    pub levels: u32,
    /// The first layer read (0 for an array without layers).
    pub first_layer: u64,
    /// Layers read (the depth, for an array without layers).
    pub layers: u64,
}

impl ResourceView {
    /// What a texture with view `view` (or none) reads of a resource of `shape` (level 0
    /// for a mipmapped array) and `levels` levels. A view keeps the texel size, picks
    /// levels within the resource's and layers within a layered or cube-map array's (whole
    /// cubes: multiples of six faces); a layer range narrower than a layered mipmapped
    /// array's over several levels is not supported.
    pub fn apply(
        view: Option<&ResourceView>,
        shape: &ArrayShape,
        levels: u32,
    ) -> ExecResult<Viewed> {
        let whole = Viewed {
            format: shape.format,
            first_level: 0,
            levels,
            first_layer: 0,
            layers: shape.depth,
        };
        let Some(v) = view else {
            return Ok(whole);
        };
        let format = match v.format {
            Some(f) if f.texel_bytes() != shape.format.texel_bytes() => {
                return Err(Status::INVALID_VALUE);
            }
            Some(f) => f,
            None => shape.format,
        };
        let [l0, l1] = v.levels;
        if l0 > l1 || l1 >= levels {
            return Err(Status::INVALID_VALUE);
        }
        let [a, b] = v.layers.map(u64::from);
        let (first_layer, layers) = if shape.keeps_depth() {
            let cube = shape.flags & ARRAY_CUBEMAP != 0;
            if a > b || b >= shape.depth || (cube && (a % 6 != 0 || (b + 1) % 6 != 0)) {
                return Err(Status::INVALID_VALUE);
            }
            if l1 > l0 && (a, b + 1) != (0, shape.depth) {
                return Err(Status::NOT_SUPPORTED);
            }
            (a, b - a + 1)
        } else {
            if (a, b) != (0, 0) {
                return Err(Status::INVALID_VALUE);
            }
            (0, shape.depth)
        };
        Ok(Viewed {
            format,
            first_level: l0,
            levels: l1 - l0 + 1,
            first_layer,
            layers,
        })
    }
}

impl Sampler {
    /// Checks the sampler part of a `TexObjectCreate` request.
    pub fn check(r: &TexObjectCreateReq) -> ExecResult<Sampler> {
        let known = TEX_SURFACE
            | TEX_NORMALIZED_COORDS
            | TEX_READ_NORMALIZED_FLOAT
            | TEX_SRGB
            | TEX_FILTER_LINEAR
            | TEX_MIPMAP_LINEAR
            | TEX_VIEW;
        if r.flags & !known != 0 || r.reserved != 0 {
            return Err(Status::INVALID_VALUE);
        }
        let view = if r.flags & TEX_VIEW != 0 {
            // Views are of textures over arrays and mipmapped arrays only.
            if r.flags & TEX_SURFACE != 0
                || !matches!(r.resource, RESOURCE_ARRAY | RESOURCE_MIPMAPPED_ARRAY)
            {
                return Err(Status::INVALID_VALUE);
            }
            Some(ResourceView {
                format: if r.view_format.bits == [0; 4] {
                    None
                } else {
                    Some(Format::check(&r.view_format)?)
                },
                levels: r.view_levels,
                layers: r.view_layers,
            })
        } else {
            if r.view_format != ChannelFormat::default()
                || r.view_levels != [0; 2]
                || r.view_layers != [0; 2]
            {
                return Err(Status::INVALID_VALUE);
            }
            None
        };
        match r.resource {
            RESOURCE_ARRAY | RESOURCE_LINEAR | RESOURCE_PITCH2D => {}
            // Surfaces view arrays (a level of a mipmapped array is one).
            RESOURCE_MIPMAPPED_ARRAY if r.flags & TEX_SURFACE == 0 => {}
            _ => return Err(Status::INVALID_VALUE),
        }
        let mut address = [AddressMode::Wrap; 3];
        for (a, &m) in address.iter_mut().zip(&r.address) {
            *a = match m {
                0 => AddressMode::Wrap,
                1 => AddressMode::Clamp,
                2 => AddressMode::Mirror,
                3 => AddressMode::Border,
                _ => return Err(Status::INVALID_VALUE),
            };
        }
        Ok(Sampler {
            surface: r.flags & TEX_SURFACE != 0,
            address,
            filter: if r.flags & TEX_FILTER_LINEAR != 0 {
                FilterMode::Linear
            } else {
                FilterMode::Point
            },
            normalized_float: r.flags & TEX_READ_NORMALIZED_FLOAT != 0,
            normalized_coords: r.flags & TEX_NORMALIZED_COORDS != 0,
            srgb: r.flags & TEX_SRGB != 0,
            border: r.border,
            mip: Mipmap {
                levels: 1,
                filter: if r.flags & TEX_MIPMAP_LINEAR != 0 {
                    FilterMode::Linear
                } else {
                    FilterMode::Point
                },
                bias: r.mip_bias,
                min_clamp: r.mip_min_clamp,
                max_clamp: r.mip_max_clamp,
            },
            view,
        })
    }
}

/// The memory a texture over linear or pitched device memory views: `(texels wide, rows,
/// pitch, bytes spanned from ptr)`. Checks CUDA's alignment rules and limits.
pub fn linear_extent(r: &TexObjectCreateReq, f: &Format) -> ExecResult<(u64, u64, u64, u64)> {
    if !r.ptr.is_multiple_of(TEXTURE_ALIGNMENT) || r.ptr == 0 {
        return Err(Status::INVALID_VALUE);
    }
    let texel = f.texel_bytes();
    match r.resource {
        RESOURCE_LINEAR => {
            let texels = r.size / texel;
            if texels == 0 || texels > MAX_LINEAR_TEXELS {
                return Err(Status::INVALID_VALUE);
            }
            Ok((texels, 1, r.size, texels * texel))
        }
        RESOURCE_PITCH2D => {
            if r.width == 0
                || r.height == 0
                || r.width > MAX_PITCH2D.0
                || r.height > MAX_PITCH2D.1
                || r.pitch > MAX_PITCH2D.2
                || !r.pitch.is_multiple_of(TEXTURE_PITCH_ALIGNMENT)
                || r.pitch < r.width * texel
            {
                return Err(Status::INVALID_VALUE);
            }
            let span = (r.height - 1)
                .checked_mul(r.pitch)
                .and_then(|s| s.checked_add(r.width * texel))
                .ok_or(Status::INVALID_VALUE)?;
            Ok((r.width, r.height, r.pitch, span))
        }
        _ => Err(Status::INVALID_VALUE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(bits: [u8; 4], kind: u32) -> ChannelFormat {
        ChannelFormat { bits, kind }
    }

    #[test]
    fn formats_are_checked_as_cuda_does() {
        assert!(Format::check(&fmt([32, 0, 0, 0], CHANNEL_FLOAT)).is_ok());
        assert!(Format::check(&fmt([8, 8, 8, 8], CHANNEL_UNSIGNED)).is_ok());
        assert_eq!(
            Format::check(&fmt([8, 8, 8, 8], CHANNEL_UNSIGNED)).map(|f| f.texel_bytes()),
            Ok(4)
        );
        for bad in [
            fmt([0; 4], CHANNEL_FLOAT),
            fmt([8, 8, 8, 0], CHANNEL_UNSIGNED),
            fmt([8, 16, 0, 0], CHANNEL_UNSIGNED),
            fmt([8, 0, 8, 0], CHANNEL_UNSIGNED),
            fmt([8, 0, 0, 0], CHANNEL_FLOAT),
            fmt([64, 0, 0, 0], CHANNEL_SIGNED),
            fmt([32, 0, 0, 0], 7),
        ] {
            assert_eq!(Format::check(&bad), Err(INVALID_CHANNEL), "{bad:?}");
        }
    }

    #[test]
    fn boxes_stay_inside_the_array() {
        let shape = ArrayShape::check(&ArrayCreateReq {
            format: fmt([32, 0, 0, 0], CHANNEL_FLOAT),
            width: 16,
            height: 8,
            ..Default::default()
        })
        .unwrap();
        assert_eq!((shape.dims, shape.row_bytes(), shape.bytes()), (2, 64, 512));
        let ok = MemcpyArrayReq {
            x: 4,
            y: 2,
            width: 60,
            height: 6,
            depth: 1,
            pitch: 64,
            ..Default::default()
        };
        assert_eq!(shape.check_box(&ok), Ok(5 * 64 + 60));
        for bad in [
            MemcpyArrayReq { x: 8, ..ok },
            MemcpyArrayReq { y: 3, ..ok },
            MemcpyArrayReq { z: 1, ..ok },
            MemcpyArrayReq { x: u64::MAX, ..ok },
            MemcpyArrayReq {
                flags: 1 << 9,
                ..ok
            },
        ] {
            assert_eq!(shape.check_box(&bad), Err(Status::INVALID_VALUE), "{bad:?}");
        }
        assert_eq!(
            shape.check_box(&MemcpyArrayReq { pitch: 8, ..ok }),
            Err(Status::INVALID_PITCH)
        );
        // Guest-sized pitches saturate rather than overflow.
        let huge = MemcpyArrayReq {
            pitch: u64::MAX,
            ..ok
        };
        assert_eq!(shape.check_box(&huge), Ok(u64::MAX));
    }

    #[test]
    fn resource_views_keep_texel_sizes_and_stay_within_levels_and_layers() {
        let shape = |flags, (width, height, depth)| {
            ArrayShape::check(&ArrayCreateReq {
                flags,
                format: fmt([32, 0, 0, 0], CHANNEL_FLOAT),
                width,
                height,
                depth,
                ..Default::default()
            })
            .unwrap()
        };
        let view = |format: Option<ChannelFormat>, levels, layers| ResourceView {
            format: format.map(|f| Format::check(&f).unwrap()),
            levels,
            layers,
        };
        let plain = shape(0, (8, 8, 0));
        // No view: everything.
        let all = ResourceView::apply(None, &plain, 4).unwrap();
        assert_eq!((all.first_level, all.levels, all.layers), (0, 4, 1));
        // Levels 1..=2; another format of four bytes; not of two.
        let v = ResourceView::apply(
            Some(&view(Some(fmt([8; 4], CHANNEL_UNSIGNED)), [1, 2], [0, 0])),
            &plain,
            4,
        )
        .unwrap();
        assert_eq!((v.first_level, v.levels, v.format.channels), (1, 2, 4));
        for (f, levels, layers) in [
            (Some(fmt([16, 0, 0, 0], CHANNEL_FLOAT)), [0, 0], [0, 0]),
            (None, [2, 1], [0, 0]),
            (None, [0, 4], [0, 0]),
            (None, [0, 0], [0, 1]),
        ] {
            assert_eq!(
                ResourceView::apply(Some(&view(f, levels, layers)), &plain, 4),
                Err(Status::INVALID_VALUE),
                "{levels:?} {layers:?}"
            );
        }
        // Layers of a layered array; whole cubes of a layered cube map.
        let layered = shape(ARRAY_LAYERED, (8, 8, 5));
        let v = ResourceView::apply(Some(&view(None, [0, 0], [1, 3])), &layered, 1).unwrap();
        assert_eq!((v.first_layer, v.layers), (1, 3));
        assert!(ResourceView::apply(Some(&view(None, [0, 0], [1, 5])), &layered, 1).is_err());
        let cubes = shape(ARRAY_LAYERED | ARRAY_CUBEMAP, (8, 8, 12));
        let v = ResourceView::apply(Some(&view(None, [0, 0], [6, 11])), &cubes, 1).unwrap();
        assert_eq!((v.first_layer, v.layers), (6, 6));
        assert!(ResourceView::apply(Some(&view(None, [0, 0], [1, 6])), &cubes, 1).is_err());
        // Some layers of several levels of a layered mipmapped array: not supported.
        assert_eq!(
            ResourceView::apply(Some(&view(None, [0, 1], [1, 3])), &layered, 3),
            Err(Status::NOT_SUPPORTED)
        );
    }

    #[test]
    fn array_extents_have_limits() {
        let req = |width, height, depth| ArrayCreateReq {
            format: fmt([8, 0, 0, 0], CHANNEL_UNSIGNED),
            width,
            height,
            depth,
            ..Default::default()
        };
        assert_eq!(ArrayShape::check(&req(4, 0, 0)).map(|s| s.dims), Ok(1));
        assert_eq!(ArrayShape::check(&req(4, 4, 4)).map(|s| s.dims), Ok(3));
        for (w, h, d) in [
            (0, 1, 1),
            (4, 0, 4),
            (MAX_1D_WIDTH + 1, 0, 0),
            (MAX_3D + 1, 2, 2),
        ] {
            assert_eq!(ArrayShape::check(&req(w, h, d)), Err(Status::INVALID_VALUE));
        }
        // Layered: the depth counts layers; cube maps: square faces, six per layer.
        let with = |flags, (w, h, d)| ArrayCreateReq {
            flags,
            ..req(w, h, d)
        };
        let shape = |f, e| ArrayShape::check(&with(f, e)).map(|s| (s.dims, s.height, s.depth));
        assert_eq!(shape(ARRAY_LAYERED, (4, 4, 3)), Ok((2, 4, 3)));
        assert_eq!(shape(ARRAY_LAYERED, (4, 0, 3)), Ok((1, 1, 3)));
        assert_eq!(shape(ARRAY_CUBEMAP, (4, 4, 6)), Ok((2, 4, 6)));
        assert_eq!(
            shape(ARRAY_CUBEMAP | ARRAY_LAYERED, (4, 4, 12)),
            Ok((2, 4, 12))
        );
        for (f, e) in [
            (ARRAY_LAYERED, (4, 4, 0)),
            (ARRAY_LAYERED, (4, 4, MAX_LAYERS + 1)),
            (ARRAY_CUBEMAP, (4, 5, 6)),
            (ARRAY_CUBEMAP, (4, 4, 12)),
            (ARRAY_CUBEMAP | ARRAY_LAYERED, (4, 4, 9)),
            (ARRAY_LAYERED | ARRAY_TEXTURE_GATHER, (4, 4, 2)),
        ] {
            assert_eq!(
                ArrayShape::check(&with(f, e)),
                Err(Status::INVALID_VALUE),
                "{f:#x} {e:?}"
            );
        }
        // Sparse and deferred-mapping arrays are not supported.
        assert_eq!(
            ArrayShape::check(&with(0x40, (4, 4, 4))),
            Err(Status::NOT_SUPPORTED)
        );
    }
}
