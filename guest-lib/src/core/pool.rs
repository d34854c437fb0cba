// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Stream-ordered memory pools: `cudaMallocAsync`/`cudaFreeAsync`, the device's default and
//! current pool, created pools, their attributes and trimming.
//!
//! Pools are bookkeeping in the library over the session's ordinary allocations. A block
//! freed with `cudaFreeAsync` stays reserved in its pool and is handed out again by a later
//! allocation on the same stream (stream order makes that safe), or on any stream once a
//! synchronization has covered the free (the freeing stream's, or the device's). At each
//! synchronization, free blocks beyond the pool's release threshold (0 by default) go back
//! to the device, as CUDA does; `cudaMemPoolTrimTo` does so at once. A destroyed pool's
//! outstanding blocks are freed when the program frees them.
//!
//! Interprocess pools (`cudaMemHandleTypePosixFileDescriptor`): the exported handle is a
//! file (a memfd) naming the exporting process's pool, and an exported pointer carries the
//! block's interprocess memory handle (see `super::ipc`), so the processes must reach the
//! same backend, as for `cudaIpcOpenMemHandle`. An imported pool only imports pointers;
//! `cudaFree` or `cudaFreeAsync` of an imported pointer closes it.

use crate::client::{self, Client};
use crate::core::capture::stream_handle;
pub(crate) use crate::core::pool_types::{ACCESS_READ_WRITE, ALLOCATION_PINNED, LOCATION_DEVICE};
pub use crate::core::pool_types::{
    cudaMemAccessDesc, cudaMemLocation, cudaMemPool_t, cudaMemPoolProps, cudaMemPoolPtrExportData,
};
use crate::error::{Error, Result};
use crate::ffi::cudaStream_t;
use std::collections::HashMap;
use std::ffi::{c_int, c_uint};
use std::sync::{LazyLock, Mutex};

/// Allocations are rounded to this.
pub(crate) const GRANULE: u64 = 512;

/// `cudaMemPoolAttr`.
/// (1 to 3 are the reuse policies: `FollowEventDependencies`, `AllowOpportunistic`,
/// `AllowInternalDependencies`; kept and reported, reuse here being always safe.)
pub(crate) const REUSE_FOLLOW_EVENT_DEPENDENCIES: c_int = 1;
pub(crate) const REUSE_ALLOW_INTERNAL_DEPENDENCIES: c_int = 3;
pub(crate) const RELEASE_THRESHOLD: c_int = 4;
pub(crate) const RESERVED_MEM_CURRENT: c_int = 5;
pub(crate) const RESERVED_MEM_HIGH: c_int = 6;
pub(crate) const USED_MEM_CURRENT: c_int = 7;
pub(crate) const USED_MEM_HIGH: c_int = 8;

pub(crate) use crate::ffi::HANDLE_POSIX_FD;

/// What an exported pool's file starts with; the exporting process's id and the pool's
/// handle there follow (8 bytes each, little-endian).
pub(crate) const EXPORT_MAGIC: &[u8; 8] = b"vcudapl1";

/// A block freed into its pool: reusable on `stream`, or anywhere once `settled`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Block {
    pub(crate) ptr: u64,
    pub(crate) size: u64,
    pub(crate) stream: u64,
    pub(crate) settled: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Pool {
    pub(crate) reuse: [c_int; 3],
    pub(crate) threshold: u64,
    pub(crate) max_size: u64,
    pub(crate) reserved: u64,
    pub(crate) reserved_high: u64,
    pub(crate) used: u64,
    pub(crate) used_high: u64,
    pub(crate) free: Vec<Block>,
    /// Blocks handed out: pointer -> size.
    pub(crate) live: HashMap<u64, u64>,
    pub(crate) destroyed: bool,
    /// Created with `cudaMemHandleTypePosixFileDescriptor`: it and its blocks can be exported.
    pub(crate) exportable: bool,
    /// Imported from another process: it imports pointers and allocates nothing.
    pub(crate) imported: bool,
}

impl Pool {
    pub(crate) fn new(max_size: u64) -> Self {
        Pool {
            reuse: [1, 1, 1],
            max_size,
            ..Pool::default()
        }
    }

    pub(crate) fn note_high(&mut self) {
        self.reserved_high = self.reserved_high.max(self.reserved);
        self.used_high = self.used_high.max(self.used);
    }
}

