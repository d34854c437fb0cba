// SPDX-License-Identifier: Apache-2.0 OR MIT
//! CUDA arrays: `cudaMallocArray`, `cudaMalloc3DArray`, `cudaFreeArray`, their queries, and
//! copies into and out of them (`cudaMemcpy2DToArray`, `cudaMemcpy2DFromArray`,
//! `cudaMemcpyToArray`, ..., and `cudaMemcpy3D` with an array on either side).
//!
//! The backend owns an array's memory and layout; the library keeps its shape (for the
//! queries and to turn element positions into bytes). A copy between an array and device
//! memory is one `MemcpyArray` request. A copy between an array and host memory goes
//! through a temporary device buffer (the host copy as the linear copies do it, then one
//! `MemcpyArray`), so its async variants wait for the copy. Array copies are not captured
//! into graphs: on a capturing stream they fail with `cudaErrorStreamCaptureUnsupported`.
//! Mipmapped arrays (`cudaMallocMipmappedArray`) live in the backend too; the array
//! handle of a level (`cudaGetMipmappedArrayLevel`) serves copies, surfaces and textures as
//! any array does, and goes with its mipmapped array. Sparse and deferred-mapping arrays
//! are not supported.

use crate::client::{self, Client};
use crate::core::alloc::{free_device, malloc_device};
use crate::core::memory::{On, copy_2d, stream_of};
use crate::error::{Error, Result};
use crate::ffi::memcpy_kind;
use crate::state;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::{LazyLock, Mutex};
use vcuda_protocol::{
    ARRAY_COPY_ASYNC, ARRAY_COPY_TO_ARRAY, ARRAY_CUBEMAP, ARRAY_LAYERED, ArrayCreateReq,
    ChannelFormat, HandleReq, HandleResp, MemcpyArrayReq, MipmappedArrayCreateReq,
    MipmappedArrayLevelReq, STREAM_LEGACY, ops, status,
};

/// `cudaArray_t`: the backend's array handle.
pub type cudaArray_t = *mut c_void;

/// `struct cudaChannelFormatDesc`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct cudaChannelFormatDesc {
    pub(crate) x: c_int,
    pub(crate) y: c_int,
    pub(crate) z: c_int,
    pub(crate) w: c_int,
    pub(crate) f: c_int,
}

/// `cudaErrorInvalidChannelDescriptor`.
pub(crate) const INVALID_CHANNEL: Error = Error(status::INVALID_CHANNEL_DESCRIPTOR);

impl cudaChannelFormatDesc {
    /// The wire form (the backend checks the combination).
    pub(crate) fn to_wire(self) -> Result<ChannelFormat> {
        let bits = |v: c_int| u8::try_from(v).map_err(|_| INVALID_CHANNEL);
        Ok(ChannelFormat {
            bits: [bits(self.x)?, bits(self.y)?, bits(self.z)?, bits(self.w)?],
            kind: u32::try_from(self.f).map_err(|_| INVALID_CHANNEL)?,
        })
    }

    /// Bytes per texel.
    pub(crate) fn texel_bytes(&self) -> u64 {
        [self.x, self.y, self.z, self.w]
            .iter()
            .map(|&b| b.max(0) as u64)
            .sum::<u64>()
            / 8
    }
}

/// What the library keeps of an array.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ArrayInfo {
    pub desc: cudaChannelFormatDesc,
    /// As created (0 for absent dimensions).
    pub extent: [u64; 3],
    pub flags: u32,
}

impl ArrayInfo {
    pub(crate) fn texel(&self) -> u64 {
        self.desc.texel_bytes()
    }
}

pub(crate) static ARRAYS: LazyLock<Mutex<HashMap<u64, ArrayInfo>>> = LazyLock::new(Mutex::default);

pub(crate) fn arrays() -> std::sync::MutexGuard<'static, HashMap<u64, ArrayInfo>> {
    ARRAYS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The shape of array `a`.
pub(crate) fn info(a: cudaArray_t) -> Result<ArrayInfo> {
    arrays()
        .get(&(a as u64))
        .copied()
        .ok_or(Error::INVALID_HANDLE)
}

