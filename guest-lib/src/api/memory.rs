// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Memory: device allocations, copies, memsets, page-locked host memory, pointer queries
//! and symbol copies.

use std::ffi::{c_int, c_void};

use vcuda_protocol::region::Region;
use vcuda_protocol::{
    COPY_ASYNC, DeviceReq, MAX_SEGMENT_LEN, MallocReq, MemcpyDtoDReq, MemcpyDtoHReq, MemcpyHtoDReq,
    MemsetReq, PtrReq, PtrResp, ops, status,
};

use super::graph::{Copy3D, Kind as NodeKind, Memset};
use super::stream::{capture_stream_handle, stream_handle};
use crate::client::{self, Client};
use crate::error::{Error, Result};
use crate::ffi::{
    STREAM_LEGACY, cudaPointerAttributes, cudaPointerAttributesV12, cudaStream_t, host_slice,
    host_slice_mut, memcpy_kind, memory_type, write_out,
};
use crate::mirror::{Kind, Range};
use crate::shared::{self, HostCopy};
use crate::{coherent, registry, state};
use vcuda_protocol::graph::NodeWork;

/// `cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined`.
const HOST_ALLOC_FLAGS: u32 = 0x1 | 0x2 | 0x4;
/// `cudaHostAllocPortable` / `cudaHostRegisterPortable`.
const PORTABLE: u32 = 0x1;
/// `cudaHostAllocMapped` / `cudaHostRegisterMapped`.
const MAPPED: u32 = 0x2;
/// `cudaHostRegisterPortable | Mapped | IoMemory | ReadOnly`.
const HOST_REGISTER_FLAGS: u32 = 0x1 | 0x2 | 0x4 | 0x8;

fn malloc(c: &Client, size: usize) -> Result<u64> {
    c.check_sticky()?;
    let device = c.check_device(state::device())?;
    let r: PtrResp = c.call::<ops::Malloc>(&MallocReq {
        device,
        flags: 0,
        size: size as u64,
    })?;
    if r.ptr != 0 {
        c.mirror.insert(Range {
            base: r.ptr,
            len: size as u64,
            kind: Kind::Device,
            device: device as i32,
        });
    }
    Ok(r.ptr)
}

/// A pitched allocation of `height` rows of `width` bytes (`cudaMallocPitch`,
/// `cudaMalloc3D`): the pointer and the pitch, a multiple of the device's texture pitch
/// alignment.
pub(crate) fn malloc_pitch(c: &Client, width: usize, height: usize) -> Result<(u64, usize)> {
    super::capture::check_unsafe()?;
    let info = c.device_info(state::device())?;
    let align = info
        .attr(vcuda_protocol::attr::TEXTURE_PITCH_ALIGNMENT)
        .unwrap_or(512)
        .max(1) as usize;
    let p = width
        .checked_next_multiple_of(align)
        .ok_or(Error::INVALID_VALUE)?;
    let size = p.checked_mul(height).ok_or(Error::MEMORY_ALLOCATION)?;
    Ok((malloc(c, size)?, p))
}

/// A device allocation of `size` bytes (for the memory pools).
pub(crate) fn malloc_device(c: &Client, size: usize) -> Result<u64> {
    malloc(c, size)
}

/// Frees a device allocation now (for the memory pools).
pub(crate) fn free_device(c: &Client, ptr: u64) -> Result<()> {
    free(c, ptr)
}

/// Frees a device allocation once the session's earlier calls have run, without waiting.
pub(crate) fn free_device_posted(c: &Client, ptr: u64) -> Result<()> {
    if super::ipc::is_open(ptr) {
        // Memory opened through an IPC handle is closed, not freed.
        return Err(Error::INVALID_VALUE);
    }
    c.mirror
        .remove(ptr, |k| k == Kind::Device)
        .ok_or(Error::INVALID_VALUE)?;
    c.post::<ops::Free>(&PtrReq { ptr })
}

fn free(c: &Client, ptr: u64) -> Result<()> {
    if super::pool::is_import(ptr) {
        // A pointer imported from another process's pool: closed.
        return super::pool::close_import(ptr);
    }
    if super::ipc::is_open(ptr) {
        // Memory opened through an IPC handle is closed, not freed.
        return Err(Error::INVALID_VALUE);
    }
    if super::graph_mem::owns(ptr) {
        // Graph memory is the graphs' to free (see `graph_mem`): freed for the program.
        super::graph_mem::mark(ptr, false);
        return Ok(());
    }
    if super::managed::free(c, ptr)? {
        return Ok(());
    }
    c.call::<ops::Free>(&PtrReq { ptr })?;
    c.mirror.remove(ptr, |k| k == Kind::Device);
    Ok(())
}

/// The direction of a copy, after resolving `cudaMemcpyDefault`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dir {
    H2H,
    H2D,
    D2H,
    D2D,
}

fn direction(c: &Client, dst: u64, src: u64, kind: c_int) -> Result<Dir> {
    // Managed memory the library keeps coherent is device memory with a cache here: copies
    // take the device side whatever the kind says, as CUDA copies managed memory wherever
    // it lies.
    let (to_dev, from_dev) = match kind {
        memcpy_kind::H2H => (false, false),
        memcpy_kind::H2D => (true, false),
        memcpy_kind::D2H => (false, true),
        memcpy_kind::D2D => (true, true),
        memcpy_kind::DEFAULT => (c.mirror.is_device(dst), c.mirror.is_device(src)),
        _ => return Err(Error::INVALID_MEMCPY_DIRECTION),
    };
    Ok(
        match (
            to_dev || coherent::owns(dst),
            from_dev || coherent::owns(src),
        ) {
            (false, false) => Dir::H2H,
            (true, false) => Dir::H2D,
            (false, true) => Dir::D2H,
            (true, true) => Dir::D2D,
        },
    )
}

/// A 2-D copy: `height` rows of `width` bytes.
#[derive(Clone, Copy, Debug)]
struct Copy2D {
    dst: u64,
    dpitch: u64,
    src: u64,
    spitch: u64,
    width: u64,
    height: u64,
}