#[derive(Debug, Default)]
pub(crate) struct Pools {
    pub(crate) map: HashMap<usize, Pool>,
    pub(crate) default: usize,
    pub(crate) current: usize,
}

pub(crate) static POOLS: Mutex<Option<Pools>> = Mutex::new(None);

pub(crate) fn with<R>(f: impl FnOnce(&mut Pools) -> R) -> R {
    let mut g = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    let p = g.get_or_insert_with(|| {
        let h = new_handle();
        let mut m = HashMap::new();
        m.insert(h, Pool::new(0));
        Pools {
            map: m,
            default: h,
            current: h,
        }
    });
    f(p)
}

/// A unique handle value (a heap cell's address, kept for the process's life).
pub(crate) fn new_handle() -> usize {
    Box::into_raw(Box::new(0u8)) as usize
}

pub(crate) fn device_zero(c: &Client, device: c_int) -> Result<()> {
    c.check_device(device).map(drop)
}

/// Returns free blocks beyond each pool's release threshold to the device (at a
/// synchronization); `stream`: the backend stream just synchronized (`None`: the device).
pub fn on_sync(c: &Client, stream: Option<u64>) -> Result<()> {
    let mut g = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    let Some(pools) = g.as_mut() else {
        return Ok(());
    };
    for pool in pools.map.values_mut() {
        for b in &mut pool.free {
            if stream.is_none_or(|s| s == b.stream) {
                b.settled = true;
            }
        }
        let mut out = Vec::new();
        while pool.reserved > pool.threshold {
            let Some(i) = pool.free.iter().position(|b| b.settled) else {
                break;
            };
            let b = pool.free.swap_remove(i);
            pool.reserved -= b.size;
            out.push(b);
        }
        for b in out {
            crate::core::alloc::free_device(c, b.ptr)?;
        }
    }
    pools.map.retain(|_, p| !(p.destroyed && p.live.is_empty()));
    Ok(())
}

/// `cudaFree` of a pool's block: it leaves the pool's accounts.
pub fn on_free(ptr: u64) {
    let mut g = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(pools) = g.as_mut() {
        for p in pools.map.values_mut() {
            if let Some(size) = p.live.remove(&ptr) {
                p.used -= size;
                p.reserved -= size;
            }
        }
    }
}

/// `cudaDeviceReset`: every pool's memory is gone.
pub fn on_reset() {
    let mut g = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(pools) = g.as_mut() {
        pools.map.retain(|_, p| !p.destroyed);
        for p in pools.map.values_mut() {
            p.free.clear();
            p.live.clear();
            (p.reserved, p.used) = (0, 0);
        }
    }
}

pub(crate) fn alloc(pool: usize, size: usize, stream: cudaStream_t) -> Result<u64> {
    let c = client::client()?;
    c.check_sticky()?;
    let s = stream_handle(c, stream, false)?;
    if size == 0 {
        return Ok(0);
    }
    let want = (size as u64)
        .checked_next_multiple_of(GRANULE)
        .ok_or(Error::MEMORY_ALLOCATION)?;
    with(|pools| {
        let p = pools
            .map
            .get_mut(&pool)
            .filter(|p| !p.destroyed && !p.imported)
            .ok_or(Error::INVALID_VALUE)?;
        // A free block of about the size, this stream's or settled.
        let reusable = p.free.iter().position(|b| {
            b.size >= want && b.size <= want.saturating_mul(2) && (b.stream == s || b.settled)
        });
        let (ptr, got) = match reusable {
            Some(i) => {
                let b = p.free.swap_remove(i);
                (b.ptr, b.size)
            }
            None => {
                if p.max_size != 0 && p.reserved.saturating_add(want) > p.max_size {
                    return Err(Error::MEMORY_ALLOCATION);
                }
                let ptr = crate::core::alloc::malloc_device(c, want as usize)?;
                p.reserved += want;
                (ptr, want)
            }
        };
        p.used += got;
        p.live.insert(ptr, got);
        p.note_high();
        Ok(ptr)
    })
}