/// The client and the request for an array (or a mipmapped array's level 0) of `extent`,
/// after the checks every allocation makes (sticky error, capture, device).
pub(crate) fn create_req(
    desc: &cudaChannelFormatDesc,
    extent: [u64; 3],
    flags: u32,
) -> Result<(&'static Client, ArrayCreateReq)> {
    let c = client::client()?;
    c.check_sticky()?;
    crate::core::capture::check_unsafe()?;
    let device = c.check_device(state::device())?;
    let req = ArrayCreateReq {
        device,
        flags,
        format: desc.to_wire()?,
        width: extent[0],
        height: extent[1],
        depth: extent[2],
    };
    Ok((c, req))
}

/// Creates an array; returns its handle.
pub(crate) fn create(desc: cudaChannelFormatDesc, extent: [u64; 3], flags: u32) -> Result<u64> {
    let (c, req) = create_req(&desc, extent, flags)?;
    let r: HandleResp = c.call::<ops::ArrayCreate>(&req)?;
    arrays().insert(
        r.handle,
        ArrayInfo {
            desc,
            extent,
            flags,
        },
    );
    Ok(r.handle)
}

/// `cudaMipmappedArray_t`: the backend's mipmapped array handle.
pub type cudaMipmappedArray_t = *mut c_void;

/// What the library keeps of a mipmapped array.
#[derive(Clone, Debug)]
pub(crate) struct Mipmapped {
    /// Level 0.
    pub(crate) level0: ArrayInfo,
    /// The level handles given out, by level.
    pub(crate) levels: HashMap<u32, u64>,
}

pub(crate) static MIPMAPPED: LazyLock<Mutex<HashMap<u64, Mipmapped>>> =
    LazyLock::new(Mutex::default);

pub(crate) fn mipmapped() -> std::sync::MutexGuard<'static, HashMap<u64, Mipmapped>> {
    MIPMAPPED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Level 0 of mipmapped array `m`.
pub(crate) fn mipmapped_info(m: u64) -> Result<ArrayInfo> {
    mipmapped()
        .get(&m)
        .map(|m| m.level0)
        .ok_or(Error::INVALID_HANDLE)
}

/// Creates a mipmapped array of (at most) `levels` levels whose level 0 is `extent`;
/// returns its handle.
pub(crate) fn mipmapped_create(
    desc: cudaChannelFormatDesc,
    extent: [u64; 3],
    levels: u32,
    flags: u32,
) -> Result<u64> {
    let (c, array) = create_req(&desc, extent, flags)?;
    let r: HandleResp = c.call::<ops::MipmappedArrayCreate>(&MipmappedArrayCreateReq {
        array,
        levels,
        reserved: 0,
    })?;
    let level0 = ArrayInfo {
        desc,
        extent,
        flags,
    };
    mipmapped().insert(
        r.handle,
        Mipmapped {
            level0,
            levels: HashMap::new(),
        },
    );
    Ok(r.handle)
}

/// The array handle of level `level` of mipmapped array `m`.
pub(crate) fn mipmapped_level(m: u64, level: u32) -> Result<u64> {
    let c = client::client()?;
    let level0 = mipmapped_info(m)?;
    let r: HandleResp = c.call::<ops::MipmappedArrayGetLevel>(&MipmappedArrayLevelReq {
        handle: m,
        level,
        reserved: 0,
    })?;
    // Halved `level` times, at least 1; absent dimensions stay 0, layers and faces stay.
    let half = |n: u64| n.checked_shr(level).unwrap_or(0).max(1);
    let keep = level0.flags & (ARRAY_LAYERED | ARRAY_CUBEMAP) != 0;
    let [w, h, d] = level0.extent;
    let extent = [
        half(w),
        if h == 0 { 0 } else { half(h) },
        if d == 0 || keep { d } else { half(d) },
    ];
    arrays().insert(r.handle, ArrayInfo { extent, ..level0 });
    if let Some(mm) = mipmapped().get_mut(&m) {
        mm.levels.insert(level, r.handle);
    }
    Ok(r.handle)
}

