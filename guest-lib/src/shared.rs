// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Page-locked host memory shared with the backend (a Unix socket on one host, or a VM).
//!
//! Where the backend offers it ([`HELLO_FEATURE_SHARED_MEMORY`]), `cudaMallocHost`/
//! `cudaHostAlloc` memory is shared with the backend, in one of two ways
//! ([`Sharing`], the transport's):
//!
//! - **A Unix socket** passes file descriptors: the memory is a sealed memfd, populated at
//!   once as real pinned memory is, mapped here and passed to the backend (`ShareMemory`),
//!   which maps it too and then seals it against writes (no holes punched under the
//!   backend's copies), so every mapping of it here is made before it is shared.
//! - **A VM's device** shares the program's own pages: the memory is private, populated
//!   memory whose pages the kernel module pins and names to the device
//!   (`VCUDA_IOC_SHARE`), which maps those pages of the VM's RAM; `VCUDA_IOC_UNSHARE` ends
//!   it. Registered memory (`cudaHostRegister`) is shared where it is, with nothing moved.
//!
//! Copies between it and the device then name `(region, offset)` and carry no bytes: the
//! backend copies straight between this memory and device memory. `VCUDA_SHARED_MEMORY=0`
//! turns it off (plain anonymous memory, copied inline like pageable memory).
//!
//! Where the session can also map shared memory for kernels
//! ([`HELLO_FEATURE_MAP_HOST_MEMORY`]), every page-locked allocation is exposed to kernels
//! at its own address (`MapHostMemory`), as CUDA with unified addressing maps all
//! page-locked memory: `cudaHostGetDevicePointer` returns the host pointer. On the CPU
//! executor the kernels run on those pages; on a GPU the backend maps them at the same
//! address in its own process and registers them with the driver, and the GPU reaches
//! them across the bus (true zero-copy). Where the backend cannot map an allocation (its
//! address is taken there), the memory still serves copies, and memory asked for as
//! mapped is kept coherent by the library instead. Managed memory (`cudaMallocManaged`) is
//! made the same way, one copy of the data shared by the program and its kernels, unless
//! the backend would rather keep it in device memory ([`HELLO_FEATURE_MANAGED_ON_DEVICE`]:
//! a GPU), where the library keeps it coherent (`crate::coherent`).
//!
//! Over a Unix socket, copies of pageable memory of [`STAGE_MIN`] bytes or more go through
//! a staging region shared the same way (grown on demand up to [`STAGE_MAX`], one per
//! process): the library copies the bytes in (or out) and the backend copies between the
//! staging region and device memory, two plain copies instead of a trip through the
//! socket's buffers. (In a VM the module pins pageable memory for each call instead.)

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};

use vcuda_protocol::{
    HELLO_FEATURE_MANAGED_ON_DEVICE, HELLO_FEATURE_MAP_HOST_MEMORY, HELLO_FEATURE_SHARED_MEMORY,
    HandleReq, HandleResp, MAX_SEGMENT_LEN, MapHostMemoryReq, MemcpyDtoHSharedReq,
    MemcpyHtoDSharedReq, PtrReq, ShareMemoryReq, ops,
};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::transport::Sharing;

/// One shared region.
#[derive(Clone, Copy, Debug)]
struct Region {
    len: u64,
    handle: u64,
    /// Exposed to kernels at its own address (`MapHostMemory`).
    mapped: bool,
}

/// The process's shared regions, by start address (one set per process, as there is one
/// session: `state()`).
#[derive(Default, Debug)]
pub struct Shared {
    regions: RwLock<BTreeMap<u64, Region>>,
    /// The staging region for pageable copies, once one was needed.
    staging: Mutex<Option<Staging>>,
    /// Making a staging region failed once: pageable copies stay inline.
    no_staging: AtomicBool,
}

/// The process's shared regions.
fn state() -> &'static Shared {
    static STATE: std::sync::LazyLock<Shared> = std::sync::LazyLock::new(Shared::default);
    &STATE
}

/// Smallest pageable copy that goes through the staging region.
pub const STAGE_MIN: u64 = 32 << 10;
/// Largest staging region; longer copies go through it a piece at a time.
pub const STAGE_MAX: usize = 16 << 20;