impl Copy2D {
    fn linear(dst: u64, src: u64, count: u64) -> Self {
        Self {
            dst,
            dpitch: count,
            src,
            spitch: count,
            width: count,
            height: 1,
        }
    }

    /// Checks both sides (pitches, and every byte addressable).
    fn check(&self) -> Result<()> {
        self.side(self.dst, self.dpitch)?;
        self.side(self.src, self.spitch)?;
        Ok(())
    }

    /// One side of the copy as a checked region.
    fn side(&self, base: u64, pitch: u64) -> Result<Region> {
        region(base, pitch, self.width, self.height)
    }

    /// Whether the destination (`dst`) or the source lies in one device allocation the
    /// library knows.
    fn in_device_memory(&self, c: &Client, dst: bool) -> Result<bool> {
        let (base, pitch) = if dst {
            (self.dst, self.dpitch)
        } else {
            (self.src, self.spitch)
        };
        Ok(c.mirror
            .is_device_range(base, self.side(base, pitch)?.span()))
    }

    /// The copy as a device-to-device request.
    fn dtod(&self, stream: u64, flags: u32) -> MemcpyDtoDReq {
        MemcpyDtoDReq {
            dst: self.dst,
            dpitch: self.dpitch,
            src: self.src,
            spitch: self.spitch,
            width: self.width,
            height: self.height,
            stream,
            flags,
            reserved: 0,
        }
    }

    /// The copy between host and device memory, the device side being the destination if
    /// `to_device`.
    fn host_copy(&self, to_device: bool, stream: u64, flags: u32, dev_allocated: bool) -> HostCopy {
        let ((dev, dev_pitch), (host, host_pitch)) = if to_device {
            ((self.dst, self.dpitch), (self.src, self.spitch))
        } else {
            ((self.src, self.spitch), (self.dst, self.dpitch))
        };
        HostCopy {
            dev,
            dev_pitch,
            host,
            host_pitch,
            width: self.width,
            height: self.height,
            stream,
            flags,
            dev_allocated,
        }
    }
}

/// A checked pitched region (see [`vcuda_protocol::region`]).
fn region(base: u64, pitch: u64, width: u64, height: u64) -> Result<Region> {
    Region::new(base, pitch, width, height).map_err(|e| Error(e.status()))
}

/// Performs a copy. `stream`: `None` for the synchronous calls, which also order against
/// all prior work (they are sent and waited for); `Some` for the async ones.
fn memcpy(c: &Client, cp: Copy2D, kind: c_int, stream: Option<u64>) -> Result<()> {
    c.check_sticky()?;
    cp.check()?;
    if cp.width == 0 || cp.height == 0 {
        return Ok(());
    }
    match stream {
        None => super::capture::check_legacy_sync(c)?,
        Some(s) => {
            let node = || {
                let (d, s, e) = (
                    (cp.dst, cp.dpitch),
                    (cp.src, cp.spitch),
                    (cp.width, cp.height),
                );
                Ok(NodeKind::Memcpy(Copy3D::new_2d(d, s, e, kind)?))
            };
            if super::capture::add(s, node)? {
                return Ok(());
            }
        }
    }
    let dir = direction(c, cp.dst, cp.src, kind)?;
    let (sh, flags) = (
        stream.unwrap_or(0),
        if stream.is_some() { COPY_ASYNC } else { 0 },
    );
    match dir {
        Dir::H2H => {
            for row in 0..cp.height {
                // SAFETY: the caller passes host buffers spanning the 2-D region (the API's
                // contract); `copy` allows overlap.
                unsafe {
                    std::ptr::copy(
                        (cp.src + row * cp.spitch) as *const u8,
                        (cp.dst + row * cp.dpitch) as *mut u8,
                        cp.width as usize,
                    );
                }
            }
            Ok(())
        }
        Dir::H2D => {
            let dev_allocated = check_device_span(c, cp.dst, cp.side(cp.dst, cp.dpitch)?.span())?;
            let quiet = stream.is_some() && dev_allocated;
            let hc = cp.host_copy(true, sh, flags, dev_allocated);
            if shared::htod(c, &hc, quiet)? {
                return Ok(());
            }
            let span = cp.side(cp.src, cp.spitch)?.span();
            // SAFETY: the source is the caller's host buffer spanning `span` bytes.
            let src = unsafe { host_slice(cp.src as *const c_void, span as usize)? };
            if shared::htod_staged(c, &hc, src)? {
                return Ok(());
            }
            let packed;
            let bytes: &[u8] = if cp.height == 1 || cp.spitch == cp.width {
                &src[..(cp.width * cp.height) as usize]
            } else {
                packed = src
                    .chunks(cp.spitch as usize)
                    .take(cp.height as usize)
                    .flat_map(|r| &r[..cp.width as usize])
                    .copied()
                    .collect::<Vec<u8>>();
                &packed
            };
            // Whole rows per request, at most the transport's limit each (a row longer
            // than that goes alone, split in column chunks).
            for (row0, rows, col0, w) in chunks(cp.width, cp.height, c.max_request_data()) {
                let mut part = Vec::new();
                let data: &[u8] = if rows == 1 {
                    let s = (row0 * cp.width + col0) as usize;
                    &bytes[s..s + w as usize]
                } else {
                    part.extend_from_slice(
                        &bytes[(row0 * cp.width) as usize..((row0 + rows) * cp.width) as usize],
                    );
                    &part
                };
                let req = MemcpyHtoDReq {
                    dst: cp.dst + row0 * cp.dpitch + col0,
                    dpitch: cp.dpitch,
                    width: w,
                    height: rows,
                    stream: sh,
                    flags,
                    reserved: 0,
                };
                if quiet {
                    c.post_with::<ops::MemcpyHtoD>(&req, &[], &[data])?;
                } else {
                    c.call_with::<ops::MemcpyHtoD>(&req, &[], &[data], &mut [])?;
                }
            }
            Ok(())
        }
        Dir::D2H => {
            let dev_allocated = check_device_span(c, cp.src, cp.side(cp.src, cp.spitch)?.span())?;
            let hc = cp.host_copy(false, sh, flags, dev_allocated);
            let quiet = stream.is_some() && dev_allocated;
            if shared::dtoh(c, &hc, quiet)? {
                return Ok(());
            }
            let span = cp.side(cp.dst, cp.dpitch)?.span();
            // SAFETY: the destination is the caller's host buffer spanning `span` bytes.
            let dst = unsafe { host_slice_mut(cp.dst as *mut c_void, span as usize)? };
            if shared::dtoh_staged(c, &hc, dst)? {
                return Ok(());
            }
            let direct = cp.height == 1 || cp.dpitch == cp.width;
            for (row0, rows, col0, w) in chunks(cp.width, cp.height, c.max_request_data()) {
                let req = MemcpyDtoHReq {
                    src: cp.src + row0 * cp.spitch + col0,
                    spitch: cp.spitch,
                    width: w,
                    height: rows,
                    stream: sh,
                    flags,
                    reserved: 0,
                };
                if direct {
                    let s = (row0 * cp.dpitch + col0) as usize;
                    let d = &mut dst[s..s + (w * rows) as usize];
                    c.call_with::<ops::MemcpyDtoH>(&req, &[], &[], &mut [d])?;
                } else {
                    let mut tmp = vec![0u8; (w * rows) as usize];
                    c.call_with::<ops::MemcpyDtoH>(&req, &[], &[], &mut [&mut tmp])?;
                    for (i, r) in tmp.chunks(w as usize).enumerate() {
                        let s = ((row0 + i as u64) * cp.dpitch + col0) as usize;
                        dst[s..s + w as usize].copy_from_slice(r);
                    }
                }
            }
            Ok(())
        }
        Dir::D2D => {
            let req = cp.dtod(sh, flags);
            let ok = cp.in_device_memory(c, true)? && cp.in_device_memory(c, false)?;
            if stream.is_some() && ok {
                c.post::<ops::MemcpyDtoD>(&req)
            } else {
                c.call::<ops::MemcpyDtoD>(&req)
            }
        }
    }
}

