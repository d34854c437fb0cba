// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Managed memory kept coherent by the library, where the backend cannot map the program's
//! memory (over TCP, with `VCUDA_SHARED_MEMORY=0`, for an allocation whose address the
//! backend has taken) or would rather keep it in device memory (the CUDA executor's managed
//! memory). `cudaMallocManaged` memory, `cudaHostAllocMapped` memory and the pages of
//! `__managed__` variables (`adopt`) are kept this way there.
//!
//! A managed allocation is a device allocation plus a mapping in this process at the same
//! address, so the one pointer is valid in kernels and on the host (unified addressing). The
//! mapping is a memfd mapped twice: the program's view, whose page protection tracks the
//! program's accesses, and the library's own view, always readable and writable, through
//! which every transfer goes. The device copy is the reference; the process keeps a cache of
//! it in blocks of [`BLOCK`] bytes, each in one of three states that the program view's
//! protection enforces:
//!
//! - *invalid* (`PROT_NONE`): the device may hold newer data. The program's first access
//!   faults; the fault handler brings the block (and up to [`FETCH_RUN`] - 1 invalid blocks
//!   after it) from the device and makes it clean (a write then makes it dirty).
//! - *clean* (`PROT_READ`): the same bytes as the device. A write faults once; the handler
//!   makes the block dirty.
//! - *dirty* (`PROT_READ | PROT_WRITE`): written here since it was last sent. Fresh
//!   allocations start dirty (their zeros go with the first request), so the program can fill
//!   them with system calls too.
//!
//! Before the library sends any request, it sends every dirty block to the device (and makes
//! it clean), so a kernel, copy or library call sees what the program wrote. When it sends a
//! request that may write device memory (a launch, a graph launch, a copy or memset to the device, a cuBLAS
//! or cuRAND call, binding a module variable), it makes the blocks it may write invalid
//! (every block, for a launch or a library call), so the program's next access fetches what
//! the device made. Fetches are synchronous copies on the legacy default stream, so they
//! come after the work before them, as a read after `cudaDeviceSynchronize` does on a GPU.
//! One lock (see `locked`) covers every state change, protection change and transfer, so
//! a request never passes another thread's flush and a block's state always matches its
//! protection. Host buffers a request carries that lie in this memory (a cuBLAS result, a
//! host cuRAND generator's output) are copied through buffers of the library's before and
//! after the request, where faults can be served (`Client::call_raw`).
//!
//! The device reports `cudaDevAttrConcurrentManagedAccess` = 0: as on GPUs without it, the
//! program must not touch managed memory while kernels run. A program that does may read
//! stale data or lose a write. A kernel that waits for a host write to mapped memory made
//! while it runs waits forever (the write reaches the device with the next request).
//!
//! Limits: the kernel does not fault for system calls, so a system call that reads managed
//! memory the device may have written since the program last touched it (`write`, a large
//! `fwrite`, `send`) fails with `EFAULT`, as does one that writes into memory that is not
//! dirty (`read` into memory a kernel wrote); touching the memory first (reading it, or
//! writing one byte per block), or `cudaMemPrefetchAsync` to the CPU (which waits for the
//! stream and brings the range here), makes such calls work. Flushes and fetches are synchronous,
//! so a request that follows host writes waits for the device to take them.
//!
//! The handler serves only faults in managed blocks; any other `SIGSEGV` goes to the handler
//! the program had when the first managed allocation was made (or ends the process as it
//! would have); a handler the program installs later replaces this one. A fetch from the
//! handler is an ordinary call on the session: the program's fault interrupted its own code,
//! never the library while it holds the session or the coherence lock. If it ever did, the
//! process stops with a message rather than deadlock.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once, OnceLock, RwLock};

use vcuda_protocol::{
    MallocReq, MemcpyDtoDReq, MemcpyDtoHReq, MemcpyHtoDReq, MemcpyHtoDSharedReq, MemsetReq, Opcode,
    PtrReq, PtrResp, STREAM_LEGACY, ops,
};

use crate::client::Client;
use crate::error::{Error, Result};

/// Bytes per cache block (a multiple of the page size).
pub const BLOCK: u64 = 64 << 10;
/// Most blocks one fault brings from the device (consecutive invalid ones).
pub const FETCH_RUN: usize = 16;
const PAGE: u64 = 4096;
/// Device allocations tried before giving up on one whose address is taken here.
const PLACE_TRIES: usize = 8;

const INVALID: u8 = 0;
const CLEAN: u8 = 1;
const DIRTY: u8 = 2;