/// `cudaMallocAsync` on a capturing stream: a graph allocation node (see `graph_mem`) and
/// its address; `None` when the stream does not capture.
pub(crate) fn capture_alloc(size: usize, stream: cudaStream_t) -> Result<Option<u64>> {
    let c = client::client()?;
    c.check_sticky()?;
    let s = crate::core::capture::capture_stream_handle(c, stream, false)?;
    if !crate::core::capture::capturing(s) {
        return Ok(None);
    }
    if size == 0 {
        // As cudaMallocAsync of 0 bytes elsewhere: a null pointer, nothing captured.
        return Ok(Some(0));
    }
    let ptr = crate::core::graph_mem::allocate(size as u64)?;
    let kind = crate::core::graph::Kind::MemAlloc {
        ptr,
        size: size as u64,
    };
    match crate::core::capture::add(s, || Ok(kind)) {
        Ok(true) => Ok(Some(ptr)),
        r => {
            crate::core::graph_mem::release_unused(ptr);
            r.map(|_| None)
        }
    }
}

/// Pointers imported from other processes' pools: pointer -> imports not yet freed. A lock
/// of its own: `cudaFree` asks it, also from inside the pools' lock (`on_sync`).
pub(crate) static IMPORTS: LazyLock<Mutex<HashMap<u64, u32>>> = LazyLock::new(Default::default);

pub(crate) fn imports() -> std::sync::MutexGuard<'static, HashMap<u64, u32>> {
    IMPORTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `ptr` was imported into this process from another process's pool.
pub(crate) fn is_import(ptr: u64) -> bool {
    imports().contains_key(&ptr)
}

/// Closes one import of the imported pointer `ptr` (`cudaFree`, `cudaFreeAsync`).
pub(crate) fn close_import(ptr: u64) -> Result<()> {
    let mut m = imports();
    crate::core::ipc::close_mem_handle(ptr)?;
    if let Some(n) = m.get_mut(&ptr) {
        *n -= 1;
        if *n == 0 {
            m.remove(&ptr);
        }
    }
    Ok(())
}

/// A file naming pool `h` of this process, for another process to import.
pub(crate) fn export_file(h: usize) -> Result<c_int> {
    let mut rec = EXPORT_MAGIC.to_vec();
    rec.extend_from_slice(&u64::from(std::process::id()).to_le_bytes());
    rec.extend_from_slice(&(h as u64).to_le_bytes());
    crate::memfd::file_with(c"vcuda-mempool", &rec).map_err(|_| Error::OPERATING_SYSTEM)
}

/// Whether descriptor `fd` (the caller's, left open) is a pool file `export_file` made.
pub(crate) fn is_export_file(fd: c_int) -> bool {
    crate::memfd::read_head::<24>(fd).is_some_and(|rec| &rec[..8] == EXPORT_MAGIC)
}

pub(crate) fn pool_of(h: cudaMemPool_t) -> Result<usize> {
    let h = h as usize;
    with(|p| p.map.get(&h).filter(|p| !p.destroyed).map(|_| h)).ok_or(Error::INVALID_VALUE)
}

pub(crate) fn check_location(c: &Client, l: &cudaMemLocation) -> Result<()> {
    if l.ty != LOCATION_DEVICE {
        return Err(Error::INVALID_VALUE);
    }
    device_zero(c, l.id)
}

/// `cudaDeviceGetDefaultMemPool`: the device's default pool.
pub(crate) fn device_get_default_mem_pool(device: c_int) -> Result<cudaMemPool_t> {
    device_zero(client::client()?, device)?;
    Ok(with(|p| p.default) as cudaMemPool_t)
}

/// `cudaDeviceGetMemPool`: the device's current pool.
pub(crate) fn device_get_mem_pool(device: c_int) -> Result<cudaMemPool_t> {
    device_zero(client::client()?, device)?;
    Ok(with(|p| p.current) as cudaMemPool_t)
}

/// `cudaDeviceSetMemPool`.
pub(crate) fn device_set_mem_pool(device: c_int, pool: cudaMemPool_t) -> Result<()> {
    device_zero(client::client()?, device)?;
    let h = pool_of(pool)?;
    with(|p| p.current = h);
    Ok(())
}

/// CUDA 13's `cudaMemGetDefaultMemPool` (`default`) and `cudaMemGetMemPool`: the default
/// or current pool of a location for allocations of type `ty`. Only the device's pinned
/// allocations have pools here.
pub(crate) fn location_pool(
    location: Option<&cudaMemLocation>,
    ty: c_int,
    default: bool,
) -> Result<cudaMemPool_t> {
    check_location_type(location, ty)?;
    Ok(with(|p| if default { p.default } else { p.current }) as cudaMemPool_t)
}