/// What a graph's copy node does on the backend, stream 0: a device-to-device copy within
/// device allocations the library knows, or a copy between one of them and packed rows of
/// memory shared with the backend (`Ok(None)` otherwise: the launch replays it as
/// [`copy_2d`] does).
#[allow(clippy::too_many_arguments)]
pub(crate) fn graph_copy(
    c: &Client,
    dst: u64,
    dpitch: u64,
    src: u64,
    spitch: u64,
    width: u64,
    height: u64,
    kind: c_int,
) -> Result<Option<NodeWork>> {
    let cp = Copy2D {
        dst,
        dpitch,
        src,
        spitch,
        width,
        height,
    };
    cp.check()?;
    let (to_dev, from_dev) = (
        cp.in_device_memory(c, true)?,
        cp.in_device_memory(c, false)?,
    );
    Ok(match direction(c, dst, src, kind)? {
        Dir::D2D if to_dev && from_dev => Some(NodeWork::Copy(cp.dtod(0, COPY_ASYNC))),
        Dir::H2D if to_dev => shared::graph_htod(c, &cp.host_copy(true, 0, COPY_ASYNC, true))
            .map(NodeWork::CopyToDeviceShared),
        Dir::D2H if from_dev => shared::graph_dtoh(c, &cp.host_copy(false, 0, COPY_ASYNC, true))
            .map(NodeWork::CopyToHostShared),
        _ => None,
    })
}

/// The request of a graph's memset node, stream 0, if it sets memory of a device
/// allocation the library knows (`Ok(None)` otherwise).
pub(crate) fn graph_memset(
    c: &Client,
    dst: u64,
    pitch: u64,
    value: u32,
    elem: u32,
    (width, height): (u64, u64),
) -> Result<Option<MemsetReq>> {
    let row = width
        .checked_mul(u64::from(elem))
        .ok_or(Error::INVALID_VALUE)?;
    let r = region(dst, pitch, row, height)?;
    if !c.mirror.is_device_range(dst, r.span()) {
        return Ok(None);
    }
    Ok(Some(MemsetReq {
        dst,
        pitch,
        width,
        height,
        stream: 0,
        value,
        elem_size: elem as u16,
        flags: COPY_ASYNC as u16,
    }))
}

/// Whether `[addr, addr + span)` lies in one device allocation the library knows; fails a
/// copy whose device side starts in one and runs past its end, before any of it is sent: a
/// copy split into several requests (the transport's limit, staging pieces) must fail as a
/// whole, as in CUDA, not after its first pieces.
fn check_device_span(c: &Client, addr: u64, span: u64) -> Result<bool> {
    match c.mirror.find(addr) {
        Some(r) if r.kind == Kind::Device => {
            if c.mirror.is_device_range(addr, span) {
                Ok(true)
            } else {
                Err(Error::INVALID_VALUE)
            }
        }
        _ => Ok(false),
    }
}

/// Splits a `width x height` copy into requests of at most `max` bytes (the transport's
/// limit, at most `MAX_SEGMENT_LEN`): `(first row, rows, first column, columns)`.
pub(crate) fn chunks(width: u64, height: u64, max: u64) -> Vec<(u64, u64, u64, u64)> {
    let max = max.clamp(4096, MAX_SEGMENT_LEN);
    let mut v = Vec::new();
    if width > max {
        for row in 0..height {
            let mut col = 0;
            while col < width {
                let w = (width - col).min(max);
                v.push((row, 1, col, w));
                col += w;
            }
        }
    } else {
        let per = (max / width).max(1);
        let mut row = 0;
        while row < height {
            let n = (height - row).min(per);
            v.push((row, n, 0, width));
            row += n;
        }
    }
    v
}

fn memset(
    c: &Client,
    dst: u64,
    pitch: u64,
    value: u32,
    width: u64,
    height: u64,
    stream: Option<u64>,
) -> Result<()> {
    memset_elems(c, dst, pitch, value, 1, width, height, stream)
}