/// One managed allocation.
#[derive(Debug)]
struct Alloc {
    /// The program's pointer: page-aligned, mapped here for `len` bytes.
    base: u64,
    /// Mapped bytes (whole pages, all within the device allocation).
    len: u64,
    /// The library's own view of the same pages (a second mapping of the memfd behind
    /// them), always readable and writable: fetches and flushes go through it, so the
    /// program's view changes protection only once its bytes are right.
    alias: u64,
    /// The device allocation (what `Free` takes); 0 for module variables ([`adopt`]).
    dev: u64,
    /// The device bytes behind the mapping, sorted: `(start, length)`. Transfers cover
    /// only these (the whole mapping for an allocation; the variables for [`adopt`]).
    segments: Vec<(u64, u64)>,
    /// The mapping replaced part of the library's device address reservation, which it
    /// goes back to when freed.
    in_reservation: bool,
    /// Block states.
    blocks: Box<[AtomicU8]>,
    /// Some block may be clean or dirty (else invalidating it has nothing to do).
    any_valid: AtomicBool,
}

impl Alloc {
    fn block_range(&self, k: usize) -> (u64, u64) {
        let start = self.base + k as u64 * BLOCK;
        (start, (self.base + self.len).min(start + BLOCK) - start)
    }

    /// Addresses of blocks `[first, end)`.
    fn span(&self, first: usize, end: usize) -> (u64, u64) {
        let (start, _) = self.block_range(first);
        let (last, len) = self.block_range(end - 1);
        (start, last + len - start)
    }

    /// The library's view of `[addr, addr + len)` (a range of the program's view).
    fn alias_of(&self, addr: u64, len: u64) -> *mut u8 {
        debug_assert!(addr >= self.base && addr + len <= self.base + self.len);
        (self.alias + (addr - self.base)) as *mut u8
    }

    /// The parts of `[start, start + len)` with device bytes behind them, each cut to at
    /// most `max` bytes.
    fn pieces(&self, start: u64, len: u64, max: u64) -> Vec<(u64, u64)> {
        let end = start + len;
        let mut v = Vec::new();
        for &(s, n) in &self.segments {
            let (mut lo, hi) = (s.max(start), (s + n).min(end));
            while lo < hi {
                let l = (hi - lo).min(max);
                v.push((lo, l));
                lo += l;
            }
        }
        v
    }

    /// Copies `[start, start + len)` of the device into the library's view (`to_host`) or
    /// back, the device bytes only, as the library's own requests.
    fn transfer(&self, c: &Client, start: u64, len: u64, to_host: bool) -> Result<()> {
        let max = c.max_request_data().clamp(PAGE, BLOCK * FETCH_RUN as u64);
        internal(|| {
            for (at, n) in self.pieces(start, len, max) {
                // SAFETY: the library's view of blocks the caller holds (fetching) or is
                // sending (see `flush`); inside the mapping.
                let view =
                    unsafe { std::slice::from_raw_parts_mut(self.alias_of(at, n), n as usize) };
                if to_host {
                    let req = MemcpyDtoHReq {
                        src: at,
                        spitch: n,
                        width: n,
                        height: 1,
                        stream: STREAM_LEGACY,
                        flags: 0,
                        reserved: 0,
                    };
                    c.call_with::<ops::MemcpyDtoH>(&req, &[], &[], &mut [view])?;
                } else {
                    let req = MemcpyHtoDReq {
                        dst: at,
                        dpitch: n,
                        width: n,
                        height: 1,
                        stream: STREAM_LEGACY,
                        flags: 0,
                        reserved: 0,
                    };
                    c.call_with::<ops::MemcpyHtoD>(&req, &[], &[view], &mut [])?;
                }
            }
            Ok(())
        })
    }
}

/// Managed allocations by start address.
static ALLOCS: RwLock<BTreeMap<u64, Arc<Alloc>>> = RwLock::new(BTreeMap::new());
/// How many there are (the fast path of every request reads only this).
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// Blocks made dirty since the last flush (at least as many as are dirty).
static DIRTY_BLOCKS: AtomicUsize = AtomicUsize::new(0);
/// The handler the program had for `SIGSEGV`.
static OLD_ACTION: OnceLock<libc::sigaction> = OnceLock::new();
static INSTALL: Once = Once::new();
/// The coherence lock (see [`locked`]).
static LOCK: Mutex<()> = Mutex::new(());
/// The process whose managed memory this is.
static OWNER: OnceLock<u32> = OnceLock::new();