/// CUDA 13's `cudaMemSetMemPool`: the location's current pool.
pub(crate) fn location_set_pool(
    location: Option<&cudaMemLocation>,
    ty: c_int,
    pool: cudaMemPool_t,
) -> Result<()> {
    check_location_type(location, ty)?;
    let h = pool_of(pool)?;
    with(|p| p.current = h);
    Ok(())
}

fn check_location_type(location: Option<&cudaMemLocation>, ty: c_int) -> Result<()> {
    let c = client::client()?;
    check_location(c, location.ok_or(Error::INVALID_VALUE)?)?;
    if ty != ALLOCATION_PINNED {
        return Err(Error::NOT_SUPPORTED);
    }
    Ok(())
}

/// `cudaFreeAsync` of the device address `ptr`.
pub(crate) fn free_async(ptr: u64, stream: cudaStream_t) -> Result<()> {
    let c = client::client()?;
    c.check_sticky()?;
    let s = crate::core::capture::capture_stream_handle(c, stream, false)?;
    if ptr == 0 {
        return Ok(());
    }
    if is_import(ptr) {
        // Closed once the stream's earlier work has run: the backend runs calls in order.
        return close_import(ptr);
    }
    if crate::core::graph_mem::owns(ptr) {
        // Graph memory: on a capturing stream a free node; elsewhere freed for the
        // program, while the graphs holding it keep it (see `graph_mem`).
        if !crate::core::capture::add(s, || Ok(crate::core::graph::Kind::MemFree(ptr)))? {
            crate::core::graph_mem::mark(ptr, false);
        }
        return Ok(());
    }
    // Other memory freed inside a capture would be freed by every launch: not
    // supported (the capture is invalidated).
    crate::core::capture::check_uncaptured(c, s)?;
    let pooled = with(|pools| {
        for p in pools.map.values_mut() {
            if let Some(size) = p.live.remove(&ptr) {
                p.used -= size;
                if p.destroyed {
                    p.reserved -= size;
                    return Some(false);
                }
                p.free.push(Block {
                    ptr,
                    size,
                    stream: s,
                    settled: false,
                });
                return Some(true);
            }
        }
        None
    });
    match pooled {
        Some(true) => Ok(()),
        // Not from a live pool (cudaMalloc'd, or its pool was destroyed): freed once
        // the stream's earlier work has run, the backend running calls in order.
        _ => crate::core::alloc::free_device_posted(c, ptr),
    }
}

/// `cudaMallocAsync`: `size` bytes from the current pool (or a graph's memory, while
/// `stream` captures).
pub(crate) fn malloc_async(size: usize, stream: cudaStream_t) -> Result<u64> {
    if let Some(ptr) = capture_alloc(size, stream)? {
        return Ok(ptr);
    }
    let pool = with(|p| p.current);
    alloc(pool, size, stream)
}

/// `cudaMallocFromPoolAsync`.
pub(crate) fn malloc_from_pool_async(
    size: usize,
    pool: cudaMemPool_t,
    stream: cudaStream_t,
) -> Result<u64> {
    let pool = pool_of(pool)?;
    if let Some(ptr) = capture_alloc(size, stream)? {
        return Ok(ptr);
    }
    alloc(pool, size, stream)
}

/// `cudaMemPoolCreate` with the caller's properties (`None`: a null pointer).
pub(crate) fn mem_pool_create(props: Option<&cudaMemPoolProps>) -> Result<cudaMemPool_t> {
    let c = client::client()?;
    let pr = props.ok_or(Error::INVALID_VALUE)?;
    if pr.alloc_type != ALLOCATION_PINNED || !pr.win32_security_attributes.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    // (NVIDIA's runtime says invalid value, not invalid device, for a device it lacks:
    // measured on an H100.)
    check_location(c, &pr.location).map_err(|_| Error::INVALID_VALUE)?;
    let exportable = match pr.handle_types {
        0 => false,
        HANDLE_POSIX_FD => true,
        // Windows and fabric handles are not available.
        _ => return Err(Error::NOT_SUPPORTED),
    };
    let h = new_handle();
    let mut new = Pool::new(pr.max_size as u64);
    new.exportable = exportable;
    with(|p| p.map.insert(h, new));
    Ok(h as cudaMemPool_t)
}