/// Destroys a mipmapped array and its levels (null: nothing).
pub(crate) fn mipmapped_destroy(m: u64) -> Result<()> {
    if m == 0 {
        return Ok(());
    }
    let c = client::client()?;
    crate::core::capture::check_unsafe()?;
    mipmapped_info(m)?;
    c.call::<ops::MipmappedArrayDestroy>(&HandleReq { handle: m })?;
    if let Some(mm) = mipmapped().remove(&m) {
        let mut a = arrays();
        for h in mm.levels.values() {
            a.remove(h);
        }
    }
    Ok(())
}

/// Destroys an array (null: nothing).
pub(crate) fn destroy(a: u64) -> Result<()> {
    if a == 0 {
        return Ok(());
    }
    let c = client::client()?;
    crate::core::capture::check_unsafe()?;
    if !arrays().contains_key(&a) {
        return Err(Error::INVALID_HANDLE);
    }
    c.call::<ops::ArrayDestroy>(&HandleReq { handle: a })?;
    arrays().remove(&a);
    Ok(())
}

/// The linear side of an array copy: `ptr`, `pitch` bytes between rows, `rows` rows between
/// slices.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Linear {
    pub ptr: u64,
    pub pitch: u64,
    pub rows: u64,
}

/// A box of an array: origin (x in bytes, y, z in texels) and size (width in bytes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ArrayBox {
    pub array: u64,
    pub origin: [u64; 3],
    pub size: [u64; 3],
}

/// Copies `b` between its array and `lin` (`to_array`: into the array). `kind` is the
/// `cudaMemcpyKind` as the caller gave it (host or device for the linear side); `stream`
/// `None` for the synchronous calls.
pub(crate) fn copy(
    c: &Client,
    b: ArrayBox,
    lin: Linear,
    to_array: bool,
    kind: c_int,
    stream: Option<u64>,
) -> Result<()> {
    c.check_sticky()?;
    if stream.is_none() {
        // A synchronous copy is the legacy stream's: not while a blocking stream captures.
        crate::core::capture::check_legacy_sync(c)?;
    }
    if b.size.contains(&0) {
        return Ok(());
    }
    let device_side = match kind {
        memcpy_kind::D2D => true,
        memcpy_kind::H2D if to_array => false,
        memcpy_kind::D2H if !to_array => false,
        memcpy_kind::DEFAULT => c.mirror.is_device(lin.ptr),
        _ => return Err(Error::INVALID_MEMCPY_DIRECTION),
    };
    if device_side {
        return request(c, b, lin, to_array, stream);
    }
    if lin.ptr == 0 {
        return Err(Error::INVALID_VALUE);
    }
    // Through a packed device buffer.
    let [w, h, d] = b.size;
    let slice = w.checked_mul(h).ok_or(Error::INVALID_VALUE)?;
    let total = slice.checked_mul(d).ok_or(Error::INVALID_VALUE)?;
    let tmp = malloc_device(
        c,
        usize::try_from(total).map_err(|_| Error::MEMORY_ALLOCATION)?,
    )?;
    let packed = Linear {
        ptr: tmp,
        pitch: w,
        rows: h,
    };
    let host_slice = lin
        .pitch
        .checked_mul(lin.rows)
        .ok_or(Error::INVALID_VALUE)?;
    let host_at = |z: u64| {
        host_slice
            .checked_mul(z)
            .and_then(|o| lin.ptr.checked_add(o))
            .ok_or(Error::INVALID_VALUE)
    };
    let r = (|| {
        if to_array {
            for z in 0..d {
                let src = host_at(z)?;
                copy_2d(
                    tmp + z * slice,
                    w,
                    src,
                    lin.pitch,
                    w,
                    h,
                    memcpy_kind::H2D,
                    stream,
                )?;
            }
            request(c, b, packed, true, stream)
        } else {
            request(c, b, packed, false, stream)?;
            for z in 0..d {
                let dst = host_at(z)?;
                copy_2d(
                    dst,
                    lin.pitch,
                    tmp + z * slice,
                    w,
                    w,
                    h,
                    memcpy_kind::D2H,
                    stream,
                )?;
            }
            Ok(())
        }
    })();
    // cudaFree waits for the work that uses the buffer.
    let f = free_device(c, tmp);
    r.and(f)
}

