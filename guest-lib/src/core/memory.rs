// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Memory: device allocations, copies, memsets, page-locked host memory, pointer queries
//! and symbol copies.

use crate::client::{self, Client};
use crate::core::alloc::malloc;
use crate::core::capture::{capture_stream_handle, stream_handle};
use crate::core::graph::{Copy3D, Kind as NodeKind, Memset};
use crate::core::registry;
use crate::error::{Error, Result};
use crate::ffi::{
    cudaPointerAttributes, cudaStream_t, host_slice, host_slice_mut, memcpy_kind, memory_type,
};
use crate::mirror::Kind;
use crate::shared::{self, HostCopy, chunks};
use crate::{coherent, state};
use std::ffi::{c_int, c_void};
use vcuda_protocol::graph::NodeWork;
use vcuda_protocol::region::Region;
use vcuda_protocol::{
    COPY_ASYNC, MemcpyDtoDReq, MemcpyDtoHReq, MemcpyHtoDReq, MemsetReq, PtrReq, ops,
};

/// `cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined`.
pub(crate) const HOST_ALLOC_FLAGS: u32 = 0x1 | 0x2 | 0x4;
/// `cudaHostAllocPortable` / `cudaHostRegisterPortable`.
pub(crate) const PORTABLE: u32 = 0x1;
/// `cudaHostAllocMapped` / `cudaHostRegisterMapped`.
pub(crate) const MAPPED: u32 = 0x2;
/// `cudaHostRegisterPortable | Mapped | IoMemory | ReadOnly`.
pub(crate) const HOST_REGISTER_FLAGS: u32 = 0x1 | 0x2 | 0x4 | 0x8;

/// A pitched allocation of `height` rows of `width` bytes (`cudaMallocPitch`,
/// `cudaMalloc3D`): the pointer and the pitch, a multiple of the device's texture pitch
/// alignment.
pub(crate) fn malloc_pitch(c: &Client, width: usize, height: usize) -> Result<(u64, usize)> {
    crate::core::capture::check_unsafe()?;
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

pub(crate) fn free(c: &Client, ptr: u64) -> Result<()> {
    if crate::core::pool::is_import(ptr) {
        // A pointer imported from another process's pool: closed.
        return crate::core::pool::close_import(ptr);
    }
    if crate::core::ipc::is_open(ptr) {
        // Memory opened through an IPC handle is closed, not freed.
        return Err(Error::INVALID_VALUE);
    }
    if crate::core::graph_mem::owns(ptr) {
        // Graph memory is the graphs' to free (see `graph_mem`): freed for the program.
        crate::core::graph_mem::mark(ptr, false);
        return Ok(());
    }
    if crate::core::managed::free(c, ptr)? {
        return Ok(());
    }
    c.call::<ops::Free>(&PtrReq { ptr })?;
    c.mirror.remove(ptr, |k| k == Kind::Device);
    Ok(())
}

/// The direction of a copy, after resolving `cudaMemcpyDefault`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Dir {
    H2H,
    H2D,
    D2H,
    D2D,
}