/// A memset of `height` rows of `width` elements of `elem` (1, 2 or 4) bytes, `pitch`
/// bytes apart, or, on a capturing stream, a memset node.
#[allow(clippy::too_many_arguments)]
pub(crate) fn memset_elems(
    c: &Client,
    dst: u64,
    pitch: u64,
    value: u32,
    elem: u32,
    width: u64,
    height: u64,
    stream: Option<u64>,
) -> Result<()> {
    c.check_sticky()?;
    let row = width
        .checked_mul(u64::from(elem))
        .ok_or(Error::INVALID_VALUE)?;
    let r = region(dst, pitch, row, height)?;
    if r.is_empty() {
        return Ok(());
    }
    match stream {
        None => super::capture::check_legacy_sync(c)?,
        Some(s) => {
            let node = || {
                Ok(NodeKind::Memset(Memset::new(
                    dst, pitch, value, elem, width, height,
                )?))
            };
            if super::capture::add(s, node)? {
                return Ok(());
            }
        }
    }
    let req = MemsetReq {
        dst,
        pitch,
        width,
        height,
        stream: stream.unwrap_or(0),
        value,
        elem_size: elem as u16,
        flags: if stream.is_some() {
            COPY_ASYNC as u16
        } else {
            0
        },
    };
    // cudaMemset is asynchronous for device memory; only an unknown range needs the
    // backend's verdict before returning.
    if c.mirror.is_device_range(dst, r.span()) {
        c.post::<ops::Memset>(&req)
    } else {
        c.call::<ops::Memset>(&req)
    }
}

fn host_alloc(c: &Client, ptr: *mut *mut c_void, size: usize, flags: u32) -> Result<()> {
    if ptr.is_null() || flags & !HOST_ALLOC_FLAGS != 0 {
        return Err(Error::INVALID_VALUE);
    }
    // Page-locked memory is mapped for kernels where the session can (see `shared::maps`).
    // Elsewhere `cudaHostAllocMapped` memory is kept coherent by the library, as managed
    // memory is (see `crate::coherent`), and the rest is plain page-locked memory.
    let coherent = || -> Result<*mut c_void> {
        let device = c.check_device(state::device())?;
        let p = coherent::alloc(c, device, size as u64)? as *mut c_void;
        c.mirror.insert(Range {
            base: p as u64,
            len: size as u64,
            kind: Kind::HostAlloc(flags),
            device: device as i32,
        });
        Ok(p)
    };
    // Page-locked memory the backend could not map for kernels (a GPU backend finds the
    // program's address taken in its own process, say) still serves copies; memory asked
    // for as mapped is then kept coherent instead.
    let shared = if size == 0 || flags & MAPPED != 0 && !shared::maps(c) {
        None
    } else {
        shared::alloc(c, size).and_then(|p| {
            if flags & MAPPED != 0 && !shared::is_mapped(c, p) {
                shared::free(c, p);
                None
            } else {
                Some(p)
            }
        })
    };
    let p = if size == 0 {
        std::ptr::null_mut()
    } else if let Some(p) = shared {
        c.mirror.insert(Range {
            base: p as u64,
            len: size as u64,
            kind: Kind::HostAlloc(flags),
            device: state::device(),
        });
        p
    } else if flags & MAPPED != 0 {
        coherent()?
    } else {
        // SAFETY: an anonymous private mapping at an address the kernel chooses.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::MEMORY_ALLOCATION);
        }
        c.mirror.insert(Range {
            base: p as u64,
            len: size as u64,
            kind: Kind::HostAlloc(flags),
            device: state::device(),
        });
        p
    };
    // SAFETY: checked non-null above; the caller's output pointer.
    unsafe { write_out(ptr, p) }
}

fn host_free(c: &Client, p: *mut c_void) -> Result<()> {
    if p.is_null() {
        return Ok(());
    }
    if coherent::owns(p as u64) {
        let r = c
            .mirror
            .find(p as u64)
            .filter(|r| r.base == p as u64 && matches!(r.kind, Kind::HostAlloc(_)))
            .ok_or(Error::INVALID_VALUE)?;
        // As `cudaFreeHost` does, after the device's work (which may use it).
        c.call::<ops::DeviceSynchronize>(&DeviceReq {
            device: c.check_device(r.device)?,
            reserved: 0,
        })?;
        c.mirror
            .remove(p as u64, |k| matches!(k, Kind::HostAlloc(_)));
        coherent::free(c, p as u64)?;
        return Ok(());
    }
    let r = c
        .mirror
        .remove(p as u64, |k| matches!(k, Kind::HostAlloc(_)))
        .ok_or(Error::INVALID_VALUE)?;
    if shared::free(c, p) {
        return Ok(());
    }
    // SAFETY: `r` is a mapping host_alloc made with this base and length; it is removed from
    // the mirror, so it is unmapped once.
    unsafe { libc::munmap(p, r.len as usize) };
    Ok(())
}

/// The device address of `count` bytes at `offset` into variable `symbol`.
pub(crate) fn symbol(
    c: &Client,
    symbol: *const c_void,
    count: usize,
    offset: usize,
) -> Result<u64> {
    let (addr, size) = symbol_range(c, symbol)?;
    match offset.checked_add(count) {
        Some(end) if end as u64 <= size => Ok(addr + offset as u64),
        _ => Err(Error::INVALID_VALUE),
    }
}

/// A variable's device address and size: a `__device__`/`__constant__` variable by its
/// host shadow, a `__managed__` one by its managed memory (what nvcc's host code passes).
fn symbol_range(c: &Client, symbol: *const c_void) -> Result<(u64, u64)> {
    if let Some(v) = registry::var(symbol as usize) {
        return v.resolve(c);
    }
    registry::managed_var(symbol as u64)
        .map(|size| (symbol as u64, size as u64))
        .ok_or(Error::INVALID_SYMBOL)
}