/// A shared region the library copies pageable memory through.
#[derive(Debug)]
struct Staging {
    /// Address of the mapping (a number, so the client stays `Sync`).
    addr: usize,
    len: usize,
    handle: u64,
}

impl Shared {
    /// The region holding all of `[addr, addr + len)`: its handle and the offset of `addr`.
    fn find(&self, addr: u64, len: u64) -> Option<(u64, u64)> {
        let g = self.regions.read().unwrap_or_else(|e| e.into_inner());
        let (&base, r) = g.range(..=addr).next_back()?;
        let off = addr - base;
        (off.checked_add(len)? <= r.len).then_some((r.handle, off))
    }

    /// Whether `addr` lies in a region kernels can reach at its own address.
    fn is_mapped(&self, addr: u64) -> bool {
        let g = self.regions.read().unwrap_or_else(|e| e.into_inner());
        g.range(..=addr)
            .next_back()
            .is_some_and(|(&base, r)| r.mapped && addr - base < r.len)
    }
}

/// Whether this session can share memory with its backend.
fn enabled(c: &Client) -> bool {
    c.hello.features & HELLO_FEATURE_SHARED_MEMORY != 0
        && c.sharing() != Sharing::Nothing
        && std::env::var("VCUDA_SHARED_MEMORY").as_deref() != Ok("0")
}

/// Whether kernels of this session can reach shared memory at its own address: mapped
/// (zero-copy) host memory works.
pub(crate) fn maps(c: &Client) -> bool {
    enabled(c) && c.hello.features & HELLO_FEATURE_MAP_HOST_MEMORY != 0
}

/// Whether managed memory is shared memory mapped for kernels ([`alloc_managed`]), rather
/// than device memory kept coherent by the library (`crate::coherent`): where kernels can
/// reach shared memory, unless the backend says its device reaches it only across a bus
/// ([`HELLO_FEATURE_MANAGED_ON_DEVICE`]: a GPU, where kernels would run at the bus's speed
/// on memory CUDA would have migrated to the device).
pub(crate) fn maps_managed(c: &Client) -> bool {
    maps(c) && c.hello.features & HELLO_FEATURE_MANAGED_ON_DEVICE == 0
}

/// Whether `p` starts page-locked memory shared with the backend that kernels reach at its
/// own address.
pub(crate) fn is_mapped(p: *mut c_void) -> bool {
    state().is_mapped(p as u64)
}

/// The device pointer of host address `addr`: itself, where it lies in page-locked or
/// managed memory that kernels can reach (unified addressing), shared with the backend or
/// kept coherent by the library.
pub(crate) fn device_pointer(addr: u64) -> Option<u64> {
    (state().is_mapped(addr) || crate::coherent::owns(addr)).then_some(addr)
}

/// Exposes the region `handle`, mapped here at `p` for `len` bytes, to kernels at `p`.
fn map_for_device(c: &Client, p: *mut c_void, len: usize, handle: u64) -> Result<()> {
    c.internal(|| {
        c.call::<ops::MapHostMemory>(&MapHostMemoryReq {
            region: handle,
            offset: 0,
            len: len as u64,
            addr: p as u64,
        })
    })
}

/// `size` bytes of managed memory (`cudaMallocManaged`): shared with the backend and
/// exposed to kernels at the same address. `cudaErrorNotSupported` where the session
/// cannot map memory for kernels (TCP, a VM, `VCUDA_SHARED_MEMORY=0`).
pub(crate) fn alloc_managed(c: &Client, size: usize) -> Result<*mut c_void> {
    if !maps_managed(c) {
        return Err(Error::NOT_SUPPORTED);
    }
    let (p, handle) = map_shared(c, size).map_err(|e| {
        log::debug!("managed memory of {size} bytes not available: {e}");
        Error::MEMORY_ALLOCATION
    })?;
    if let Err(e) = map_for_device(c, p, size, handle) {
        log::debug!("managed memory at {p:?} not mapped for kernels: {}", e.0);
        unmap_shared(c, p, size, handle);
        return Err(Error::MEMORY_ALLOCATION);
    }
    log::debug!("{size} bytes of managed memory shared with the backend (region {handle})");
    insert(p, size, handle, true);
    Ok(p)
}