pub(crate) fn direction(c: &Client, dst: u64, src: u64, kind: c_int) -> Result<Dir> {
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
pub(crate) struct Copy2D {
    pub(crate) dst: u64,
    pub(crate) dpitch: u64,
    pub(crate) src: u64,
    pub(crate) spitch: u64,
    pub(crate) width: u64,
    pub(crate) height: u64,
}

impl Copy2D {
    pub(crate) fn linear(dst: u64, src: u64, count: u64) -> Self {
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
    pub(crate) fn check(&self) -> Result<()> {
        self.side(self.dst, self.dpitch)?;
        self.side(self.src, self.spitch)?;
        Ok(())
    }

    /// One side of the copy as a checked region.
    pub(crate) fn side(&self, base: u64, pitch: u64) -> Result<Region> {
        region(base, pitch, self.width, self.height)
    }

    /// Whether the destination (`dst`) or the source lies in one device allocation the
    /// library knows.
    pub(crate) fn in_device_memory(&self, c: &Client, dst: bool) -> Result<bool> {
        let (base, pitch) = if dst {
            (self.dst, self.dpitch)
        } else {
            (self.src, self.spitch)
        };
        Ok(c.mirror
            .is_device_range(base, self.side(base, pitch)?.span()))
    }

    /// The copy as a device-to-device request.
    pub(crate) fn dtod(&self, stream: u64, flags: u32) -> MemcpyDtoDReq {
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
    pub(crate) fn host_copy(
        &self,
        to_device: bool,
        stream: u64,
        flags: u32,
        dev_allocated: bool,
    ) -> HostCopy {
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
pub(crate) fn region(base: u64, pitch: u64, width: u64, height: u64) -> Result<Region> {
    Region::new(base, pitch, width, height).map_err(|e| Error(e.status()))
}

/// Performs a copy. `stream`: `None` for the synchronous calls, which also order against
/// all prior work (they are sent and waited for); `Some` for the async ones.
pub(crate) fn memcpy(c: &Client, cp: Copy2D, kind: c_int, stream: Option<u64>) -> Result<()> {
    c.check_sticky()?;
    cp.check()?;
    if cp.width == 0 || cp.height == 0 {
        return Ok(());
    }
    match stream {
        None => crate::core::capture::check_legacy_sync(c)?,
        Some(s) => {
            let node = || {
                let (d, s, e) = (
                    (cp.dst, cp.dpitch),
                    (cp.src, cp.spitch),
                    (cp.width, cp.height),
                );
                Ok(NodeKind::Memcpy(Copy3D::new_2d(d, s, e, kind)?))
            };
            if crate::core::capture::add(s, node)? {
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
            // The bytes came back: the stream had done everything before the copy.
            crate::state::settled(sh);
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
pub(crate) fn check_device_span(c: &Client, addr: u64, span: u64) -> Result<bool> {
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

pub(crate) fn memset(
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
        None => crate::core::capture::check_legacy_sync(c)?,
        Some(s) => {
            let node = || {
                Ok(NodeKind::Memset(Memset::new(
                    dst, pitch, value, elem, width, height,
                )?))
            };
            if crate::core::capture::add(s, node)? {
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
pub(crate) fn symbol_range(c: &Client, symbol: *const c_void) -> Result<(u64, u64)> {
    if let Some(v) = registry::var(symbol as usize) {
        return v.resolve(c);
    }
    registry::managed_var(symbol as u64)
        .map(|size| (symbol as u64, size as u64))
        .ok_or(Error::INVALID_SYMBOL)
}

/// What `cudaPointerGetAttributes` says about `ptr`.
pub(crate) fn pointer_attributes(ptr: *const c_void) -> Result<cudaPointerAttributes> {
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
            devicePointer: shared::device_pointer(p)
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
pub(crate) fn to_symbol(
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
pub(crate) fn from_symbol(
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

/// `cudaFree`: what the runtime's export does, for it and for the calls that share it.
pub(crate) fn free_call(dev_ptr: *mut c_void) -> Result<()> {
    let c = client::client()?;
    c.check_sticky()?;
    crate::core::capture::check_unsafe()?;
    free(c, dev_ptr as u64)?;
    // A block of a memory pool leaves its pool.
    crate::core::pool::on_free(dev_ptr as u64);
    Ok(())
}

/// `cudaMalloc` (`has_out`: whether the caller gave somewhere to put the address).
pub(crate) fn malloc_call(has_out: bool, size: usize) -> Result<u64> {
    if !has_out {
        return Err(Error::INVALID_VALUE);
    }
    crate::core::capture::check_unsafe()?;
    malloc(client::client()?, size)
}

/// `cudaMemcpy`: what the runtime's export does, for it and for the calls that share it.
pub(crate) fn memcpy_call(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: c_int,
) -> Result<()> {
    memcpy(
        client::client()?,
        Copy2D::linear(dst as u64, src as u64, count as u64),
        kind,
        None,
    )
}

/// `cudaMemcpy2DAsync`: what the runtime's export does, for it and for the calls that share it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn memcpy_2d_async(
    dst: *mut c_void,
    dpitch: usize,
    src: *const c_void,
    spitch: usize,
    width: usize,
    height: usize,
    kind: c_int,
    stream: cudaStream_t,
) -> Result<()> {
    let c = client::client()?;
    let s = capture_stream_handle(c, stream, false)?;
    let cp = Copy2D {
        dst: dst as u64,
        dpitch: dpitch as u64,
        src: src as u64,
        spitch: spitch as u64,
        width: width as u64,
        height: height as u64,
    };
    memcpy(c, cp, kind, Some(s))
}

/// `cudaMemcpyAsync`: what the runtime's export does, for it and for the calls that share it.
pub(crate) fn memcpy_async(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: c_int,
    stream: cudaStream_t,
) -> Result<()> {
    let c = client::client()?;
    let s = capture_stream_handle(c, stream, false)?;
    memcpy(
        c,
        Copy2D::linear(dst as u64, src as u64, count as u64),
        kind,
        Some(s),
    )
}