thread_local! {
    /// This thread is making the library's own coherence requests.
    static INTERNAL: Cell<bool> = const { Cell::new(false) };
    /// This thread holds the coherence lock.
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// Whether this is a forked child of the process that made the managed memory. It has none
/// of its own: the parent's views are not inherited (`MADV_DONTFORK`), so its accesses
/// fault as on any unmapped address, and its requests leave the parent's state alone.
fn forked() -> bool {
    OWNER.get().is_some_and(|&pid| pid != std::process::id())
}

fn allocs() -> Vec<Arc<Alloc>> {
    ALLOCS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .cloned()
        .collect()
}

fn find(addr: u64) -> Option<Arc<Alloc>> {
    let g = ALLOCS.read().unwrap_or_else(|e| e.into_inner());
    let (_, a) = g.range(..=addr).next_back()?;
    (addr - a.base < a.len).then(|| a.clone())
}

/// Whether `addr` lies in managed memory this module keeps.
pub(crate) fn owns(addr: u64) -> bool {
    LIVE.load(Ordering::Acquire) != 0 && find(addr).is_some()
}

/// Runs `f` as one of the library's own coherence requests (not flushed or invalidated),
/// which leave a pending asynchronous error to the program (see `Client::internal`): a
/// fault handler bringing managed memory in must not fail on a kernel's earlier error.
fn internal<R>(f: impl FnOnce() -> R) -> R {
    let was = INTERNAL.with(|i| i.replace(true));
    let r = crate::client::internal(f);
    INTERNAL.with(|i| i.set(was));
    r
}

/// What device memory a request may write.
#[derive(Debug, PartialEq, Eq)]
enum Writes {
    /// None.
    Nothing,
    /// Anything (kernels, library calls, module variables).
    Anything,
    /// Only `[start, end)`.
    Range(u64, u64),
}

/// Bytes a `height`-row region of `width` bytes per row, `pitch` apart, spans.
fn extent(pitch: u64, width: u64, height: u64) -> u64 {
    pitch
        .saturating_mul(height.saturating_sub(1))
        .saturating_add(width)
}

/// What a request of operation `code` (fixed part `req`, if known) may write on the device.
fn writes(code: Opcode, req: Option<&[u8]>) -> Writes {
    use zerocopy::FromBytes;
    let range = |dst: u64, len: u64| Writes::Range(dst, dst.saturating_add(len));
    match code {
        Opcode::Launch
        | Opcode::LaunchCooperative
        | Opcode::LaunchCluster
        | Opcode::GraphLaunch
        | Opcode::MemcpyArray
        | Opcode::SymbolBind
        | Opcode::BlasCall
        | Opcode::RandGenerate
        | Opcode::DeviceReset => Writes::Anything,
        // The destination of a copy or memset: (start, pitch, bytes per row, rows).
        Opcode::MemcpyHtoD | Opcode::MemcpyHtoDShared | Opcode::MemcpyDtoD | Opcode::Memset => {
            let dst = req.and_then(|b| match code {
                Opcode::MemcpyHtoD => MemcpyHtoDReq::read_from_prefix(b)
                    .ok()
                    .map(|(r, _)| (r.dst, r.dpitch, r.width, r.height)),
                Opcode::MemcpyHtoDShared => MemcpyHtoDSharedReq::read_from_prefix(b)
                    .ok()
                    .map(|(r, _)| (r.dst, r.dpitch, r.width, r.height)),
                Opcode::MemcpyDtoD => MemcpyDtoDReq::read_from_prefix(b)
                    .ok()
                    .map(|(r, _)| (r.dst, r.dpitch, r.width, r.height)),
                _ => MemsetReq::read_from_prefix(b).ok().map(|(r, _)| {
                    let row = r.width.saturating_mul(u64::from(r.elem_size));
                    (r.dst, r.pitch, row, r.height)
                }),
            });
            match dst {
                Some((d, pitch, width, height)) => range(d, extent(pitch, width, height)),
                None => Writes::Anything,
            }
        }
        _ => Writes::Nothing,
    }
}

/// Called before every request of operation `code` (its fixed part `req` where known; `None`
/// for the staging pipeline, whose callers invalidate what they write themselves): sends
/// dirty blocks to the device and, if the request may write managed memory on the device,
/// makes the blocks it may write invalid (every block, for a launch or a library call). The
/// host buffers a request carries never lie in managed memory here (`Client` copies such
/// buffers through its own first). The client calls it through the hooks [`publish`]
/// installs (`crate::client::Coherence`).
fn before(c: &Client, code: Opcode, req: Option<&[u8]>) -> Result<()> {
    if LIVE.load(Ordering::Acquire) == 0 || INTERNAL.with(Cell::get) || forked() {
        return Ok(());
    }
    let w = match req {
        Some(_) => writes(code, req),
        None => Writes::Nothing,
    };
    locked(|| {
        flush(c)?;
        match w {
            Writes::Nothing => {}
            Writes::Anything => invalidate(0, u64::MAX),
            Writes::Range(lo, hi) => invalidate(lo, hi),
        }
        Ok(())
    })
}

/// Sends the dirty blocks and makes the blocks holding `[lo, hi)` invalid: for the device
/// range a request of the staging pipeline writes, which [`before`] does not see.
pub(crate) fn invalidate_range(c: &Client, lo: u64, hi: u64) -> Result<()> {
    if LIVE.load(Ordering::Acquire) == 0 || forked() {
        return Ok(());
    }
    locked(|| {
        flush(c)?;
        invalidate(lo, hi);
        Ok(())
    })
}

/// Whether `[addr, addr + len)` overlaps managed memory this module keeps.
pub(crate) fn overlaps(addr: u64, len: u64) -> bool {
    if LIVE.load(Ordering::Acquire) == 0 || len == 0 || forked() {
        return false;
    }
    let end = addr.saturating_add(len);
    ALLOCS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .range(..end)
        .next_back()
        .is_some_and(|(_, a)| a.base + a.len > addr)
}

/// Runs `f` holding the coherence lock: every change of a block's state and of its pages'
/// protection, and every transfer, happens under it, so a state and its protection always
/// agree and no request passes another's flush.
fn locked<R>(f: impl FnOnce() -> R) -> R {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    HOLDING.with(|h| h.set(true));
    let r = f();
    HOLDING.with(|h| h.set(false));
    r
}

/// Makes the managed memory in `[addr, addr + len)` valid here (fetched where invalid) and,
/// with `write`, dirty: for a buffer the library itself reads or writes while it holds the
/// session (the staging copies), where a fault could not be served.
pub(crate) fn prepare(c: &Client, addr: u64, len: u64, write: bool) -> Result<()> {
    if !overlaps(addr, len) {
        return Ok(());
    }
    let end = addr.saturating_add(len);
    let hits: Vec<Arc<Alloc>> = {
        let g = ALLOCS.read().unwrap_or_else(|e| e.into_inner());
        g.range(..end)
            .rev()
            .take_while(|(_, a)| a.base + a.len > addr)
            .map(|(_, a)| a.clone())
            .collect()
    };
    locked(|| {
        for a in hits {
            let lo = addr.max(a.base) - a.base;
            let hi = end.min(a.base + a.len) - a.base;
            let (first, last) = ((lo / BLOCK) as usize, ((hi - 1) / BLOCK) as usize);
            for k in first..=last {
                if a.blocks[k].load(Ordering::Acquire) == INVALID {
                    fetch(c, &a, k)?;
                }
                if write && a.blocks[k].load(Ordering::Acquire) == CLEAN {
                    make_dirty(&a, k);
                }
            }
        }
        Ok(())
    })
}

/// `mprotect` of `[addr, addr + len)`.
fn protect(addr: u64, len: u64, prot: c_int) -> bool {
    // SAFETY: the range lies in a mapping this module made and owns (a managed allocation's
    // pages); changing its protection affects no other object.
    unsafe { libc::mprotect(addr as *mut c_void, len as usize, prot) == 0 }
}

/// Clean block `k` becomes dirty (writable). Under the coherence lock.
fn make_dirty(a: &Alloc, k: usize) {
    let (start, len) = a.block_range(k);
    protect(start, len, libc::PROT_READ | libc::PROT_WRITE);
    a.blocks[k].store(DIRTY, Ordering::Release);
    DIRTY_BLOCKS.fetch_add(1, Ordering::AcqRel);
}

/// Brings invalid block `k` (and up to [`FETCH_RUN`] - 1 invalid blocks after it) from the
/// device. Under the coherence lock.
fn fetch(c: &Client, a: &Alloc, k: usize) -> Result<()> {
    let n = a.blocks.len();
    let mut end = k;
    while end < n && end - k < FETCH_RUN && a.blocks[end].load(Ordering::Acquire) == INVALID {
        end += 1;
    }
    if end == k {
        return Ok(());
    }
    let (start, len) = a.span(k, end);
    a.transfer(c, start, len, true)?;
    protect(start, len, libc::PROT_READ);
    for b in &a.blocks[k..end] {
        b.store(CLEAN, Ordering::Release);
    }
    a.any_valid.store(true, Ordering::Release);
    Ok(())
}

/// Sends every dirty block to the device; they become clean. Under the coherence lock.
fn flush(c: &Client) -> Result<()> {
    if DIRTY_BLOCKS.swap(0, Ordering::AcqRel) == 0 {
        return Ok(());
    }
    let max_blocks = (c.max_request_data() / BLOCK).max(1) as usize;
    for a in allocs() {
        let n = a.blocks.len();
        let mut k = 0;
        while k < n {
            if a.blocks[k].load(Ordering::Acquire) != DIRTY {
                k += 1;
                continue;
            }
            let first = k;
            while k < n && k - first < max_blocks && a.blocks[k].load(Ordering::Acquire) == DIRTY {
                k += 1;
            }
            let (start, len) = a.span(first, k);
            // Read-only before the copy: a write from here on faults (and waits for this
            // flush) and dirties the block again, for the next flush.
            protect(start, len, libc::PROT_READ);
            for b in &a.blocks[first..k] {
                b.store(CLEAN, Ordering::Release);
            }
            if let Err(e) = a.transfer(c, start, len, false) {
                // Still only here: dirty again, for the next flush.
                protect(start, len, libc::PROT_READ | libc::PROT_WRITE);
                for b in &a.blocks[first..k] {
                    b.store(DIRTY, Ordering::Release);
                }
                DIRTY_BLOCKS.fetch_add(k - first, Ordering::AcqRel);
                return Err(e);
            }
        }
    }
    Ok(())
}

/// The blocks holding `[lo, hi)` become invalid: the device may write them. Under the
/// coherence lock, after a flush (no block is dirty).
fn invalidate(lo: u64, hi: u64) {
    for a in allocs() {
        let (start, end) = (lo.max(a.base), hi.min(a.base + a.len));
        if start >= end {
            continue;
        }
        let whole = start == a.base && end == a.base + a.len;
        if whole && !a.any_valid.swap(false, Ordering::AcqRel) {
            continue;
        }
        let (first, last) = (
            ((start - a.base) / BLOCK) as usize,
            ((end - 1 - a.base) / BLOCK) as usize,
        );
        let (p, _) = a.block_range(first);
        let (q, n) = a.block_range(last);
        protect(p, q + n - p, libc::PROT_NONE);
        for b in &a.blocks[first..=last] {
            b.store(INVALID, Ordering::Release);
        }
    }
}

/// `size` bytes of managed memory: a device allocation mapped here at the same address.
/// `cudaErrorMemoryAllocation` when the device is out of memory or no device allocation's
/// address is free in this process.
pub(crate) fn alloc(c: &Client, device: u32, size: u64) -> Result<u64> {
    let len = size
        .checked_next_multiple_of(PAGE)
        .ok_or(Error::MEMORY_ALLOCATION)?;
    // A page more than mapped, so a page-aligned start lies inside the allocation.
    let want = len.checked_add(PAGE).ok_or(Error::MEMORY_ALLOCATION)?;
    let (fd, alias) = backing(len).map_err(|e| {
        log::warn!("managed memory of {size} bytes: {e}");
        Error::MEMORY_ALLOCATION
    })?;
    let mut taken = Vec::new();
    let mut placed = None;
    let mut failure = None;
    for _ in 0..PLACE_TRIES {
        let r = internal(|| {
            c.call::<ops::Malloc>(&MallocReq {
                device,
                flags: 0,
                size: want,
            })
        });
        let r: PtrResp = match r {
            Ok(r) => r,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        let base = r.ptr.next_multiple_of(PAGE);
        match map_at(c, base, len, fd.as_raw_fd(), libc::PROT_READ) {
            Some(in_reservation) => {
                placed = Some((r.ptr, base, in_reservation));
                break;
            }
            None => taken.push(r.ptr),
        }
    }
    for ptr in taken {
        let _ = internal(|| c.call::<ops::Free>(&PtrReq { ptr }));
    }
    let Some((dev, base, in_reservation)) = placed else {
        // SAFETY: the alias mapped above, used by nothing.
        unsafe { libc::munmap(alias as *mut c_void, len as usize) };
        if failure.is_none() {
            log::warn!(
                "managed memory of {size} bytes: no device allocation's address was free in \
                 this process"
            );
        }
        return Err(failure.unwrap_or(Error::MEMORY_ALLOCATION));
    };
    // Fresh memory starts dirty (writable, its zeros to be sent with the first request), so
    // the program can fill it with system calls too (`read` into a read-only page fails
    // with EFAULT instead of faulting).
    protect(base, len, libc::PROT_READ | libc::PROT_WRITE);
    let nblocks = len.div_ceil(BLOCK) as usize;
    let a = Alloc {
        base,
        len,
        alias,
        dev,
        segments: vec![(base, len)],
        in_reservation,
        blocks: (0..nblocks).map(|_| AtomicU8::new(DIRTY)).collect(),
        any_valid: AtomicBool::new(true),
    };
    DIRTY_BLOCKS.fetch_add(nblocks, Ordering::AcqRel);
    publish(a);
    log::debug!("{size} bytes of managed memory at {base:#x}, kept coherent by the library");
    Ok(base)
}

/// A memfd of `len` bytes for managed memory and the library's view of it.
fn backing(len: u64) -> std::io::Result<(std::os::fd::OwnedFd, u64)> {
    let n = usize::try_from(len).map_err(std::io::Error::other)?;
    let fd = crate::memfd::sealed_memfd(c"vcuda-managed", n)?;
    // SAFETY: a new shared mapping of our own memfd where the kernel chooses.
    let alias = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            n,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if alias == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok((fd, alias as u64))
}

/// Makes `a` known: the fault handler serves it and requests keep it coherent.
fn publish(a: Alloc) {
    for (p, n) in [(a.alias, a.len), (a.base, a.len)] {
        // SAFETY: advice on this allocation's own mappings: a forked child gets neither.
        unsafe { libc::madvise(p as *mut c_void, n as usize, libc::MADV_DONTFORK) };
    }
    let _ = OWNER.set(std::process::id());
    install_handler();
    crate::client::install_coherence(crate::client::Coherence { before, overlaps });
    ALLOCS
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(a.base, Arc::new(a));
    LIVE.fetch_add(1, Ordering::AcqRel);
}

/// Keeps module variables (`__managed__` variables where the executor cannot move them
/// into managed memory of the library's), `(device address, size)` each, coherent as
/// managed memory at their own addresses: the pages holding them are mapped here at the
/// same address (one window per run of variables on touching pages), invalid at first, so
/// the host's first access brings the module's initial values. Only the variables' bytes
/// travel. A window is never freed (the module's memory is the backend's);
/// `cudaDeviceReset` drops it. `cudaErrorNotSupported` where the pages are taken here
/// (another window or managed allocation, or anything else of this process's).
pub(crate) fn adopt(c: &Client, vars: &[(u64, u64)]) -> Result<()> {
    let mut vars: Vec<(u64, u64)> = vars.iter().copied().filter(|v| v.1 > 0).collect();
    vars.sort_unstable();
    let page_end = |(p, n): (u64, u64)| p.saturating_add(n).checked_next_multiple_of(PAGE);
    let mut groups: Vec<Vec<(u64, u64)>> = Vec::new();
    for v in vars {
        match groups.last_mut() {
            Some(g)
                if g.iter().filter_map(|&w| page_end(w)).max().unwrap_or(0) > v.0 - v.0 % PAGE =>
            {
                g.push(v);
            }
            _ => groups.push(vec![v]),
        }
    }
    // All windows or none: a failure drops (unmaps) those already made.
    let mut made = Vec::with_capacity(groups.len());
    for segments in groups {
        let base = segments[0].0 - segments[0].0 % PAGE;
        let end = segments
            .iter()
            .filter_map(|&w| page_end(w))
            .max()
            .ok_or(Error::INVALID_VALUE)?;
        made.push(window(c, base, end - base, segments, &made)?);
    }
    for a in made {
        log::debug!(
            "__managed__ variables at {:#x}..{:#x} kept coherent by the library",
            a.base,
            a.base + a.len
        );
        publish(a);
    }
    Ok(())
}

/// One window of [`adopt`]: `len` bytes at `base` over the variables `segments`.
fn window(
    c: &Client,
    base: u64,
    len: u64,
    segments: Vec<(u64, u64)>,
    made: &[Alloc],
) -> Result<Alloc> {
    let fail = |why: &str| {
        log::error!(
            "__managed__ variables at {base:#x}..{:#x}: {why}; this module's kernels cannot run",
            base + len
        );
        Error::NOT_SUPPORTED
    };
    let overlaps = ALLOCS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .range(..base + len)
        .next_back()
        .is_some_and(|(_, a)| a.base + a.len > base)
        || made
            .iter()
            .any(|a| a.base < base + len && base < a.base + a.len);
    if overlaps {
        return Err(fail("their pages hold other managed memory"));
    }
    let (fd, alias) = backing(len).map_err(|e| fail(&e.to_string()))?;
    let Some(in_reservation) = map_at(c, base, len, fd.as_raw_fd(), libc::PROT_NONE) else {
        // SAFETY: the alias just mapped, used by nothing.
        unsafe { libc::munmap(alias as *mut c_void, len as usize) };
        return Err(fail("their addresses are taken in this process"));
    };
    Ok(Alloc {
        base,
        len,
        alias,
        dev: 0,
        segments,
        in_reservation,
        blocks: (0..len.div_ceil(BLOCK))
            .map(|_| AtomicU8::new(INVALID))
            .collect(),
        any_valid: AtomicBool::new(false),
    })
}

/// Whether `ptr` lies in module variables kept by [`adopt`] (not the program's to free).
pub(crate) fn is_adopted(ptr: u64) -> bool {
    LIVE.load(Ordering::Acquire) != 0 && find(ptr).is_some_and(|a| a.dev == 0)
}

/// Maps `len` bytes of memfd `fd` at `base` with protection `prot`, for the program;
/// `Some(in_reservation)` on success.
fn map_at(c: &Client, base: u64, len: u64, fd: c_int, prot: c_int) -> Option<bool> {
    let (va, va_len) = c.device_va;
    let in_reservation = base >= va && base.saturating_add(len) <= va.saturating_add(va_len);
    let flags = libc::MAP_SHARED
        | if in_reservation {
            libc::MAP_FIXED
        } else {
            libc::MAP_FIXED_NOREPLACE
        };
    // SAFETY: inside the library's own reservation (no other object lives there; device
    // allocations never overlap, so neither do these mappings) with MAP_FIXED, elsewhere
    // only where nothing is mapped (MAP_FIXED_NOREPLACE).
    let p = unsafe { libc::mmap(base as *mut c_void, len as usize, prot, flags, fd, 0) };
    if p == libc::MAP_FAILED {
        return None;
    }
    if p as u64 != base {
        // A kernel without MAP_FIXED_NOREPLACE took the address as a hint.
        // SAFETY: the mapping just made, used by nothing.
        unsafe { libc::munmap(p, len as usize) };
        return None;
    }
    Some(in_reservation)
}

impl Drop for Alloc {
    /// Unmaps both views when the last user is done with them (a flush or fetch in another
    /// thread may hold the allocation while it is freed).
    fn drop(&mut self) {
        unmap(self);
    }
}

/// Removes both views of `a`; inside the reservation the program's becomes reserved again.
fn unmap(a: &Alloc) {
    // SAFETY: the library's view, in no table any more.
    unsafe { libc::munmap(a.alias as *mut c_void, a.len as usize) };
    if a.in_reservation {
        // SAFETY: the allocation's own pages, back to the PROT_NONE reservation they were.
        unsafe {
            libc::mmap(
                a.base as *mut c_void,
                a.len as usize,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                -1,
                0,
            )
        };
    } else {
        // SAFETY: the allocation's own mapping, in no table any more.
        unsafe { libc::munmap(a.base as *mut c_void, a.len as usize) };
    }
}

/// Frees the managed memory starting at `ptr`; `false` if this module does not keep it.
/// The caller waited for the device.
pub(crate) fn free(c: &Client, ptr: u64) -> Result<bool> {
    let a = {
        let mut g = ALLOCS.write().unwrap_or_else(|e| e.into_inner());
        match g.get(&ptr) {
            Some(a) if a.dev != 0 => g.remove(&ptr),
            _ => None,
        }
    };
    let Some(a) = a else { return Ok(false) };
    LIVE.fetch_sub(1, Ordering::AcqRel);
    let dev = a.dev;
    drop(a);
    internal(|| c.call::<ops::Free>(&PtrReq { ptr: dev }))?;
    Ok(true)
}

/// After `cudaDeviceReset`: the device side of every allocation is gone, so the process's
/// side goes too. Returns the ranges dropped, `(start, length)`.
pub(crate) fn on_reset() -> Vec<(u64, u64)> {
    let all = std::mem::take(&mut *ALLOCS.write().unwrap_or_else(|e| e.into_inner()));
    LIVE.fetch_sub(all.len(), Ordering::AcqRel);
    all.into_values().map(|a| (a.base, a.len)).collect()
}

/// Installs the `SIGSEGV` handler (once), keeping the program's.
fn install_handler() {
    INSTALL.call_once(|| {
        // SAFETY: a zeroed sigaction is a valid empty one; the handler is an
        // `extern "C" fn(c_int, *mut siginfo_t, *mut c_void)` as SA_SIGINFO requires.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_fault as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
            libc::sigemptyset(&mut act.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGSEGV, &act, &mut old) == 0 {
                let _ = OLD_ACTION.set(old);
            } else {
                log::error!("cannot install the managed memory fault handler");
            }
        }
    });
}

/// Writes `msg` to stderr and aborts: a fault the handler cannot serve.
fn die(msg: &str) -> ! {
    crate::logging::alert(msg);
    std::process::abort()
}

/// Serves a fault at `addr` (`write`: a write, where the architecture says) if it lies in
/// managed memory; `false` if it does not.
fn serve(addr: u64, write: Option<bool>) -> bool {
    if forked() {
        return false;
    }
    let Some(a) = find(addr) else { return false };
    if HOLDING.with(Cell::get) {
        die(&format!(
            "managed memory at {addr:#x} was touched while the library was keeping it coherent \
             (from a signal handler?)"
        ));
    }
    let k = ((addr - a.base) / BLOCK) as usize;
    locked(|| {
        let state = a.blocks[k].load(Ordering::Acquire);
        if state == INVALID {
            if crate::client::busy() {
                die(&format!(
                    "managed memory at {addr:#x} was touched by the library while it held the \
                     session (another thread launched work on it meanwhile? the program must \
                     not touch managed memory while kernels that may use it run)"
                ));
            }
            let Some(c) = crate::client::connected() else {
                die("managed memory touched without a session");
            };
            if let Err(e) = fetch(c, &a, k) {
                die(&format!(
                    "cannot bring managed memory at {addr:#x} from the device (error {})",
                    e.0
                ));
            }
        }
        // A read of an invalid block is served; a write to a clean one (or to one just
        // fetched) makes it dirty. Where the kind of access is unknown, a fault on a clean
        // block is a write (reads do not fault there), and one on a block just fetched
        // faults again if it is a write.
        let now_clean = a.blocks[k].load(Ordering::Acquire) == CLEAN;
        if now_clean && (write == Some(true) || (state == CLEAN && write.is_none())) {
            make_dirty(&a, k);
        }
    });
    true
}

/// Whether the fault `ctx` describes was a write (`None`: not known on this architecture).
#[allow(unused_variables)]
fn fault_is_write(ctx: *mut c_void) -> Option<bool> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the kernel passes a valid ucontext to an SA_SIGINFO handler; bit 1 of the
        // page-fault error code is set for writes.
        let err = unsafe {
            (*(ctx as *const libc::ucontext_t)).uc_mcontext.gregs[libc::REG_ERR as usize]
        };
        Some(err & 2 != 0)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

extern "C" fn on_fault(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo for SIGSEGV.
    let (addr, code) = unsafe { ((*info).si_addr() as u64, (*info).si_code) };
    // A positive code is a fault (SEGV_MAPERR, SEGV_ACCERR, ...); others were sent (kill).
    let fault = code > 0;
    if fault {
        let write = fault_is_write(ctx);
        let served = std::panic::catch_unwind(|| serve(addr, write))
            .unwrap_or_else(|_| die("the managed memory fault handler failed"));
        if served {
            return;
        }
    }
    let Some(old) = OLD_ACTION.get() else {
        die(&format!("segmentation fault at {addr:#x}"));
    };
    match old.sa_sigaction {
        libc::SIG_IGN if !fault => {}
        libc::SIG_DFL | libc::SIG_IGN => {
            // Back to the default, as the program would have ended: a fault runs its
            // instruction again; a sent signal is sent again.
            // SAFETY: a zeroed sigaction with SIG_DFL (0) is the default action.
            unsafe {
                let dfl: libc::sigaction = std::mem::zeroed();
                libc::sigaction(libc::SIGSEGV, &dfl, std::ptr::null_mut());
                if !fault {
                    libc::raise(libc::SIGSEGV);
                }
            }
        }
        h if old.sa_flags & libc::SA_SIGINFO != 0 => {
            // SAFETY: the program installed this handler with SA_SIGINFO.
            let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                unsafe { std::mem::transmute(h) };
            f(sig, info, ctx);
        }
        h => {
            // SAFETY: the program installed this plain handler.
            let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(h) };
            f(sig);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_ranges_cover_the_mapping() {
        let a = Alloc {
            base: 0x10_0000,
            len: BLOCK * 2 + PAGE,
            alias: 0x20_0000,
            dev: 0x10_0000,
            segments: vec![(0x10_0000, BLOCK * 2 + PAGE)],
            in_reservation: false,
            blocks: (0..3).map(|_| AtomicU8::new(CLEAN)).collect(),
            any_valid: AtomicBool::new(true),
        };
        assert_eq!(a.block_range(0), (0x10_0000, BLOCK));
        assert_eq!(a.block_range(2), (0x10_0000 + 2 * BLOCK, PAGE));
        assert_eq!(a.span(1, 3), (0x10_0000 + BLOCK, BLOCK + PAGE));
    }

    #[test]
    fn only_work_that_may_write_the_device_invalidates() {
        use zerocopy::IntoBytes;
        assert_eq!(writes(Opcode::Launch, None), Writes::Anything);
        assert_eq!(writes(Opcode::BlasCall, None), Writes::Anything);
        assert_eq!(writes(Opcode::Memset, None), Writes::Anything);
        assert_eq!(writes(Opcode::MemcpyDtoH, None), Writes::Nothing);
        assert_eq!(writes(Opcode::StreamSynchronize, None), Writes::Nothing);
        assert_eq!(writes(Opcode::Malloc, None), Writes::Nothing);
        let m = MemsetReq {
            dst: 0x1000,
            pitch: 256,
            width: 10,
            height: 3,
            stream: 0,
            value: 0,
            elem_size: 4,
            flags: 0,
        };
        assert_eq!(
            writes(Opcode::Memset, Some(m.as_bytes())),
            Writes::Range(0x1000, 0x1000 + 512 + 40)
        );
        let h = MemcpyHtoDReq {
            dst: u64::MAX - 1,
            dpitch: 8,
            width: 8,
            height: 1,
            stream: 0,
            flags: 0,
            reserved: 0,
        };
        assert_eq!(
            writes(Opcode::MemcpyHtoD, Some(h.as_bytes())),
            Writes::Range(u64::MAX - 1, u64::MAX)
        );
    }
}