/// What `cudaPointerGetAttributes` says about `ptr`.
fn pointer_attributes(ptr: *const c_void) -> Result<cudaPointerAttributes> {
    let c = client::client()?;
    let p = ptr as u64;
    Ok(match c.mirror.find(p) {
        Some(r) if r.kind == Kind::Device => cudaPointerAttributes {
            type_: memory_type::DEVICE,
            device: r.device,
            devicePointer: ptr as *mut c_void,
            hostPointer: std::ptr::null_mut(),
            reserved: [0; 8],
        },
        Some(r) if r.kind == Kind::Managed => cudaPointerAttributes {
            type_: memory_type::MANAGED,
            device: r.device,
            devicePointer: ptr as *mut c_void,
            hostPointer: ptr as *mut c_void,
            reserved: [0; 8],
        },
        Some(r) => cudaPointerAttributes {
            type_: memory_type::HOST,
            device: r.device,
            devicePointer: shared::device_pointer(c, p)
                .map_or(std::ptr::null_mut(), |d| d as *mut c_void),
            hostPointer: ptr as *mut c_void,
            reserved: [0; 8],
        },
        None => cudaPointerAttributes {
            type_: memory_type::UNREGISTERED,
            device: -2,
            devicePointer: std::ptr::null_mut(),
            hostPointer: ptr as *mut c_void,
            reserved: [0; 8],
        },
    })
}

/// Which stream a call names: none (synchronous), or a `cudaStream_t` with whether `0`
/// means the per-thread default stream (the `_ptsz` variants).
pub(crate) type On = Option<(cudaStream_t, bool)>;

/// The stream a call names, for work that cannot be captured (`None`: synchronous).
pub(crate) fn stream_of(c: &Client, on: On) -> Result<Option<u64>> {
    on.map(|(s, per_thread)| stream_handle(c, s, per_thread))
        .transpose()
}

/// `cudaMemcpyToSymbol[Async]`.
fn to_symbol(
    sym: *const c_void,
    src: *const c_void,
    count: usize,
    offset: usize,
    kind: c_int,
    on: On,
) -> Result<()> {
    let c = client::client()?;
    c.check_sticky()?;
    let s = stream_of(c, on)?;
    if !matches!(
        kind,
        memcpy_kind::H2D | memcpy_kind::D2D | memcpy_kind::DEFAULT
    ) {
        return Err(Error::INVALID_MEMCPY_DIRECTION);
    }
    let addr = symbol(c, sym, count, offset)?;
    memcpy(c, Copy2D::linear(addr, src as u64, count as u64), kind, s)
}

/// The copy `cudaMemcpyToSymbol` (`to`) or `cudaMemcpyFromSymbol` makes: `(dst, src)`,
/// after checking the kind. For the graph nodes that stand for them.
pub(crate) fn symbol_copy(
    sym: *const c_void,
    host: u64,
    count: usize,
    offset: usize,
    kind: c_int,
    to: bool,
) -> Result<(u64, u64)> {
    let c = client::client()?;
    let ok = if to {
        matches!(
            kind,
            memcpy_kind::H2D | memcpy_kind::D2D | memcpy_kind::DEFAULT
        )
    } else {
        matches!(
            kind,
            memcpy_kind::D2H | memcpy_kind::D2D | memcpy_kind::DEFAULT
        )
    };
    if !ok {
        return Err(Error::INVALID_MEMCPY_DIRECTION);
    }
    let addr = symbol(c, sym, count, offset)?;
    Ok(if to { (addr, host) } else { (host, addr) })
}

/// `cudaMemcpyFromSymbol[Async]`.
fn from_symbol(
    dst: *mut c_void,
    sym: *const c_void,
    count: usize,
    offset: usize,
    kind: c_int,
    on: On,
) -> Result<()> {
    let c = client::client()?;
    c.check_sticky()?;
    let s = stream_of(c, on)?;
    if !matches!(
        kind,
        memcpy_kind::D2H | memcpy_kind::D2D | memcpy_kind::DEFAULT
    ) {
        return Err(Error::INVALID_MEMCPY_DIRECTION);
    }
    let addr = symbol(c, sym, count, offset)?;
    memcpy(c, Copy2D::linear(dst as u64, addr, count as u64), kind, s)
}

/// `cudaMemset2D[Async]`.
pub(crate) fn memset_2d(
    dev_ptr: *mut c_void,
    pitch: usize,
    value: c_int,
    width: usize,
    height: usize,
    on: On,
) -> Result<()> {
    let c = client::client()?;
    let s = on
        .map(|(s, per_thread)| capture_stream_handle(c, s, per_thread))
        .transpose()?;
    memset(
        c,
        dev_ptr as u64,
        pitch as u64,
        value as u8 as u32,
        width as u64,
        height as u64,
        s,
    )
}