fn insert(p: *mut c_void, size: usize, handle: u64, mapped: bool) {
    state()
        .regions
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(
            p as u64,
            Region {
                len: size as u64,
                handle,
                mapped,
            },
        );
}

/// `size` bytes of page-locked memory shared with the backend, or `None` where that is not
/// possible (then the caller allocates plain memory).
pub(crate) fn alloc(c: &Client, size: usize) -> Option<*mut c_void> {
    if size == 0 || !enabled(c) {
        return None;
    }
    match try_alloc(c, size) {
        Ok(p) => Some(p),
        Err(e) => {
            log::debug!("shared host memory of {size} bytes not available: {e}");
            None
        }
    }
}

fn try_alloc(c: &Client, size: usize) -> std::io::Result<*mut c_void> {
    let (p, handle) = map_shared(c, size)?;
    log::debug!("{size} bytes of page-locked memory shared with the backend (region {handle})");
    // With unified addressing all page-locked memory is mapped for the device. Where that
    // fails (an address the backend cannot expose), the memory still serves copies.
    let mapped = maps(c)
        && map_for_device(c, p, size, handle)
            .map_err(|e| {
                log::debug!(
                    "page-locked memory at {p:?} not mapped for kernels: {}",
                    e.0
                )
            })
            .is_ok();
    insert(p, size, handle, mapped);
    Ok(p)
}

/// `size` bytes of populated memory shared with the backend: the mapping and its region.
fn map_shared(c: &Client, size: usize) -> std::io::Result<(*mut c_void, u64)> {
    if c.sharing() == Sharing::Pages {
        return map_pages(c, size);
    }
    let err = std::io::Error::last_os_error;
    let fd = crate::memfd::sealed_memfd(c"vcuda-pinned", size)?;
    // SAFETY: a new shared mapping of our memfd at an address the kernel chooses.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(err());
    }
    // Populate every page now, as pinning does (the backend copies only populated pages).
    // SAFETY: `p` is our fresh mapping of `size` bytes.
    if unsafe { libc::madvise(p, size, libc::MADV_POPULATE_WRITE) } != 0 {
        for off in (0..size).step_by(4096) {
            // SAFETY: inside the fresh, writable mapping.
            unsafe { p.cast::<u8>().add(off).write_volatile(0) };
        }
    }
    let req = ShareMemoryReq {
        len: size as u64,
        flags: 0,
        reserved: 0,
    };
    match c.internal(|| c.call_fd::<ops::ShareMemory>(&req, fd.as_raw_fd())) {
        Ok(HandleResp { handle }) => Ok((p, handle)),
        Err(e) => {
            // SAFETY: the mapping made above, not handed out.
            unsafe { libc::munmap(p, size) };
            Err(std::io::Error::other(format!(
                "ShareMemory failed ({})",
                e.0
            )))
        }
    }
}

/// `size` bytes of fresh, populated private memory whose pages the transport shares in
/// place (a VM: the module pins them and the backend maps the guest's pages).
fn map_pages(c: &Client, size: usize) -> std::io::Result<(*mut c_void, u64)> {
    let err = std::io::Error::last_os_error;
    let len = size
        .checked_next_multiple_of(PAGE as usize)
        .ok_or_else(|| std::io::Error::other("too large"))?;
    // SAFETY: a new private anonymous mapping at an address the kernel chooses.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(err());
    }
    match c.share_pages(p as u64, len as u64) {
        Ok(handle) => Ok((p, handle)),
        Err(e) => {
            // SAFETY: the mapping made above, not handed out.
            unsafe { libc::munmap(p, len) };
            Err(e)
        }
    }
}

/// Ends region `handle` in the backend, after every call sent before it: the backend
/// first stops kernels reaching it.
fn unshare(c: &Client, handle: u64) {
    let r = c.internal(|| {
        if c.sharing() == Sharing::Pages {
            // The module unpins the pages only once the device answered.
            c.unshare_pages(handle)
        } else {
            c.post::<ops::UnshareMemory>(&HandleReq { handle })
        }
    });
    if let Err(e) = r {
        log::debug!("unsharing region {handle}: {}", e.0);
    }
}

/// Unmaps a region here and in the backend (which first stops kernels reaching it).
fn unmap_shared(c: &Client, p: *mut c_void, len: usize, handle: u64) {
    // The backend's earlier calls ran in order, so nothing uses the region any more.
    unshare(c, handle);
    // SAFETY: a mapping `map_shared` made, no longer in any table, so unmapped once.
    unsafe { libc::munmap(p, len) };
}