/// One `MemcpyArray` request.
pub(crate) fn request(
    c: &Client,
    b: ArrayBox,
    lin: Linear,
    to_array: bool,
    stream: Option<u64>,
) -> Result<()> {
    let mut flags = if to_array { ARRAY_COPY_TO_ARRAY } else { 0 };
    if stream.is_some() {
        flags |= ARRAY_COPY_ASYNC;
    }
    let req = MemcpyArrayReq {
        array: b.array,
        x: b.origin[0],
        y: b.origin[1],
        z: b.origin[2],
        ptr: lin.ptr,
        pitch: lin.pitch,
        rows: lin.rows,
        width: b.size[0],
        height: b.size[1],
        depth: b.size[2],
        stream: stream.unwrap_or(STREAM_LEGACY),
        flags,
        reserved: 0,
    };
    if stream.is_some() {
        c.post::<ops::MemcpyArray>(&req)
    } else {
        c.call::<ops::MemcpyArray>(&req)
    }
}

/// `cudaMemcpy2DToArray` and `cudaMemcpy2DFromArray`: `height` rows of `width` bytes at
/// (`w_offset` bytes, `h_offset`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn copy_2d_array(
    a: cudaArray_t,
    w_offset: usize,
    h_offset: usize,
    ptr: u64,
    pitch: usize,
    width: usize,
    height: usize,
    to_array: bool,
    kind: c_int,
    on: On,
) -> Result<()> {
    let c = client::client()?;
    info(a)?;
    if height > 1 && pitch < width {
        return Err(Error::INVALID_PITCH);
    }
    let stream = stream_of(c, on)?;
    let b = ArrayBox {
        array: a as u64,
        origin: [w_offset as u64, h_offset as u64, 0],
        size: [width as u64, height as u64, 1],
    };
    let lin = Linear {
        ptr,
        pitch: pitch.max(width) as u64,
        rows: height as u64,
    };
    copy(c, b, lin, to_array, kind, stream)
}

/// The deprecated `cudaMemcpyToArray` / `cudaMemcpyFromArray`: `count` bytes from
/// (`w_offset`, `h_offset`) on, row after row.
#[allow(clippy::too_many_arguments)]
pub(crate) fn copy_linear_array(
    a: cudaArray_t,
    w_offset: usize,
    h_offset: usize,
    ptr: u64,
    count: usize,
    to_array: bool,
    kind: c_int,
    on: On,
) -> Result<()> {
    let c = client::client()?;
    let i = info(a)?;
    let stream = stream_of(c, on)?;
    let row = i.extent[0].saturating_mul(i.texel());
    let (mut x, mut y, mut left, mut p) = (w_offset as u64, h_offset as u64, count as u64, ptr);
    if x > row {
        return Err(Error::INVALID_VALUE);
    }
    while left > 0 {
        // The rest of this row, or whole rows at once from a row start.
        let (width, height) = if x == 0 && left >= row && row > 0 {
            (row, left / row)
        } else {
            ((row - x).min(left), 1)
        };
        if width == 0 {
            return Err(Error::INVALID_VALUE);
        }
        let b = ArrayBox {
            array: a as u64,
            origin: [x, y, 0],
            size: [width, height, 1],
        };
        copy(
            c,
            b,
            Linear {
                ptr: p,
                pitch: width,
                rows: height,
            },
            to_array,
            kind,
            stream,
        )?;
        let n = width * height;
        left -= n;
        p = p.checked_add(n).ok_or(Error::INVALID_VALUE)?;
        x += width;
        if x == row {
            x = 0;
        }
        y += if height > 1 {
            height
        } else {
            u64::from(x == 0)
        };
    }
    Ok(())
}