entry! {
    fn cudaMalloc(dev_ptr: *mut *mut c_void, size: usize) {
        if dev_ptr.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        super::capture::check_unsafe()?;
        let p = malloc(client::client()?, size)?;
        // SAFETY: checked non-null; the caller's output pointer.
        unsafe { write_out(dev_ptr, p as *mut c_void) }
    }

    fn cudaMallocPitch(dev_ptr: *mut *mut c_void, pitch: *mut usize, width: usize, height: usize) {
        if dev_ptr.is_null() || pitch.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        let (ptr, p) = malloc_pitch(client::client()?, width, height)?;
        // SAFETY: checked non-null; the caller's output pointers.
        unsafe {
            write_out(pitch, p)?;
            write_out(dev_ptr, ptr as *mut c_void)
        }
    }

    fn cudaFree(dev_ptr: *mut c_void) {
        let c = client::client()?;
        c.check_sticky()?;
        super::capture::check_unsafe()?;
        free(c, dev_ptr as u64)?;
        // A block of a memory pool leaves its pool.
        super::pool::on_free(dev_ptr as u64);
        Ok(())
    }

    fn cudaMemcpy(dst: *mut c_void, src: *const c_void, count: usize, kind: c_int) {
        memcpy(client::client()?, Copy2D::linear(dst as u64, src as u64, count as u64), kind, None)
    }

    fn cudaMemcpy_ptds(dst: *mut c_void, src: *const c_void, count: usize, kind: c_int) {
        memcpy(client::client()?, Copy2D::linear(dst as u64, src as u64, count as u64), kind, None)
    }

    fn cudaMemcpyAsync(dst: *mut c_void, src: *const c_void, count: usize, kind: c_int, stream: cudaStream_t) {
        let c = client::client()?;
        let s = capture_stream_handle(c, stream, false)?;
        memcpy(c, Copy2D::linear(dst as u64, src as u64, count as u64), kind, Some(s))
    }

    fn cudaMemcpyAsync_ptsz(dst: *mut c_void, src: *const c_void, count: usize, kind: c_int, stream: cudaStream_t) {
        let c = client::client()?;
        let s = capture_stream_handle(c, stream, true)?;
        memcpy(c, Copy2D::linear(dst as u64, src as u64, count as u64), kind, Some(s))
    }

    fn cudaMemcpy2D(dst: *mut c_void, dpitch: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int) {
        let cp = Copy2D { dst: dst as u64, dpitch: dpitch as u64, src: src as u64, spitch: spitch as u64, width: width as u64, height: height as u64 };
        memcpy(client::client()?, cp, kind, None)
    }

    fn cudaMemcpy2D_ptds(dst: *mut c_void, dpitch: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int) {
        let cp = Copy2D { dst: dst as u64, dpitch: dpitch as u64, src: src as u64, spitch: spitch as u64, width: width as u64, height: height as u64 };
        memcpy(client::client()?, cp, kind, None)
    }

    fn cudaMemcpy2DAsync(dst: *mut c_void, dpitch: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int, stream: cudaStream_t) {
        let c = client::client()?;
        let s = capture_stream_handle(c, stream, false)?;
        let cp = Copy2D { dst: dst as u64, dpitch: dpitch as u64, src: src as u64, spitch: spitch as u64, width: width as u64, height: height as u64 };
        memcpy(c, cp, kind, Some(s))
    }

    fn cudaMemcpy2DAsync_ptsz(dst: *mut c_void, dpitch: usize, src: *const c_void, spitch: usize, width: usize, height: usize, kind: c_int, stream: cudaStream_t) {
        let c = client::client()?;
        let s = capture_stream_handle(c, stream, true)?;
        let cp = Copy2D { dst: dst as u64, dpitch: dpitch as u64, src: src as u64, spitch: spitch as u64, width: width as u64, height: height as u64 };
        memcpy(c, cp, kind, Some(s))
    }

    fn cudaMemset(dev_ptr: *mut c_void, value: c_int, count: usize) {
        memset(client::client()?, dev_ptr as u64, count as u64, value as u8 as u32, count as u64, 1, None)
    }

    fn cudaMemset_ptds(dev_ptr: *mut c_void, value: c_int, count: usize) {
        memset(client::client()?, dev_ptr as u64, count as u64, value as u8 as u32, count as u64, 1, None)
    }

    fn cudaMemsetAsync(dev_ptr: *mut c_void, value: c_int, count: usize, stream: cudaStream_t) {
        let c = client::client()?;
        let s = capture_stream_handle(c, stream, false)?;
        memset(c, dev_ptr as u64, count as u64, value as u8 as u32, count as u64, 1, Some(s))
    }

    fn cudaMemsetAsync_ptsz(dev_ptr: *mut c_void, value: c_int, count: usize, stream: cudaStream_t) {
        let c = client::client()?;
        let s = capture_stream_handle(c, stream, true)?;
        memset(c, dev_ptr as u64, count as u64, value as u8 as u32, count as u64, 1, Some(s))
    }

    fn cudaMemset2D(dev_ptr: *mut c_void, pitch: usize, value: c_int, width: usize, height: usize) {
        memset_2d(dev_ptr, pitch, value, width, height, None)
    }

    fn cudaMemset2D_ptds(dev_ptr: *mut c_void, pitch: usize, value: c_int, width: usize, height: usize) {
        memset_2d(dev_ptr, pitch, value, width, height, None)
    }

    fn cudaMemset2DAsync(dev_ptr: *mut c_void, pitch: usize, value: c_int, width: usize, height: usize, stream: cudaStream_t) {
        memset_2d(dev_ptr, pitch, value, width, height, Some((stream, false)))
    }

    fn cudaMemset2DAsync_ptsz(dev_ptr: *mut c_void, pitch: usize, value: c_int, width: usize, height: usize, stream: cudaStream_t) {
        memset_2d(dev_ptr, pitch, value, width, height, Some((stream, true)))
    }

    fn cudaMallocHost(ptr: *mut *mut c_void, size: usize) {
        host_alloc(client::client()?, ptr, size, 0)
    }

    fn cudaHostAlloc(ptr: *mut *mut c_void, size: usize, flags: u32) {
        host_alloc(client::client()?, ptr, size, flags)
    }

    fn cudaFreeHost(ptr: *mut c_void) {
        host_free(client::client()?, ptr)
    }

    fn cudaHostRegister(ptr: *mut c_void, size: usize, flags: u32) {
        let c = client::client()?;
        if ptr.is_null() || size == 0 || flags & !HOST_REGISTER_FLAGS != 0 {
            return Err(Error::INVALID_VALUE);
        }
        if c.mirror.find(ptr as u64).is_some() {
            return Err(Error(vcuda_protocol::status::HOST_MEMORY_ALREADY_REGISTERED));
        }
        if flags & MAPPED != 0 {
            // Kernels reach it in place: its pages move onto memory shared with the backend.
            shared::register_mapped(c, ptr as u64, size as u64)?;
        }
        c.mirror.insert(Range { base: ptr as u64, len: size as u64, kind: Kind::HostRegistered(flags), device: state::device() });
        Ok(())
    }

    fn cudaHostUnregister(ptr: *mut c_void) {
        let c = client::client()?;
        let r = c
            .mirror
            .remove(ptr as u64, |k| matches!(k, Kind::HostRegistered(_)))
            .ok_or(Error(vcuda_protocol::status::HOST_MEMORY_NOT_REGISTERED))?;
        if matches!(r.kind, Kind::HostRegistered(f) if f & MAPPED != 0) {
            shared::unregister_mapped(c, r.base, r.len);
        }
        Ok(())
    }

    fn cudaHostGetDevicePointer(dev_ptr: *mut *mut c_void, host: *mut c_void, flags: u32) {
        let c = client::client()?;
        if dev_ptr.is_null() || flags != 0 || c.mirror.find(host as u64).is_none() {
            return Err(Error::INVALID_VALUE);
        }
        // With unified addressing the device pointer is the host pointer. Memory kernels
        // cannot reach (no mapping on this transport, or registered memory the library
        // could not share) fails as where CUDA did not map it for the device.
        let d = shared::device_pointer(c, host as u64).ok_or(Error::MEMORY_ALLOCATION)?;
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(dev_ptr, d as *mut c_void) }
    }

    fn cudaHostGetFlags(flags: *mut u32, host: *mut c_void) {
        let c = client::client()?;
        // As NVIDIA's runtime answers (CUDA 13.0, measured): cudaHostAlloc's flags as given,
        // cudaHostRegister's Portable flag alone (not ReadOnly, IoMemory), plus Mapped for
        // memory kernels can reach, which with unified addressing is all page-locked memory
        // on a GPU; here, what the executor maps.
        let mapped = || shared::device_pointer(c, host as u64).map_or(0, |_| MAPPED);
        let f = match c.mirror.find(host as u64).map(|r| r.kind) {
            Some(Kind::HostAlloc(f)) => f | mapped(),
            Some(Kind::HostRegistered(f)) => (f & PORTABLE) | mapped(),
            _ => return Err(Error::INVALID_VALUE),
        };
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(flags, f) }
    }

    fn cudaPointerGetAttributes(attrs: *mut cudaPointerAttributes, ptr: *const c_void) {
        let a = pointer_attributes(ptr)?;
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(attrs, a) }
    }

    fn __v12_cudaPointerGetAttributes(attrs: *mut cudaPointerAttributesV12, ptr: *const c_void) {
        let a = pointer_attributes(ptr)?;
        let a = cudaPointerAttributesV12 {
            type_: a.type_,
            device: a.device,
            devicePointer: a.devicePointer,
            hostPointer: a.hostPointer,
        };
        // SAFETY: output pointer from the caller (CUDA 12's 24-byte struct), checked for
        // null.
        unsafe { write_out(attrs, a) }
    }

    fn cudaMemcpyToSymbol(sym: *const c_void, src: *const c_void, count: usize, offset: usize, kind: c_int) {
        to_symbol(sym, src, count, offset, kind, None)
    }

    fn cudaMemcpyToSymbol_ptds(sym: *const c_void, src: *const c_void, count: usize, offset: usize, kind: c_int) {
        to_symbol(sym, src, count, offset, kind, None)
    }

    fn cudaMemcpyFromSymbol(dst: *mut c_void, sym: *const c_void, count: usize, offset: usize, kind: c_int) {
        from_symbol(dst, sym, count, offset, kind, None)
    }

    fn cudaMemcpyFromSymbol_ptds(dst: *mut c_void, sym: *const c_void, count: usize, offset: usize, kind: c_int) {
        from_symbol(dst, sym, count, offset, kind, None)
    }

    fn cudaMemcpyToSymbolAsync(sym: *const c_void, src: *const c_void, count: usize, offset: usize, kind: c_int, stream: cudaStream_t) {
        to_symbol(sym, src, count, offset, kind, Some((stream, false)))
    }

    fn cudaMemcpyToSymbolAsync_ptsz(sym: *const c_void, src: *const c_void, count: usize, offset: usize, kind: c_int, stream: cudaStream_t) {
        to_symbol(sym, src, count, offset, kind, Some((stream, true)))
    }

    fn cudaMemcpyFromSymbolAsync(dst: *mut c_void, sym: *const c_void, count: usize, offset: usize, kind: c_int, stream: cudaStream_t) {
        from_symbol(dst, sym, count, offset, kind, Some((stream, false)))
    }

    fn cudaMemcpyFromSymbolAsync_ptsz(dst: *mut c_void, sym: *const c_void, count: usize, offset: usize, kind: c_int, stream: cudaStream_t) {
        from_symbol(dst, sym, count, offset, kind, Some((stream, true)))
    }

    fn cudaGetSymbolAddress(dev_ptr: *mut *mut c_void, sym: *const c_void) {
        let c = client::client()?;
        let addr = symbol(c, sym, 0, 0)?;
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(dev_ptr, addr as *mut c_void) }
    }

    fn cudaGetSymbolSize(size: *mut usize, sym: *const c_void) {
        let c = client::client()?;
        let (_, s) = symbol_range(c, sym)?;
        // SAFETY: output pointer from the caller, checked for null.
        unsafe { write_out(size, s as usize) }
    }
}