/// Frees shared memory at `p` (the start of a region): unmaps it here and in the backend.
/// Returns whether `p` was shared memory.
pub(crate) fn free(c: &Client, p: *mut c_void) -> bool {
    let r = state()
        .regions
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&(p as u64));
    let Some(r) = r else { return false };
    if r.mapped
        && let Err(e) = c.internal(|| c.post::<ops::UnmapHostMemory>(&PtrReq { ptr: p as u64 }))
    {
        log::debug!("UnmapHostMemory: {}", e.0);
    }
    unmap_shared(c, p, r.len as usize, r.handle);
    true
}

/// `cudaHostRegister(..., cudaHostRegisterMapped)` of `[addr, addr + len)`: the program's
/// own pages move, contents and address kept, onto a memfd shared with the backend, which
/// exposes them to kernels at the same address. The pages holding the range are copied into
/// the memfd and the memfd is mapped over them (`MAP_FIXED`); so the whole pages change
/// backing, bytes of neighbouring objects included, and a write another thread makes to
/// them while this runs may be lost (as it may while CUDA pins memory, the program should
/// not race its registration). `cudaErrorNotSupported` where kernels cannot reach shared
/// memory (TCP, a VM, `VCUDA_SHARED_MEMORY=0`) or where the pages already belong to another
/// shared region.
pub(crate) fn register_mapped(c: &Client, addr: u64, len: u64) -> Result<()> {
    if !maps(c) {
        return Err(Error::NOT_SUPPORTED);
    }
    let (start, span) = page_span(addr, len).ok_or(Error::INVALID_VALUE)?;
    {
        let g = state().regions.read().unwrap_or_else(|e| e.into_inner());
        let overlaps = g
            .range(..start + span)
            .next_back()
            .is_some_and(|(&b, r)| b + r.len > start);
        if overlaps {
            return Err(Error::NOT_SUPPORTED);
        }
    }
    let in_place = c.sharing() == Sharing::Pages;
    let handle = if in_place {
        // The program's own pages, pinned where they are.
        c.share_pages(start, span)
    } else {
        move_to_shared(c, start, span)
    }
    .map_err(|e| {
        log::debug!("registering {len} bytes at {addr:#x} for kernels failed: {e}");
        Error::NOT_SUPPORTED
    })?;
    let p = start as *mut c_void;
    if let Err(e) = map_for_device(c, p, span as usize, handle) {
        log::debug!("registered memory at {p:?} not mapped for kernels: {}", e.0);
        release_registered(c, start, span, handle);
        return Err(Error::NOT_SUPPORTED);
    }
    insert(p, span as usize, handle, true);
    Ok(())
}

/// Whether any page of `[start, start + span)` lies in a shared mapping (`/proc/self/maps`
/// marks those `s`); `true` where the table cannot be read.
fn shares_pages(start: u64, span: u64) -> bool {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return true;
    };
    let end = start.saturating_add(span);
    maps.lines().any(|l| {
        let mut f = l.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else {
            return false;
        };
        let Some((lo, hi)) = range.split_once('-') else {
            return false;
        };
        let hex = |x: &str| u64::from_str_radix(x, 16).ok();
        matches!((hex(lo), hex(hi)), (Some(lo), Some(hi)) if lo < end && start < hi)
            && perms.as_bytes().get(3) == Some(&b's')
    })
}

/// Undoes [`register_mapped`] for the registration of `[addr, addr + len)`: the pages go
/// back to private memory with their contents. Whether it was such a registration.
pub(crate) fn unregister_mapped(c: &Client, addr: u64, len: u64) -> bool {
    let Some((start, span)) = page_span(addr, len) else {
        return false;
    };
    let r = {
        let mut g = state().regions.write().unwrap_or_else(|e| e.into_inner());
        match g.get(&start) {
            Some(r) if r.len == span => g.remove(&start),
            _ => None,
        }
    };
    let Some(r) = r else { return false };
    if let Err(e) = c.internal(|| c.call::<ops::UnmapHostMemory>(&PtrReq { ptr: start })) {
        log::debug!("UnmapHostMemory: {}", e.0);
    }
    release_registered(c, start, span, r.handle);
    true
}