/// `cudaMemcpyArrayToArray`: `count` bytes from `src` at byte column and row `src_at` to
/// `dst` at `dst_at`, each side read row after row from its origin (a row's end continues
/// at the next row's start), as the deprecated 1-D array copies do.
pub(crate) fn array_to_array_linear(
    dst: cudaArray_t,
    dst_at: [u64; 2],
    src: cudaArray_t,
    src_at: [u64; 2],
    count: u64,
    kind: c_int,
) -> Result<()> {
    let (di, si) = (info(dst)?, info(src)?);
    let rows = [
        di.extent[0].saturating_mul(di.texel()),
        si.extent[0].saturating_mul(si.texel()),
    ];
    let (mut d, mut s, mut left) = (dst_at, src_at, count);
    if d[0] > rows[0] || s[0] > rows[1] {
        return Err(Error::INVALID_VALUE);
    }
    while left > 0 {
        // Whole rows at once where both sides start rows of one length; else the rest of
        // the shorter row.
        let (width, height) = if d[0] == 0 && s[0] == 0 && rows[0] == rows[1] && left >= rows[0] {
            (rows[0], left / rows[0])
        } else {
            ((rows[0] - d[0]).min(rows[1] - s[0]).min(left), 1)
        };
        if width == 0 {
            return Err(Error::INVALID_VALUE);
        }
        array_to_array(dst, d, src, s, width, height, kind, None)?;
        left -= width * height;
        for (at, row) in [(&mut d, rows[0]), (&mut s, rows[1])] {
            if height > 1 {
                at[1] += height;
            } else {
                at[0] += width;
                if at[0] == row {
                    at[0] = 0;
                    at[1] += 1;
                }
            }
        }
    }
    Ok(())
}

/// Array to array, through a device buffer, on `stream` (`None`: synchronous).
#[allow(clippy::too_many_arguments)]
pub(crate) fn array_to_array(
    dst: cudaArray_t,
    dst_origin: [u64; 2],
    src: cudaArray_t,
    src_origin: [u64; 2],
    width: u64,
    height: u64,
    kind: c_int,
    stream: Option<u64>,
) -> Result<()> {
    let c = client::client()?;
    info(dst)?;
    info(src)?;
    if !matches!(kind, memcpy_kind::D2D | memcpy_kind::DEFAULT) {
        return Err(Error::INVALID_MEMCPY_DIRECTION);
    }
    if width == 0 || height == 0 {
        return Ok(());
    }
    let total = width.checked_mul(height).ok_or(Error::INVALID_VALUE)?;
    let tmp = malloc_device(
        c,
        usize::try_from(total).map_err(|_| Error::MEMORY_ALLOCATION)?,
    )?;
    let lin = Linear {
        ptr: tmp,
        pitch: width,
        rows: height,
    };
    let bx = |a: cudaArray_t, o: [u64; 2]| ArrayBox {
        array: a as u64,
        origin: [o[0], o[1], 0],
        size: [width, height, 1],
    };
    let r = copy(c, bx(src, src_origin), lin, false, memcpy_kind::D2D, stream)
        .and_then(|()| copy(c, bx(dst, dst_origin), lin, true, memcpy_kind::D2D, stream));
    let f = free_device(c, tmp);
    r.and(f)
}

/// Copies `n` bytes of the first row of array `src` from byte `src_x` to the first row of
/// array `dst` at byte `dst_x`, in legacy-stream order (`cuMemcpyAtoA`; the caller checks
/// the bounds and element sizes).
pub(crate) fn copy_row(
    dst: cudaArray_t,
    dst_x: u64,
    src: cudaArray_t,
    src_x: u64,
    n: u64,
) -> Result<()> {
    array_to_array(
        dst,
        [dst_x, 0],
        src,
        [src_x, 0],
        n,
        1,
        memcpy_kind::D2D,
        None,
    )
}