/// `cudaMemPoolDestroy`.
pub(crate) fn mem_pool_destroy(pool: cudaMemPool_t) -> Result<()> {
    let c = client::client()?;
    let h = pool_of(pool)?;
    let (blocks, empty) = with(|pools| {
        if h == pools.default {
            return Err(Error::INVALID_VALUE);
        }
        if pools.current == h {
            pools.current = pools.default;
        }
        let p = pools.map.get_mut(&h).ok_or(Error::INVALID_VALUE)?;
        p.destroyed = true;
        Ok((std::mem::take(&mut p.free), p.live.is_empty()))
    })?;
    // Free blocks go back now; outstanding ones when the program frees them.
    for b in &blocks {
        crate::core::alloc::free_device(c, b.ptr)?;
    }
    with(|pools| {
        if let Some(p) = pools.map.get_mut(&h) {
            p.reserved -= blocks.iter().map(|b| b.size).sum::<u64>();
        }
        if empty {
            pools.map.remove(&h);
        }
    });
    Ok(())
}

/// `cudaMemPoolExportPointer` of the device address `ptr`.
pub(crate) fn mem_pool_export_pointer(ptr: u64) -> Result<cudaMemPoolPtrExportData> {
    client::client()?.check_sticky()?;
    let ours = with(|pools| {
        pools
            .map
            .values()
            .any(|p| p.exportable && !p.imported && p.live.contains_key(&ptr))
    });
    if !ours {
        return Err(Error::INVALID_VALUE);
    }
    let reserved = crate::core::ipc::get_mem_handle(ptr)?;
    Ok(cudaMemPoolPtrExportData { reserved })
}

/// `cudaMemPoolExportToShareableHandle` as a POSIX descriptor (the only type there is).
pub(crate) fn mem_pool_export_to_shareable_handle(
    pool: cudaMemPool_t,
    ty: c_int,
    flags: c_uint,
) -> Result<c_int> {
    client::client()?.check_sticky()?;
    let h = pool_of(pool)?;
    let exportable = with(|p| p.map.get(&h).is_some_and(|p| p.exportable && !p.imported));
    if flags != 0 || ty != HANDLE_POSIX_FD || !exportable {
        return Err(Error::INVALID_VALUE);
    }
    export_file(h)
}

/// A pool attribute's value: `int` (the reuse policies) or `cuuint64_t` (the rest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttrValue {
    Int(c_int),
    U64(u64),
}

/// Whether pool attribute `attr` exists and its value is an `int` (`Some(true)`) or a
/// `cuuint64_t` (`Some(false)`): what the caller's value pointer points at.
pub(crate) fn attr_is_int(attr: c_int) -> Option<bool> {
    match attr {
        REUSE_FOLLOW_EVENT_DEPENDENCIES..=REUSE_ALLOW_INTERNAL_DEPENDENCIES => Some(true),
        RELEASE_THRESHOLD | RESERVED_MEM_CURRENT | RESERVED_MEM_HIGH | USED_MEM_CURRENT
        | USED_MEM_HIGH => Some(false),
        _ => None,
    }
}

/// `cudaMemPoolGetAttribute`.
pub(crate) fn mem_pool_get_attribute(pool: cudaMemPool_t, attr: c_int) -> Result<AttrValue> {
    let h = pool_of(pool)?;
    with(|pools| {
        let p = pools.map.get(&h).ok_or(Error::INVALID_VALUE)?;
        Ok(match attr {
            REUSE_FOLLOW_EVENT_DEPENDENCIES..=REUSE_ALLOW_INTERNAL_DEPENDENCIES => {
                AttrValue::Int(p.reuse[(attr - 1) as usize])
            }
            RELEASE_THRESHOLD => AttrValue::U64(p.threshold),
            RESERVED_MEM_CURRENT => AttrValue::U64(p.reserved),
            RESERVED_MEM_HIGH => AttrValue::U64(p.reserved_high),
            USED_MEM_CURRENT => AttrValue::U64(p.used),
            USED_MEM_HIGH => AttrValue::U64(p.used_high),
            _ => return Err(Error::INVALID_VALUE),
        })
    })
}