/// Ends the registration's region `handle`; where the pages moved onto a memory file, they
/// move back to private memory first.
fn release_registered(c: &Client, start: u64, span: u64, handle: u64) {
    if c.sharing() == Sharing::Pages {
        unshare(c, handle);
    } else {
        restore_private(c, start, span, handle);
    }
}

/// The page size the library assumes (x86-64, as the module's `VCUDA_IOC_SHARE`).
const PAGE: u64 = 4096;

/// The whole pages holding `[addr, addr + len)`.
fn page_span(addr: u64, len: u64) -> Option<(u64, u64)> {
    let start = addr & !(PAGE - 1);
    let end = addr.checked_add(len)?.checked_next_multiple_of(PAGE)?;
    (len > 0 && start > 0).then_some((start, end - start))
}

/// Moves the pages `[start, start + span)` onto a fresh memfd (contents kept) shared with
/// the backend: its region handle.
fn move_to_shared(c: &Client, start: u64, span: u64) -> std::io::Result<u64> {
    let err = std::io::Error::last_os_error;
    if shares_pages(start, span) {
        // Memory shared with others (another process; or a GPU backend running over vcuda's
        // own driver library, which maps a guest's shared memory a second time): moving its
        // pages would cut it off from them.
        return Err(std::io::Error::other("a shared mapping"));
    }
    let n = usize::try_from(span).map_err(|_| std::io::Error::other("too large"))?;
    let fd = crate::memfd::sealed_memfd(c"vcuda-registered", n)?;
    // Mapped before it is shared: the backend seals the file against writes once it maps
    // it, after which only mappings made before stay writable.
    // SAFETY: a new shared mapping of our memfd at an address the kernel chooses.
    let tmp = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            n,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if tmp == libc::MAP_FAILED {
        return Err(err());
    }
    // Shared next (the backend sees the bytes copied below through its own mapping): the
    // call allocates, and the pages may hold the program's heap, so nothing may touch them
    // between the copy and the move below.
    let req = ShareMemoryReq {
        len: span,
        flags: 0,
        reserved: 0,
    };
    let handle = match c.internal(|| c.call_fd::<ops::ShareMemory>(&req, fd.as_raw_fd())) {
        Ok(HandleResp { handle }) => handle,
        Err(e) => {
            // SAFETY: the mapping made above, not handed out.
            unsafe { libc::munmap(tmp, n) };
            return Err(std::io::Error::other(format!(
                "ShareMemory failed ({})",
                e.0
            )));
        }
    };
    // Copy the pages' current contents in, then move the mapping over them, with no
    // allocation in between. `process_vm_readv` on this process reads the program's memory
    // and fails (EFAULT) on a page that is not readable, leaving the program's mapping
    // untouched.
    let done = read_own(start as usize, tmp.cast::<u8>(), n);
    let p = if done == Some(n) {
        // SAFETY: moves our shared mapping `tmp` over the program's pages
        // `[start, start + n)` (readable, copied into it just above); `MREMAP_FIXED` replaces
        // them atomically, so the range stays mapped throughout and the program's pointers
        // stay valid. `tmp` is gone after a successful move.
        unsafe {
            libc::mremap(
                tmp,
                n,
                n,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                start as *mut c_void,
            )
        }
    } else {
        libc::MAP_FAILED
    };
    if p == libc::MAP_FAILED {
        // Read now: errno is still the failed call's.
        let e = match done {
            Some(k) if k < n => std::io::Error::other("a page of the range is not readable"),
            _ => err(),
        };
        // SAFETY: the mapping made above, not moved and not handed out.
        unsafe { libc::munmap(tmp, n) };
        if let Err(x) = c.internal(|| c.post::<ops::UnshareMemory>(&HandleReq { handle })) {
            log::debug!("UnshareMemory: {}", x.0);
        }
        return Err(e);
    }
    Ok(handle)
}