/// `cudaMalloc` for the libraries' own device objects (cuRAND's discrete distributions).
pub(crate) fn device_malloc(size: usize) -> Result<u64> {
    malloc(client::client()?, size)
}

/// `cudaFree` of a [`device_malloc`] allocation.
pub(crate) fn device_free(ptr: u64) -> Result<()> {
    free(client::client()?, ptr)
}

/// A 2-D copy for the cuBLAS vector and matrix transfers (`cublasSetMatrix` and friends):
/// `height` rows of `width` bytes, `spitch` and `dpitch` bytes apart. `stream`: `None` for
/// a synchronous copy, `Some` for an asynchronous one on that stream.
#[allow(clippy::too_many_arguments)]
pub(crate) fn copy_2d(
    dst: u64,
    dpitch: u64,
    src: u64,
    spitch: u64,
    width: u64,
    height: u64,
    kind: c_int,
    stream: Option<u64>,
) -> Result<()> {
    let c = client::client()?;
    let cp = Copy2D {
        dst,
        dpitch,
        src,
        spitch,
        width,
        height,
    };
    memcpy(c, cp, kind, stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte of the region is covered exactly once, in order, within the limit.
    fn covers(width: u64, height: u64, max: u64) {
        let mut next = (0u64, 0u64);
        for (row, rows, col, w) in chunks(width, height, max) {
            assert!(
                rows * w <= max.max(4096),
                "{width}x{height} max {max}: chunk too big"
            );
            assert_eq!((row, col), next, "{width}x{height} max {max}: gap");
            next = if rows > 1 || col + w == width {
                (row + rows, 0)
            } else {
                (row, col + w)
            };
        }
        assert_eq!(next, (height, 0));
    }

    #[test]
    fn chunking_covers_everything() {
        for &(w, h) in &[
            (1, 1),
            (100, 37),
            (5000, 3),
            (1 << 20, 9),
            (3 << 20, 2),
            (4096 * 1020 + 7, 1),
        ] {
            for max in [4096, 4096 * 1020, MAX_SEGMENT_LEN] {
                covers(w, h, max);
            }
        }
    }
}

/// `cudaMemcpyAttributes` (and the driver's `CUmemcpyAttributes`, laid out alike).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cudaMemcpyAttributes {
    src_access_order: c_int,
    src_loc_hint: [c_int; 2],
    dst_loc_hint: [c_int; 2],
    flags: u32,
}