/// `cudaMemPoolImportFromShareableHandle` of the POSIX descriptor `fd`.
pub(crate) fn mem_pool_import_from_shareable_handle(
    fd: c_int,
    ty: c_int,
    flags: c_uint,
) -> Result<cudaMemPool_t> {
    let c = client::client()?;
    c.check_sticky()?;
    device_zero(c, 0)?;
    if flags != 0 || ty != HANDLE_POSIX_FD {
        return Err(Error::INVALID_VALUE);
    }
    // A descriptor that names no exported pool: NVIDIA's runtime answers
    // cudaErrorUnknown (a pipe's, measured on an H100).
    if !is_export_file(fd) {
        return Err(Error::UNKNOWN);
    }
    let h = new_handle();
    let mut new = Pool::new(0);
    new.imported = true;
    with(|p| p.map.insert(h, new));
    Ok(h as cudaMemPool_t)
}

/// `cudaMemPoolImportPointer` with the caller's export data (`None`: a null pointer).
pub(crate) fn mem_pool_import_pointer(
    pool: cudaMemPool_t,
    data: Option<&cudaMemPoolPtrExportData>,
) -> Result<u64> {
    client::client()?.check_sticky()?;
    let h = pool_of(pool)?;
    let imported = with(|p| p.map.get(&h).is_some_and(|p| p.imported));
    let (Some(d), true) = (data, imported) else {
        return Err(Error::INVALID_VALUE);
    };
    let mut m = imports();
    let p =
        crate::core::ipc::open_mem_handle(&d.reserved, crate::core::ipc::LAZY_ENABLE_PEER_ACCESS)?;
    *m.entry(p).or_default() += 1;
    Ok(p)
}

/// `cudaMemPoolSetAttribute`.
pub(crate) fn mem_pool_set_attribute(
    pool: cudaMemPool_t,
    attr: c_int,
    value: AttrValue,
) -> Result<()> {
    let h = pool_of(pool)?;
    with(|pools| {
        let p = pools.map.get_mut(&h).ok_or(Error::INVALID_VALUE)?;
        match (attr, value) {
            (
                REUSE_FOLLOW_EVENT_DEPENDENCIES..=REUSE_ALLOW_INTERNAL_DEPENDENCIES,
                AttrValue::Int(v),
            ) => {
                p.reuse[(attr - 1) as usize] = v;
            }
            (RELEASE_THRESHOLD, AttrValue::U64(v)) => p.threshold = v,
            // Only resetting the high-water marks (to the current value) is allowed.
            (RESERVED_MEM_HIGH, AttrValue::U64(0)) => p.reserved_high = p.reserved,
            (USED_MEM_HIGH, AttrValue::U64(0)) => p.used_high = p.used,
            _ => return Err(Error::INVALID_VALUE),
        }
        Ok(())
    })
}

/// `cudaMemPoolTrimTo`.
pub(crate) fn mem_pool_trim_to(pool: cudaMemPool_t, min_keep: usize) -> Result<()> {
    let c = client::client()?;
    let h = pool_of(pool)?;
    let blocks = with(|pools| {
        let p = pools.map.get_mut(&h)?;
        let mut out = Vec::new();
        // Largest first: fewest frees to get under the mark.
        p.free.sort_by_key(|b| std::cmp::Reverse(b.size));
        while p.reserved > min_keep as u64 && !p.free.is_empty() {
            let b = p.free.remove(0);
            p.reserved -= b.size;
            out.push(b);
        }
        Some(out)
    })
    .ok_or(Error::INVALID_VALUE)?;
    for b in blocks {
        crate::core::alloc::free_device(c, b.ptr)?;
    }
    Ok(())
}

/// `cudaMemPoolSetAccess` (and `cuMemPoolSetAccess`): one device, whose own pools are always
/// read-write for it, so only that is accepted.
pub(crate) fn set_access(pool: cudaMemPool_t, descs: &[cudaMemAccessDesc]) -> Result<()> {
    let c = client::client()?;
    pool_of(pool)?;
    for d in descs {
        check_location(c, &d.location)?;
        if d.flags != ACCESS_READ_WRITE {
            return Err(Error::INVALID_VALUE);
        }
    }
    Ok(())
}

/// `cudaMemPoolGetAccess` (and `cuMemPoolGetAccess`) for the caller's location (`None`: a
/// null pointer): read-write, for the one device.
pub(crate) fn get_access(pool: cudaMemPool_t, location: Option<&cudaMemLocation>) -> Result<c_int> {
    let c = client::client()?;
    pool_of(pool)?;
    let l = location.ok_or(Error::INVALID_VALUE)?;
    check_location(c, l)?;
    Ok(ACCESS_READ_WRITE)
}