/// Copies `n` bytes of this process's memory at `src` to `dst` with a system call, so that
/// an unreadable page is an error (`None`, errno set) rather than a fault; the bytes copied
/// otherwise (fewer than `n` where a page is unreadable part way).
fn read_own(src: usize, dst: *mut u8, n: usize) -> Option<usize> {
    let mut done = 0usize;
    while done < n {
        let local = libc::iovec {
            iov_base: dst.wrapping_add(done).cast(),
            iov_len: n - done,
        };
        let remote = libc::iovec {
            iov_base: (src + done) as *mut c_void,
            iov_len: n - done,
        };
        // SAFETY: writes only into `[dst + done, dst + n)`, our own fresh mapping; the
        // kernel reads `[src + done, src + n)` of this process and reports an unreadable
        // page as an error or a short count instead of faulting.
        let r = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
        match r {
            r if r < 0 => return (done > 0).then_some(done),
            0 => return Some(done),
            r => done += r as usize,
        }
    }
    Some(done)
}

/// Puts private anonymous memory with the same contents back over the shared pages
/// `[start, start + span)` and unshares region `handle` in the backend.
fn restore_private(c: &Client, start: u64, span: u64, handle: u64) {
    let n = span as usize;
    // The contents wait in a mapping of their own: a heap buffer could lie on the very pages
    // being replaced (the pages hold the program's heap around the registered range).
    // SAFETY: a fresh private anonymous mapping at an address the kernel picks.
    let keep = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            n,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if keep == libc::MAP_FAILED {
        // The shared mapping stays, with the program's bytes; only the region is dropped.
        log::warn!("registered memory at {start:#x} stays shared: no memory to move it back");
    } else {
        // SAFETY: `[start, start + n)` is our shared mapping (readable and writable) and
        // `keep` a distinct fresh mapping of `n` bytes; the anonymous mapping replaces the
        // shared one in place (`MAP_FIXED`), so the range stays mapped throughout, and
        // `keep` is unmapped once, here.
        unsafe {
            std::ptr::copy_nonoverlapping(start as *const u8, keep.cast::<u8>(), n);
            let p = libc::mmap(
                start as *mut c_void,
                n,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                log::warn!(
                    "registered memory at {start:#x} stays shared: {}",
                    std::io::Error::last_os_error()
                );
            } else {
                std::ptr::copy_nonoverlapping(keep.cast::<u8>(), start as *mut u8, n);
            }
            libc::munmap(keep, n);
        }
    }
    unshare(c, handle);
}

/// A 2-D copy between host and device memory: `height` rows of `width` bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostCopy {
    /// Device address.
    pub dev: u64,
    /// Device pitch.
    pub dev_pitch: u64,
    /// Host address.
    pub host: u64,
    /// Host pitch.
    pub host_pitch: u64,
    /// Bytes per row.
    pub width: u64,
    /// Rows.
    pub height: u64,
    /// Stream handle.
    pub stream: u64,
    /// `COPY_*` flags.
    pub flags: u32,
    /// The whole device side lies in one allocation the library knows.
    pub dev_allocated: bool,
}

/// A piece of a copy: `(first row, rows, first column, columns)`.
type Piece = (u64, u64, u64, u64);

impl HostCopy {
    /// The whole copy as one piece.
    fn whole(&self) -> Piece {
        (0, self.height, 0, self.width)
    }

    /// The host-to-device request for piece `p`, its host side at `(region, offset)`.
    fn htod_req(&self, p: Piece, region: u64, offset: u64) -> MemcpyHtoDSharedReq {
        let (row0, rows, col0, w) = p;
        MemcpyHtoDSharedReq {
            dst: self.dev + row0 * self.dev_pitch + col0,
            dpitch: self.dev_pitch,
            width: w,
            height: rows,
            stream: self.stream,
            flags: self.flags,
            reserved: 0,
            region,
            offset,
        }
    }

    /// The device-to-host request for piece `p`, its host side at `(region, offset)`.
    fn dtoh_req(&self, p: Piece, region: u64, offset: u64) -> MemcpyDtoHSharedReq {
        let (row0, rows, col0, w) = p;
        MemcpyDtoHSharedReq {
            src: self.dev + row0 * self.dev_pitch + col0,
            spitch: self.dev_pitch,
            width: w,
            height: rows,
            stream: self.stream,
            flags: self.flags,
            reserved: 0,
            region,
            offset,
        }
    }

    /// The shared region and offset of the host side, if it is packed rows in one region.
    fn region(&self) -> Option<(u64, u64)> {
        if self.height != 1 && self.host_pitch != self.width {
            return None;
        }
        state().find(self.host, self.width.checked_mul(self.height)?)
    }
}