/// `cudaMemcpySrcAccessOrderStream`, `DuringApiCall`, `Any`.
const ORDER_STREAM: c_int = 1;
const ORDER_DURING_API_CALL: c_int = 2;
const ORDER_ANY: c_int = 3;
/// `cudaMemcpyFlagPreferOverlapWithCompute`: a hint.
const BATCH_FLAGS: u32 = 0x1;

/// `cudaMemcpyBatchAsync`: `count` copies of `sizes[i]` bytes from `srcs[i]` to `dsts[i]` on
/// `stream` (not the legacy stream), each with the attributes of the last `attrs[k]` whose
/// `idxs[k]` is at most its index. The copies run in the stream's order, one after another,
/// which the API allows (it promises no order within a batch); the location hints and the
/// overlap flag are hints. A copy whose source must be read during the call
/// (`cudaMemcpySrcAccessOrderDuringApiCall`, for sources such as stack buffers) makes the
/// call wait for the stream. `failed` gets the index of the copy that failed, if one did.
///
/// # Safety
///
/// The pointers are the caller's arrays of the lengths given (the API's contract); null
/// ones are refused.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn memcpy_batch(
    dsts: *const *mut c_void,
    srcs: *const *const c_void,
    sizes: *const usize,
    count: usize,
    attrs: *const cudaMemcpyAttributes,
    idxs: *const usize,
    num_attrs: usize,
    stream: cudaStream_t,
    ptsz: bool,
    failed: &mut Option<usize>,
) -> Result<()> {
    let c = client::client()?;
    c.check_sticky()?;
    if dsts.is_null()
        || srcs.is_null()
        || sizes.is_null()
        || attrs.is_null()
        || idxs.is_null()
        || count == 0
        || num_attrs == 0
        || num_attrs > count
        // (Lengths no array in memory can have, which slices must not be given.)
        || count > isize::MAX as usize / std::mem::size_of::<cudaMemcpyAttributes>()
    {
        return Err(Error::INVALID_VALUE);
    }
    // The legacy stream is refused (the API's rule); the per-thread one is not.
    if stream as usize == STREAM_LEGACY || (stream.is_null() && !ptsz) {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: the caller's arrays of `count` and `num_attrs` entries (the API's contract),
    // checked for null above.
    let (dsts, srcs, sizes, attrs, idxs) = unsafe {
        (
            std::slice::from_raw_parts(dsts, count),
            std::slice::from_raw_parts(srcs, count),
            std::slice::from_raw_parts(sizes, count),
            std::slice::from_raw_parts(attrs, num_attrs),
            std::slice::from_raw_parts(idxs, num_attrs),
        )
    };
    // The first group starts at 0; each starts after the one before, inside the batch.
    if idxs[0] != 0 || idxs.windows(2).any(|w| w[1] <= w[0]) || idxs[num_attrs - 1] >= count {
        return Err(Error::INVALID_VALUE);
    }
    let mut during_call = false;
    for a in attrs {
        match a.src_access_order {
            ORDER_STREAM | ORDER_ANY => {}
            ORDER_DURING_API_CALL => during_call = true,
            _ => return Err(Error::INVALID_VALUE),
        }
        if a.flags & !BATCH_FLAGS != 0 {
            return Err(Error::INVALID_VALUE);
        }
    }
    let s = capture_stream_handle(c, stream, ptsz)?;
    if during_call && super::capture::capturing(s) {
        // A captured copy reads its source when the graph runs, not during this call.
        return Err(Error(status::STREAM_CAPTURE_UNSUPPORTED));
    }
    for (i, ((&dst, &src), &n)) in dsts.iter().zip(srcs).zip(sizes).enumerate() {
        let cp = Copy2D::linear(dst as u64, src as u64, n as u64);
        if let Err(e) = memcpy(c, cp, memcpy_kind::DEFAULT, Some(s)) {
            *failed = Some(i);
            return Err(e);
        }
    }
    if during_call {
        c.call::<ops::StreamSynchronize>(&vcuda_protocol::HandleReq { handle: s })?;
    }
    Ok(())
}

entry! {
    fn cudaMemcpyBatchAsync(dsts: *const *mut c_void, srcs: *const *const c_void, sizes: *const usize, count: usize, attrs: *const cudaMemcpyAttributes, idxs: *const usize, num_attrs: usize, stream: cudaStream_t) {
        // SAFETY: the caller's arrays (the API's contract).
        unsafe { memcpy_batch(dsts, srcs, sizes, count, attrs, idxs, num_attrs, stream, false, &mut None) }
    }

    fn cudaMemcpyBatchAsync_ptsz(dsts: *const *mut c_void, srcs: *const *const c_void, sizes: *const usize, count: usize, attrs: *const cudaMemcpyAttributes, idxs: *const usize, num_attrs: usize, stream: cudaStream_t) {
        // SAFETY: the caller's arrays (the API's contract).
        unsafe { memcpy_batch(dsts, srcs, sizes, count, attrs, idxs, num_attrs, stream, true, &mut None) }
    }
}