/// `cudaMemcpy3D[Async]` with an array on one side (`src_array` / `dst_array`). Positions
/// and the extent are in the array's texels, the linear side's position in bytes.
pub(crate) fn copy_3d(p: &crate::core::graph_node::cudaMemcpy3DParms, on: On) -> Result<()> {
    let c = client::client()?;
    let stream = stream_of(c, on)?;
    let (a, apos, side, spos, to_array) = match (p.src_array.is_null(), p.dst_array.is_null()) {
        (true, false) => (p.dst_array, p.dst_pos, p.src_ptr, p.src_pos, true),
        (false, true) => (p.src_array, p.src_pos, p.dst_ptr, p.dst_pos, false),
        (false, false) => {
            // Both arrays: through a device buffer, one slice at z = 0 only.
            if p.extent.depth > 1 || p.src_pos.z != 0 || p.dst_pos.z != 0 {
                return Err(Error::NOT_SUPPORTED);
            }
            let ts = info(p.src_array)?.texel();
            let td = info(p.dst_array)?.texel();
            if ts != td {
                return Err(Error::INVALID_VALUE);
            }
            return array_to_array(
                p.dst_array,
                [p.dst_pos.x as u64 * td, p.dst_pos.y as u64],
                p.src_array,
                [p.src_pos.x as u64 * ts, p.src_pos.y as u64],
                p.extent.width as u64 * ts,
                p.extent.height as u64,
                p.kind,
                stream,
            );
        }
        (true, true) => return Err(Error::INVALID_VALUE),
    };
    let texel = info(a)?.texel();
    let width = (p.extent.width as u64)
        .checked_mul(texel)
        .ok_or(Error::INVALID_VALUE)?;
    let e = &p.extent;
    let b = ArrayBox {
        array: a as u64,
        origin: [
            (apos.x as u64)
                .checked_mul(texel)
                .ok_or(Error::INVALID_VALUE)?,
            apos.y as u64,
            apos.z as u64,
        ],
        size: [width, e.height as u64, e.depth as u64],
    };
    let pitch = side.pitch as u64;
    let rows = side.ysize as u64;
    // The linear side's position: x in bytes, y rows, z slices.
    let off = (spos.z as u64)
        .checked_mul(rows)
        .and_then(|r| r.checked_add(spos.y as u64))
        .and_then(|r| r.checked_mul(pitch))
        .and_then(|o| o.checked_add(spos.x as u64))
        .ok_or(Error::INVALID_VALUE)?;
    let ptr = (side.ptr as u64)
        .checked_add(off)
        .ok_or(Error::INVALID_VALUE)?;
    if side.ptr.is_null()
        || (e.height > 1 || e.depth > 1) && pitch < width
        || e.depth > 1 && rows < e.height as u64
    {
        return Err(Error::INVALID_VALUE);
    }
    let lin = Linear {
        ptr,
        pitch: pitch.max(width),
        rows: rows.max(e.height as u64),
    };
    copy(c, b, lin, to_array, p.kind, stream)
}

/// Bytes per element of a plain channel format (1, 2 or 4 channels of 8, 16 or 32 bits,
/// all the same size, the present ones first; float channels of 16 or 32 bits), or
/// `cudaErrorInvalidChannelDescriptor`.
pub(crate) fn element_bytes(d: &cudaChannelFormatDesc) -> Result<u64> {
    let bits = [d.x, d.y, d.z, d.w];
    let n = bits.iter().take_while(|&&b| b != 0).count();
    let size = d.x;
    let plain = matches!(size, 8 | 16 | 32)
        && matches!(n, 1 | 2 | 4)
        && bits[..n].iter().all(|&b| b == size)
        && bits[n..].iter().all(|&b| b == 0);
    let kind = match d.f {
        // Signed, unsigned.
        0 | 1 => true,
        // Float: half and single.
        2 => size != 8,
        _ => false,
    };
    if plain && kind {
        Ok(n as u64 * size as u64 / 8)
    } else {
        Err(INVALID_CHANNEL)
    }
}

impl crate::entry::FfiReturn for cudaChannelFormatDesc {
    fn on_panic() -> Self {
        // cudaChannelFormatKindNone.
        cudaChannelFormatDesc {
            f: 3,
            ..Default::default()
        }
    }
}

/// `cudaArrayGetMemoryRequirements` (`req` is only checked for null).
pub(crate) fn array_get_memory_requirements(
    req: *mut c_void,
    a: cudaArray_t,
    device: c_int,
) -> Result<()> {
    no_memory_requirements(req, device, || info(a).map(drop))
}

/// `cudaMipmappedArrayGetMemoryRequirements`, as for arrays.
pub(crate) fn mipmapped_get_memory_requirements(
    req: *mut c_void,
    m: u64,
    device: c_int,
) -> Result<()> {
    no_memory_requirements(req, device, || mipmapped_info(m).map(drop))
}

/// The memory requirements of an array that `exists` checks: only arrays made with
/// cudaArrayDeferredMapping have them (NVIDIA's runtime answers cudaErrorInvalidValue for
/// the others, measured on an H100), and vcuda makes none (that flag is refused as not
/// supported).
fn no_memory_requirements(
    req: *mut c_void,
    device: c_int,
    exists: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let c = client::client()?;
    if req.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    exists()?;
    c.check_device(device)?;
    Err(Error::INVALID_VALUE)
}