/// Copies host to device without carrying the bytes when the source is shared memory.
/// `posted`: send without waiting (an asynchronous copy the library checked). Returns
/// whether it did the copy.
pub(crate) fn htod(c: &Client, cp: &HostCopy, posted: bool) -> Result<bool> {
    let Some((region, offset)) = cp.region() else {
        return Ok(false);
    };
    send::<ops::MemcpyHtoDShared>(c, &cp.htod_req(cp.whole(), region, offset), posted)
}

/// Copies device to host without carrying the bytes when the destination is shared
/// memory (see [`htod`]).
pub(crate) fn dtoh(c: &Client, cp: &HostCopy, posted: bool) -> Result<bool> {
    let Some((region, offset)) = cp.region() else {
        return Ok(false);
    };
    send::<ops::MemcpyDtoHShared>(c, &cp.dtoh_req(cp.whole(), region, offset), posted)
}

/// A graph's host-to-device copy node (stream 0), if its source is packed rows in memory
/// shared with the backend.
pub(crate) fn graph_htod(_c: &Client, cp: &HostCopy) -> Option<MemcpyHtoDSharedReq> {
    let (region, offset) = cp.region()?;
    Some(cp.htod_req(cp.whole(), region, offset))
}

/// A graph's device-to-host copy node (stream 0), if its destination is packed rows in
/// memory shared with the backend.
pub(crate) fn graph_dtoh(_c: &Client, cp: &HostCopy) -> Option<MemcpyDtoHSharedReq> {
    let (region, offset) = cp.region()?;
    Some(cp.dtoh_req(cp.whole(), region, offset))
}

/// Posts or calls one request with no reply payload; `Ok(true)` once sent (or done).
fn send<O: vcuda_protocol::Op<Resp = ()>>(c: &Client, req: &O::Req, posted: bool) -> Result<bool> {
    if posted {
        c.post::<O>(req)?;
    } else {
        c.call::<O>(req)?;
    }
    Ok(true)
}

/// Runs `f` with the staging region, at least `want` bytes of it (up to [`STAGE_MAX`]),
/// made or grown first; `None` where a copy of `want` bytes should stay inline (short, no
/// sharing, another thread staging, or no region could be made).
fn with_staging<R>(
    c: &Client,
    want: u64,
    f: impl FnOnce(&mut [u8], u64) -> Result<R>,
) -> Result<Option<R>> {
    // A VM's module pins pageable memory for each call anyway: staging would add a copy.
    if want < STAGE_MIN
        || !enabled(c)
        || c.sharing() != Sharing::Files
        || state().no_staging.load(Ordering::Relaxed)
    {
        return Ok(None);
    }
    // Another thread staging its own copy: this one goes inline rather than wait.
    let Ok(mut g) = state().staging.try_lock() else {
        return Ok(None);
    };
    let need = want.min(STAGE_MAX as u64) as usize;
    if g.as_ref().is_none_or(|st| st.len < need) {
        if let Some(old) = g.take() {
            unmap_shared(c, old.addr as *mut c_void, old.len, old.handle);
        }
        let len = need.next_power_of_two().min(STAGE_MAX);
        match map_shared(c, len) {
            Ok((p, handle)) => {
                log::debug!(
                    "{len} bytes of staging memory shared with the backend (region {handle})"
                );
                *g = Some(Staging {
                    addr: p as usize,
                    len,
                    handle,
                });
            }
            Err(e) => {
                log::debug!("no staging region of {len} bytes: {e}; pageable copies stay inline");
                state().no_staging.store(true, Ordering::Relaxed);
                return Ok(None);
            }
        }
    }
    let Some(st) = g.as_ref() else {
        return Ok(None);
    };
    // SAFETY: the staging mapping is live while it is in the table, and the lock held here
    // makes this thread its only user; the backend touches it only during this thread's
    // calls naming it.
    let mem = unsafe { std::slice::from_raw_parts_mut(st.addr as *mut u8, st.len) };
    f(mem, st.handle).map(Some)
}

/// The most bytes of one piece of a staged copy: the whole copy if short, else about a
/// quarter of it, between 1 MiB and half the largest staging region, so that two pieces
/// alternate in the region while the library fills (or drains) one and the backend copies
/// the other.
fn piece_len(total: u64) -> u64 {
    if total < 2 << 20 {
        total
    } else {
        (total / 4).clamp(1 << 20, STAGE_MAX as u64 / 2)
    }
}

/// The pieces of a staged copy, each at most `piece` bytes, or `None` where the copy should
/// stay inline: one of several pieces could fail after others were copied, unless the
/// whole device range is known to be allocated (a copy fails as a whole, as in CUDA).
fn pieces(cp: &HostCopy, piece: u64) -> Option<Vec<Piece>> {
    let v = chunks(cp.width, cp.height, piece);
    (v.len() == 1 || cp.dev_allocated).then_some(v)
}

/// Copies pageable host memory to the device through the staging region: `src` is the
/// host side, `cp.host_pitch` apart from its start. Returns whether it did the copy.
pub(crate) fn htod_staged(c: &Client, cp: &HostCopy, src: &[u8]) -> Result<bool> {
    let total = cp.width.saturating_mul(cp.height);
    let piece = piece_len(total);
    let Some(pieces) = pieces(cp, piece) else {
        return Ok(false);
    };
    // Read below while the session is busy, so fetched first; the device range it writes is
    // stale in the process's cache of managed memory from now on.
    crate::coherent::prepare(c, src.as_ptr() as u64, src.len() as u64, false)?;
    crate::coherent::invalidate_range(
        c,
        cp.dev,
        cp.dev
            .saturating_add(cp.dev_pitch.saturating_mul(cp.height)),
    )?;
    let done = with_staging(c, total.min(2 * piece), |stage, region| {
        c.call_pipelined::<ops::MemcpyHtoDShared>(
            |i| {
                let &p = pieces.get(i)?;
                let (row0, rows, col0, w) = p;
                let at = (i % 2) as u64 * piece;
                for r in 0..rows {
                    let s = ((row0 + r) * cp.host_pitch + col0) as usize;
                    let d = (at + r * w) as usize;
                    stage[d..d + w as usize].copy_from_slice(&src[s..s + w as usize]);
                }
                Some(cp.htod_req(p, region, at))
            },
            |_| {},
        )
    })?;
    Ok(done.is_some())
}

/// Copies device memory to pageable host memory through the staging region (see
/// [`htod_staged`]).
pub(crate) fn dtoh_staged(c: &Client, cp: &HostCopy, dst: &mut [u8]) -> Result<bool> {
    let total = cp.width.saturating_mul(cp.height);
    let piece = piece_len(total);
    let Some(pieces) = pieces(cp, piece) else {
        return Ok(false);
    };
    // Written below while the session is busy, so fetched and made writable first.
    crate::coherent::prepare(c, dst.as_ptr() as u64, dst.len() as u64, true)?;
    let done = with_staging(c, total.min(2 * piece), |stage, region| {
        c.call_pipelined::<ops::MemcpyDtoHShared>(
            |i| {
                let &p = pieces.get(i)?;
                Some(cp.dtoh_req(p, region, (i % 2) as u64 * piece))
            },
            |i| {
                let (row0, rows, col0, w) = pieces[i];
                let at = (i % 2) as u64 * piece;
                for r in 0..rows {
                    let d = ((row0 + r) * cp.host_pitch + col0) as usize;
                    let s = (at + r * w) as usize;
                    dst[d..d + w as usize].copy_from_slice(&stage[s..s + w as usize]);
                }
            },
        )
    })?;
    Ok(done.is_some())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_needs_the_whole_range_in_one_region() {
        let s = Shared::default();
        s.regions.write().unwrap().insert(
            0x1000,
            Region {
                len: 0x100,
                handle: 7,
                mapped: true,
            },
        );
        assert_eq!(s.find(0x1000, 0x100), Some((7, 0)));
        assert_eq!(s.find(0x1010, 0x10), Some((7, 0x10)));
        assert_eq!(s.find(0x1010, 0xf1), None);
        assert_eq!(s.find(0xfff, 1), None);
        assert_eq!(s.find(0x1010, u64::MAX), None);
        assert!(s.is_mapped(0x10ff) && !s.is_mapped(0x1100) && !s.is_mapped(0xfff));
    }

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
