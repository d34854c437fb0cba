// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Memory a guest process shares with the backend: a memory file passed over a Unix socket
//! (one host), or pages of a VM's RAM (vhost-user).
//!
//! The library creates page-locked host memory (`cudaMallocHost`, `cudaHostAlloc`) as a
//! sealed memfd and passes it over the Unix socket (`SCM_RIGHTS`) with a `ShareMemory`
//! request; copies to and from it then name `(region, offset)` instead of carrying the
//! bytes, and the executor copies straight between the mapping and device memory: one copy,
//! as pinned memory is meant to be.
//!
//! Everything about the file is the guest's and may be hostile. A region is mapped only if
//! the file is a regular shmem file (not hugetlbfs, whose faults can raise `SIGBUS` when
//! the pool runs dry) sealed against shrinking (so no access past its end can `SIGBUS`)
//! and at least as long as the request says; once mapped, the backend seals it against
//! writes (`F_SEAL_FUTURE_WRITE`, [`vcuda_ring::seal_mapped_file`]), so the guest can no
//! longer punch holes in it. Every access is checked against the region's length, and a
//! copy touches only pages the guest has already populated (`mincore`), which stay so: the
//! backend never allocates the guest's memory on its behalf. The file
//! descriptor is closed once mapped; the mapping goes away with the region or the session.
//!
//! In a VM the guest's kernel module pins the program's page-locked memory and names its
//! guest-physical pages (`ChainOp::SharePages`, [`SharedRegions::share_pieces`]); the
//! transport resolves them to pieces of the guest RAM's files, which are mapped here one
//! after another into one range: the program's memory at one address of this process,
//! with no copy (as virtio-gpu's attached backing). These are the VM's own RAM, which the
//! backend reads and writes anyway, so no population check applies. Pieces the files
//! cannot merge are mappings of their own, so their number is bounded per process
//! ([`MAX_GUEST_PIECES`]) and per session ([`MAX_SESSION_PIECES`]).

use std::collections::HashMap;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use log::debug;
use vcuda_protocol::{MemcpyDtoHSharedReq, MemcpyHtoDSharedReq};
use vm_memory::VolatileSlice;

use crate::data::DataSegs;
use crate::executor::{ExecResult, Executor, Status};
use crate::resident::{all_resident, page_size};

/// Most regions one session may map.
pub const MAX_REGIONS: usize = 4096;
/// Most bytes one session may map in all.
pub const MAX_SHARED_BYTES: u64 = 1 << 40;

/// Most mappings of guest RAM pieces in this process, all sessions together (each is a
/// kernel memory area; Linux allows 65,530 per process by default).
pub const MAX_GUEST_PIECES: usize = 32768;

/// Most of them one session may map (so that one guest process cannot take them all).
pub const MAX_SESSION_PIECES: usize = MAX_GUEST_PIECES / 4;

/// Guest RAM pieces mapped in this process now.
static GUEST_PIECES: AtomicUsize = AtomicUsize::new(0);

/// Most memory files (`ShareMemory`) mapped in this process, all sessions together: with
/// the guest RAM pieces, well within the kernel's 65,530 memory areas a process may have
/// by default (`vm.max_map_count`), so no session's many small regions can stop another's
/// `cudaMalloc` or a new client from being served.
pub const MAX_FILE_REGIONS: usize = 16384;

/// Memory files mapped in this process now.
static FILE_REGIONS: AtomicUsize = AtomicUsize::new(0);

/// One mapped region.
struct Mapping {
    ptr: NonNull<libc::c_void>,
    len: usize,
    /// Pieces of guest RAM it maps (0: a memory file the guest passed, whose pages are
    /// checked for population before use).
    pieces: Claim,
    /// For a memory file: its place in [`MAX_FILE_REGIONS`].
    _file: Option<Claim>,
    /// The lengths of the mappings it was made of, one after another, in whole pages (one
    /// for a memory file, one per merged piece of guest RAM): [`SharedRegions::alias`]
    /// duplicates each within its own bounds.
    spans: Vec<usize>,
}

// SAFETY: the mapping is plain shared memory owned by this struct; it may be used and
// unmapped from any thread.
unsafe impl Send for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly the mapping `map` or `map_pieces` created,
        // unmapped only here.
        unsafe { libc::munmap(self.ptr.as_ptr(), self.len) };
    }
}

/// A number of mappings counted process-wide ([`GUEST_PIECES`] or [`FILE_REGIONS`]), given
/// back on drop.
#[derive(Debug)]
struct Claim(usize, &'static AtomicUsize);

impl Claim {
    /// Claims `n` more guest RAM pieces, within [`MAX_GUEST_PIECES`] (`what` names the
    /// request in the log).
    fn new(n: usize, what: &str) -> ExecResult<Claim> {
        Self::take(n, &GUEST_PIECES, MAX_GUEST_PIECES, what)
    }

    /// Claims one more memory file, within [`MAX_FILE_REGIONS`].
    fn file() -> ExecResult<Claim> {
        Self::take(1, &FILE_REGIONS, MAX_FILE_REGIONS, "ShareMemory")
    }

    fn take(n: usize, count: &'static AtomicUsize, max: usize, what: &str) -> ExecResult<Claim> {
        if count.fetch_add(n, Ordering::Relaxed) + n > max {
            count.fetch_sub(n, Ordering::Relaxed);
            debug!("{what} refused: over {max} mapped in this process");
            return Err(Status::MEMORY_ALLOCATION);
        }
        Ok(Claim(n, count))
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.1.fetch_sub(self.0, Ordering::Relaxed);
    }
}

/// An inaccessible reservation of `len` bytes: where the kernel chooses, or exactly at `at`
/// (`None` rather than replacing anything mapped there). The caller unmaps it.
fn reserve(at: Option<u64>, len: usize) -> Option<NonNull<libc::c_void>> {
    let (hint, fixed) = match at {
        Some(a) => (a as *mut libc::c_void, libc::MAP_FIXED_NOREPLACE),
        None => (std::ptr::null_mut(), 0),
    };
    // SAFETY: a fresh inaccessible mapping; `MAP_FIXED_NOREPLACE` fails rather than
    // replace anything, and without it the kernel chooses a free range.
    let r = unsafe {
        libc::mmap(
            hint,
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | fixed,
            -1,
            0,
        )
    };
    if r == libc::MAP_FAILED {
        return None;
    }
    match (NonNull::new(r), at) {
        (Some(p), Some(a)) if p.as_ptr() as u64 != a => {
            // A kernel that ignores MAP_FIXED_NOREPLACE put it elsewhere.
            // SAFETY: the reservation just made, owned by nothing else.
            unsafe { libc::munmap(r, len) };
            None
        }
        (p, _) => p,
    }
}

/// Address space held, inaccessible, for an alias not made yet: a loaded session's ranges
/// mapped for kernels, from the load until this backend maps the guest's memory
/// ([`hold_alias_span`]), so that nothing else of this process takes them meanwhile.
/// Unmapped on drop, unless an alias took it over ([`SharedRegions::alias`]).
pub struct AddressHold {
    ptr: NonNull<libc::c_void>,
    len: usize,
}

// SAFETY: an inaccessible reservation (or the alias that replaced it) owned by this
// struct, unmapped from any thread.
unsafe impl Send for AddressHold {}

impl std::fmt::Debug for AddressHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddressHold")
            .field("at", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

impl Drop for AddressHold {
    fn drop(&mut self) {
        // SAFETY: exactly the reservation `reserve` made (perhaps filled by an alias),
        // unmapped only here.
        unsafe { libc::munmap(self.ptr.as_ptr(), self.len) };
    }
}

/// The whole pages `(at, len)` an alias of `len` bytes at `offset` of a region, to `addr`,
/// maps: `addr` and `offset` must lie the same distance past a page boundary.
fn alias_span(offset: u64, len: u64, addr: u64) -> ExecResult<(u64, usize)> {
    let page = page_size() as u64;
    if offset % page != addr % page || len == 0 || len > MAX_SHARED_BYTES {
        return Err(Status::INVALID_VALUE);
    }
    let n = (addr % page + len).next_multiple_of(page);
    let at = addr - addr % page;
    at.checked_add(n).ok_or(Status::INVALID_VALUE)?;
    Ok((at, usize::try_from(n).map_err(|_| Status::INVALID_VALUE)?))
}

/// Holds the address space [`SharedRegions::alias`] would map for `len` bytes at `offset`
/// of a region to `addr`, for an alias made later with the hold. Fails with
/// `cudaErrorInvalidValue` for a span `alias` would refuse, and with
/// `cudaErrorNotSupported` where anything of this process is mapped there already.
pub fn hold_alias_span(offset: u64, len: u64, addr: u64) -> ExecResult<AddressHold> {
    let (at, n) = alias_span(offset, len, addr)?;
    reserve(Some(at), n)
        .map(|ptr| AddressHold { ptr, len: n })
        .ok_or(Status::NOT_SUPPORTED)
}

/// A second mapping of part of a shared region, at the guest's address of it
/// ([`SharedRegions::alias`]); unmapped on drop.
#[derive(Debug)]
pub struct Alias {
    span: AddressHold,
    /// Guest RAM pieces it maps (counted in [`MAX_GUEST_PIECES`]).
    _pieces: Claim,
}

impl Alias {
    /// Where it starts (the guest's address of the region's first byte it maps, rounded
    /// down to a page).
    pub fn addr(&self) -> u64 {
        self.span.ptr.as_ptr() as u64
    }
}

/// The parts of `[start, stop)` (offsets into a region) inside each of its spans: `(lo, hi)`
/// offsets, each inside one span.
fn spans_within(
    spans: &[usize],
    start: usize,
    stop: usize,
) -> impl Iterator<Item = (usize, usize)> {
    spans
        .iter()
        .scan(0usize, |at, &n| {
            let s = *at;
            *at += n;
            Some((s, s + n))
        })
        .filter_map(move |(s, e)| {
            let (lo, hi) = (s.max(start), e.min(stop));
            (lo < hi).then_some((lo, hi))
        })
}

/// A piece of a file to map: the file, the offset in it and the length, page-aligned.
pub type Piece<'f> = (BorrowedFd<'f>, u64, usize);

/// Guest-physical extents `(address, length)` of a region of guest pages, in order.
pub type Extents = Vec<(u64, u64)>;

/// Turns guest-physical extents into pieces of the guest's memory as this backend maps it
/// (the vhost-user transport's `pages::pieces`).
pub type ResolvePieces<'m> = dyn Fn(&[(u64, u64)]) -> Result<Vec<Piece<'m>>, String> + 'm;

/// A session's shared regions.
#[derive(Default)]
pub struct SharedRegions {
    regions: HashMap<u64, Mapping>,
    next: u64,
    total: u64,
    /// File descriptors that came with the message being handled.
    pending: Vec<OwnedFd>,
    /// The guest-physical extents `(address, length)` of each region of guest pages (a VM's),
    /// by handle: what a migrating session keeps of them (see `session/state.rs`).
    extents: HashMap<u64, Extents>,
}

impl std::fmt::Debug for SharedRegions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedRegions")
            .field("regions", &self.regions.len())
            .field("bytes", &self.total)
            .finish()
    }
}

impl SharedRegions {
    /// Whether the guest shares no memory with the session now.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// Hands over the file descriptors that came with the next message; those its requests
    /// do not take are closed by [`SharedRegions::end_message`].
    pub fn offer(&mut self, fds: Vec<OwnedFd>) {
        self.pending = fds;
    }

    /// Takes the first descriptor that came with the message, if any (a `Hello`'s call
    /// ring).
    pub fn take_fd(&mut self) -> Option<OwnedFd> {
        (!self.pending.is_empty()).then(|| self.pending.remove(0))
    }

    /// Closes the descriptors no request took.
    pub fn end_message(&mut self) {
        self.pending.clear();
    }

    /// Maps `len` bytes of the first descriptor that came with the message; returns the
    /// region's handle.
    pub fn share(&mut self, len: u64) -> ExecResult<u64> {
        if self.pending.is_empty() {
            debug!("ShareMemory without a file descriptor");
            return Err(Status::INVALID_VALUE);
        }
        let fd = self.pending.remove(0);
        self.admit(len)?;
        let m = map(&fd, len)?;
        Ok(self.insert(m))
    }

    /// Checks that one more region of `len` bytes stays within the session's bounds.
    fn admit(&self, len: u64) -> ExecResult<()> {
        if self.regions.len() >= MAX_REGIONS
            || self
                .total
                .checked_add(len)
                .is_none_or(|t| t > MAX_SHARED_BYTES)
        {
            return Err(Status::MEMORY_ALLOCATION);
        }
        Ok(())
    }

    /// Adds a region admitted by [`SharedRegions::admit`]: its handle.
    fn insert(&mut self, m: Mapping) -> u64 {
        self.next += 1;
        self.total += m.len as u64;
        self.regions.insert(self.next, m);
        self.next
    }

    /// Maps `pieces` (guest RAM, resolved from a VM's `SharePages` naming guest-physical
    /// `extents`) one after another into one range; returns the region's handle.
    /// Neighbouring pieces of one file merge.
    pub fn share_pieces(
        &mut self,
        pieces: &[Piece<'_>],
        extents: &[(u64, u64)],
    ) -> ExecResult<u64> {
        let m = self.map_guest_pieces(pieces)?;
        let h = self.insert(m);
        self.extents.insert(h, extents.to_vec());
        Ok(h)
    }

    /// The regions of guest pages, by handle, with their guest-physical extents; `None` if a
    /// region is a memory file (a Unix socket's).
    pub fn guest_regions(&self) -> Option<Vec<(u64, Extents)>> {
        let mut out = Vec::with_capacity(self.regions.len());
        for &h in self.regions.keys() {
            out.push((h, self.extents.get(&h)?.clone()));
        }
        out.sort_unstable_by_key(|(h, _)| *h);
        Some(out)
    }

    /// The counter behind region handles.
    pub fn next_handle(&self) -> u64 {
        self.next
    }

    /// Re-creates region `handle` (of a loaded session) over `pieces`, the guest pages at
    /// `extents` in this backend's map of the guest's memory; the handle counter goes to at
    /// least `next`.
    pub fn restore_pieces(
        &mut self,
        handle: u64,
        pieces: &[Piece<'_>],
        extents: &[(u64, u64)],
        next: u64,
    ) -> ExecResult<()> {
        if handle == 0 || handle > next || self.regions.contains_key(&handle) {
            return Err(Status::INVALID_VALUE);
        }
        let m = self.map_guest_pieces(pieces)?;
        self.total += m.len as u64;
        self.regions.insert(handle, m);
        self.extents.insert(handle, extents.to_vec());
        self.next = self.next.max(next);
        Ok(())
    }

    /// Maps guest RAM pieces into one range, within the session's and the process's bounds.
    fn map_guest_pieces(&mut self, pieces: &[Piece<'_>]) -> ExecResult<Mapping> {
        let len = pieces
            .iter()
            .try_fold(0u64, |t, p| t.checked_add(p.2 as u64))
            .ok_or(Status::INVALID_VALUE)?;
        self.admit(len)?;
        let pieces = merge(pieces);
        let mine: usize = self.regions.values().map(|m| m.pieces.0).sum();
        if mine + pieces.len() > MAX_SESSION_PIECES {
            debug!("SharePages refused: over {MAX_SESSION_PIECES} guest RAM pieces in the session");
            return Err(Status::MEMORY_ALLOCATION);
        }
        map_pieces(&pieces)
    }

    /// Where a region is mapped in this process: `(address, length)`.
    pub fn range(&self, handle: u64) -> Option<(usize, usize)> {
        self.regions
            .get(&handle)
            .map(|m| (m.ptr.as_ptr() as usize, m.len))
    }

    /// Unmaps a region.
    pub fn unshare(&mut self, handle: u64) -> ExecResult<()> {
        let m = self.regions.remove(&handle).ok_or(Status::INVALID_VALUE)?;
        self.extents.remove(&handle);
        self.total -= m.len as u64;
        Ok(())
    }

    /// The address in this process of `len` bytes at `offset` of a region, every page of
    /// them already populated by the guest (for exposing them to kernels).
    pub fn host_range(&self, handle: u64, offset: u64, len: u64) -> ExecResult<usize> {
        let m = self.regions.get(&handle).ok_or(Status::INVALID_VALUE)?;
        match offset.checked_add(len) {
            Some(end) if len > 0 && end <= m.len as u64 => {}
            _ => return Err(Status::INVALID_VALUE),
        }
        if m.pieces.0 == 0 {
            check_populated(m, offset as usize, len as usize)?;
        }
        Ok(m.ptr.as_ptr() as usize + offset as usize)
    }

    /// Maps `len` bytes at `offset` of a region a second time, at `addr` in this process
    /// (the guest's own address of that memory, which an executor that hands this
    /// process's addresses to its device needs: kernels then reach the guest's memory at
    /// the guest's pointers). `addr` and `offset` must lie the same distance past a page
    /// boundary. Fails with `cudaErrorNotSupported` where anything of this process is
    /// mapped there already (nothing is ever replaced but `held`, the span
    /// [`hold_alias_span`] held for this alias), or where the kernel cannot duplicate the
    /// mapping. Every page must be populated, as for [`SharedRegions::host_range`]. The
    /// alias goes when dropped.
    pub fn alias(
        &self,
        handle: u64,
        offset: u64,
        len: u64,
        addr: u64,
        held: Option<AddressHold>,
    ) -> ExecResult<Alias> {
        self.host_range(handle, offset, len)?;
        let m = &self.regions[&handle];
        let (at, n) = alias_span(offset, len, addr)?;
        let start = offset - addr % page_size() as u64;
        let stop = start + n as u64;
        let pieces = if m.pieces.0 == 0 {
            0
        } else {
            spans_within(&m.spans, start as usize, stop as usize).count()
        };
        let claim = Claim::new(pieces, "MapHostMemory")?;
        let span = match held {
            Some(h) if h.ptr.as_ptr() as u64 == at && h.len == n => h,
            Some(h) => {
                debug!("MapHostMemory at {at:#x}+{n:#x}: the span held is {h:?}");
                return Err(Status::INVALID_VALUE);
            }
            None => {
                let Some(ptr) = reserve(Some(at), n) else {
                    debug!("MapHostMemory at {at:#x}+{n:#x} not in place: the address is taken");
                    return Err(Status::NOT_SUPPORTED);
                };
                AddressHold { ptr, len: n }
            }
        };
        // From here the alias is unmapped (and its pieces given back) on every path.
        let alias = Alias {
            span,
            _pieces: claim,
        };
        for (lo, hi) in spans_within(&m.spans, start as usize, stop as usize) {
            // SAFETY: `[lo, hi)` lies inside one of the region's own shared mappings (a span,
            // clipped), page-aligned; with an old size of 0, `mremap` maps the same pages
            // again, at `at + (lo - start)`, inside the reservation `alias` owns, which
            // `MREMAP_FIXED` replaces, and nothing else.
            let p = unsafe {
                libc::mremap(
                    m.ptr.as_ptr().cast::<u8>().add(lo).cast(),
                    0,
                    hi - lo,
                    libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                    (at as usize + (lo - start as usize)) as *mut libc::c_void,
                )
            };
            if p == libc::MAP_FAILED {
                debug!(
                    "MapHostMemory at {at:#x}+{n:#x} not in place: mremap: {}",
                    std::io::Error::last_os_error()
                );
                return Err(Status::NOT_SUPPORTED);
            }
        }
        Ok(alias)
    }

    /// Runs a copy from a region to the device (`MemcpyHtoDShared`).
    pub fn copy_to_device(&self, e: &mut dyn Executor, r: &MemcpyHtoDSharedReq) -> ExecResult<()> {
        let len = r.width.checked_mul(r.height).ok_or(Status::INVALID_VALUE)?;
        e.memcpy_htod(&r.copy(), &self.segs(r.region, r.offset, len)?)
    }

    /// Runs a copy from the device to a region (`MemcpyDtoHShared`).
    pub fn copy_to_host(&self, e: &mut dyn Executor, r: &MemcpyDtoHSharedReq) -> ExecResult<()> {
        let len = r.width.checked_mul(r.height).ok_or(Status::INVALID_VALUE)?;
        e.memcpy_dtoh(&r.copy(), &self.segs(r.region, r.offset, len)?)
    }

    /// `len` bytes at `offset` of a region, every page of them already populated by the
    /// guest.
    pub fn segs(&self, handle: u64, offset: u64, len: u64) -> ExecResult<DataSegs<'_>> {
        let m = self.regions.get(&handle).ok_or(Status::INVALID_VALUE)?;
        match offset.checked_add(len) {
            Some(end) if end <= m.len as u64 => {}
            _ => return Err(Status::INVALID_VALUE),
        }
        if len == 0 {
            return Ok(DataSegs::default());
        }
        if m.pieces.0 == 0 {
            check_populated(m, offset as usize, len as usize)?;
        }
        // SAFETY: `[offset, offset + len)` lies inside the live mapping (checked above),
        // which outlives the returned slice (it borrows `self`). The guest may write the
        // memory concurrently, which VolatileSlice's accessors allow for.
        let s = unsafe {
            VolatileSlice::new(
                m.ptr.as_ptr().cast::<u8>().add(offset as usize),
                len as usize,
            )
        };
        Ok(DataSegs::new(vec![s]))
    }
}

/// Checks the file and maps it shared, read-write.
fn map(fd: &OwnedFd, len: u64) -> ExecResult<Mapping> {
    let bad = |why: &str| {
        debug!("ShareMemory refused: {why}");
        Status::INVALID_VALUE
    };
    let len_usize = usize::try_from(len).map_err(|_| bad("too long"))?;
    if len == 0 {
        return Err(bad("empty"));
    }
    vcuda_ring::check_sealed_file(fd, len).map_err(|e| bad(&e.to_string()))?;
    let file = Claim::file()?;
    // SAFETY: a new shared mapping of a file we checked, at an address the kernel chooses;
    // it overlaps nothing else and is unmapped only by `Mapping::drop`.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len_usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_NORESERVE,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(bad(&format!("mmap: {}", std::io::Error::last_os_error())));
    }
    let ptr = NonNull::new(p).ok_or_else(|| bad("mmap returned null"))?;
    let m = Mapping {
        ptr,
        len: len_usize,
        pieces: Claim(0, &GUEST_PIECES),
        _file: Some(file),
        spans: vec![len_usize.next_multiple_of(page_size())],
    };
    // From here the guest can neither punch holes in the pages the population checks see
    // nor make new writable mappings; this mapping stays writable.
    vcuda_ring::seal_mapped_file(fd).map_err(|e| bad(&e.to_string()))?;
    Ok(m)
}

/// `pieces` with neighbours that continue each other in one file merged.
fn merge<'f>(pieces: &[Piece<'f>]) -> Vec<Piece<'f>> {
    let mut out: Vec<Piece<'f>> = Vec::with_capacity(pieces.len());
    for &(fd, off, len) in pieces {
        if let Some(last) = out.last_mut()
            && last.0.as_raw_fd() == fd.as_raw_fd()
            && last.1.checked_add(last.2 as u64) == Some(off)
        {
            last.2 += len;
            continue;
        }
        out.push((fd, off, len));
    }
    out
}

/// Maps `pieces` one after another into one fresh range, shared and read-write.
fn map_pieces(pieces: &[Piece<'_>]) -> ExecResult<Mapping> {
    let bad = |why: String| {
        debug!("SharePages refused: {why}");
        Status::INVALID_VALUE
    };
    let page = page_size() as u64;
    let mut len = 0usize;
    for &(_, off, n) in pieces {
        if n == 0 || !off.is_multiple_of(page) || !(n as u64).is_multiple_of(page) {
            return Err(bad(format!("piece {off:#x}+{n:#x} not whole host pages")));
        }
        len = len.checked_add(n).ok_or_else(|| bad("too long".into()))?;
    }
    if len == 0 {
        return Err(bad("empty".into()));
    }
    let claim = Claim::new(pieces.len(), "SharePages")?;
    let ptr = reserve(None, len).ok_or(Status::MEMORY_ALLOCATION)?;
    let base = ptr.as_ptr();
    // From here the reservation is unmapped (and the count given back) on every path.
    let m = Mapping {
        ptr,
        len,
        pieces: claim,
        _file: None,
        spans: pieces.iter().map(|p| p.2).collect(),
    };
    let mut at = 0usize;
    for &(fd, off, n) in pieces {
        let off = libc::off_t::try_from(off).map_err(|_| bad(format!("offset {off:#x}")))?;
        // SAFETY: `[base + at, base + at + n)` lies inside the reservation `m` owns
        // (the pieces add up to its length), so `MAP_FIXED` replaces only our own
        // reservation; the file is the VM's RAM, mapped shared as the transport maps it.
        let p = unsafe {
            libc::mmap(
                base.cast::<u8>().add(at).cast(),
                n,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED | libc::MAP_NORESERVE,
                fd.as_raw_fd(),
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(bad(format!("mmap: {}", std::io::Error::last_os_error())));
        }
        at += n;
    }
    Ok(m)
}

/// Fails unless every page of `[offset, offset + len)` is resident: the backend must not
/// allocate (and be charged for) memory that the guest never touched. Bounded by what the
/// guest populated, however long the range ([`crate::resident::all_resident`]).
fn check_populated(m: &Mapping, offset: usize, len: usize) -> ExecResult<()> {
    // SAFETY: `[offset, offset + len)` lies inside the mapping (the callers check it).
    if unsafe { all_resident(m.ptr.as_ptr().cast::<u8>().add(offset), len) } {
        Ok(())
    } else {
        debug!("shared copy touches pages the guest has not populated");
        Err(Status::INVALID_VALUE)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::fd::AsFd;

    use super::*;
    use crate::executor::testing::free_address;

    fn memfd(len: u64, seals: i32) -> OwnedFd {
        let fd = nix::sys::memfd::memfd_create(
            "vcuda-test",
            nix::sys::memfd::MFdFlags::MFD_CLOEXEC | nix::sys::memfd::MFdFlags::MFD_ALLOW_SEALING,
        )
        .unwrap();
        nix::unistd::ftruncate(&fd, len as i64).unwrap();
        if seals != 0 {
            let seals = nix::fcntl::SealFlag::from_bits_truncate(seals);
            nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_ADD_SEALS(seals)).unwrap();
        }
        fd
    }

    #[test]
    fn a_sealed_memfd_is_shared_and_checked() {
        let fd = memfd(8192, libc::F_SEAL_SHRINK | libc::F_SEAL_GROW);
        let mut f = std::fs::File::from(fd.try_clone().unwrap());
        f.write_all(&[7u8; 8192]).unwrap();
        let mut s = SharedRegions::default();
        s.offer(vec![fd]);
        let h = s.share(8192).unwrap();
        s.end_message();
        let segs = s.segs(h, 4000, 200).unwrap();
        let mut b = [0u8; 200];
        segs.read_at(0, &mut b).unwrap();
        assert_eq!(b, [7u8; 200]);
        assert_eq!(s.segs(h, 8000, 193).unwrap_err(), Status::INVALID_VALUE);
        assert_eq!(s.segs(h, u64::MAX, 2).unwrap_err(), Status::INVALID_VALUE);
        assert_eq!(s.segs(h + 1, 0, 1).unwrap_err(), Status::INVALID_VALUE);
        s.unshare(h).unwrap();
        assert!(s.segs(h, 0, 1).is_err());
        assert!(s.unshare(h).is_err());
    }

    #[test]
    fn aliases_map_the_same_pages_where_nothing_is() {
        let fd = memfd(3 * 4096, libc::F_SEAL_SHRINK);
        std::fs::File::from(fd.try_clone().unwrap())
            .write_all(&[1u8; 3 * 4096])
            .unwrap();
        let mut s = SharedRegions::default();
        s.offer(vec![fd]);
        let h = s.share(3 * 4096 - 100).unwrap();
        let (base, _) = s.range(h).unwrap();
        let at = free_address(3 * 4096);
        // The last two pages, at the same distance past a page boundary.
        let a = s.alias(h, 4096 + 8, 2 * 4096 - 200, at + 8, None).unwrap();
        assert_eq!(a.addr(), at);
        // SAFETY: both map the region's second page, alive here.
        unsafe {
            ((base + 4096 + 8) as *mut u8).write_volatile(9);
            assert_eq!(((at + 8) as *const u8).read_volatile(), 9);
            (at as *mut u8).write_volatile(5);
            assert_eq!(((base + 4096) as *const u8).read_volatile(), 5);
        }
        // Nothing is replaced: not the alias, not the region.
        let taken = Err(Status::NOT_SUPPORTED);
        assert_eq!(s.alias(h, 0, 4096, at, None).map(|_| ()), taken);
        assert_eq!(s.alias(h, 0, 4096, base as u64, None).map(|_| ()), taken);
        assert_eq!(
            s.alias(h, 8, 4096, at + 4096, None).map(|_| ()),
            Err(Status::INVALID_VALUE),
            "another offset into the page"
        );
        assert!(
            s.alias(h, 0, 3 * 4096, at, None).is_err(),
            "past the region"
        );
        assert!(s.alias(h + 1, 0, 1, at, None).is_err(), "no such region");
        assert!(
            s.alias(h, 0, 1, u64::MAX - 4095, None).is_err(),
            "past the address space"
        );
        drop(a);
        // Gone: the address is free again.
        let again = s.alias(h, 0, 4096, at, None).unwrap();
        assert_eq!(again.addr(), at);
    }

    /// A span held ahead (a loaded session's range mapped for kernels) keeps the address
    /// from anything else, and becomes the alias made with it; only the span it holds.
    #[test]
    fn held_spans_become_aliases() {
        let fd = memfd(2 * 4096, libc::F_SEAL_SHRINK);
        std::fs::File::from(fd.try_clone().unwrap())
            .write_all(&[3u8; 2 * 4096])
            .unwrap();
        let mut s = SharedRegions::default();
        s.offer(vec![fd]);
        let h = s.share(2 * 4096).unwrap();
        let at = free_address(2 * 4096);
        let held = hold_alias_span(16, 4096, at + 16).unwrap();
        let taken = Err(Status::NOT_SUPPORTED);
        assert_eq!(hold_alias_span(0, 4096, at).map(|_| ()), taken);
        assert_eq!(s.alias(h, 0, 4096, at, None).map(|_| ()), taken);
        let bad = Err(Status::INVALID_VALUE);
        assert_eq!(
            hold_alias_span(8, 4096, at + 16).map(|_| ()),
            bad,
            "offsets differ"
        );
        assert_eq!(hold_alias_span(0, 0, at).map(|_| ()), bad, "empty");
        assert_eq!(hold_alias_span(0, 1, u64::MAX - 4095).map(|_| ()), bad);
        // Another span than the one held is refused, and the hold given back with it.
        assert_eq!(s.alias(h, 16, 8, at + 16, Some(held)).map(|_| ()), bad);
        let held = hold_alias_span(16, 4096, at + 16).unwrap();
        let a = s.alias(h, 16, 4096, at + 16, Some(held)).unwrap();
        assert_eq!(a.addr(), at);
        // SAFETY: the alias's second page, alive here.
        assert_eq!(unsafe { ((at + 4096) as *const u8).read_volatile() }, 3);
        drop(a);
        assert!(hold_alias_span(0, 2 * 4096, at).is_ok(), "free again");
    }

    /// A memory file of `n` pages, page `i` filled with `i` (a stand-in for guest RAM).
    fn numbered_pages(n: u8) -> OwnedFd {
        let fd = memfd(u64::from(n) * 4096, 0);
        let mut f = std::fs::File::from(fd.try_clone().unwrap());
        for i in 0..n {
            f.write_all(&[i; 4096]).unwrap();
        }
        fd
    }

    #[test]
    fn memory_files_are_bounded_per_process_not_only_per_session() {
        // Issue 38, finding 3: 16 sessions of 4096 one-page regions took the process to
        // `vm.max_map_count`, after which other sessions' allocations failed. Each mapped
        // memory file holds a claim on the process-wide count...
        let mut s = SharedRegions::default();
        s.offer(vec![memfd(4096, libc::F_SEAL_SHRINK | libc::F_SEAL_GROW)]);
        let h = s.share(4096).unwrap();
        let claim = s.regions[&h]._file.as_ref().expect("a memory file's claim");
        assert_eq!(
            (claim.0, claim.1 as *const _),
            (1, &FILE_REGIONS as *const _)
        );
        // ... which refuses past its bound and gives back what goes (a count of the test's
        // own, since other tests share memory files meanwhile).
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let held: Vec<Claim> = (0..3)
            .map(|_| Claim::take(1, &COUNT, 3, "test").unwrap())
            .collect();
        assert_eq!(
            Claim::take(1, &COUNT, 3, "test").err(),
            Some(Status::MEMORY_ALLOCATION)
        );
        assert_eq!(COUNT.load(Ordering::Relaxed), 3, "a refusal takes nothing");
        drop(held);
        assert_eq!(COUNT.load(Ordering::Relaxed), 0);
        assert!(Claim::take(1, &COUNT, 3, "test").is_ok());
        // The bound leaves room, with the guest RAM pieces', under the kernel's default.
        const _: () = assert!(MAX_FILE_REGIONS + MAX_GUEST_PIECES <= 65530 - 8192);
    }

    /// Held by tests that count [`GUEST_PIECES`], a process-wide number.
    static PIECES_TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn aliases_of_guest_pieces_follow_their_order() {
        let _turn = PIECES_TURN.lock().unwrap_or_else(|e| e.into_inner());
        let fd = numbered_pages(4);
        let b = fd.as_fd();
        let mut s = SharedRegions::default();
        let h = s
            .share_pieces(
                &[(b, 3 * 4096, 4096), (b, 0, 4096), (b, 2 * 4096, 4096)],
                &[],
            )
            .unwrap();
        let at = free_address(3 * 4096);
        let before = GUEST_PIECES.load(Ordering::Relaxed);
        let a = s.alias(h, 4096, 2 * 4096, at, None).unwrap();
        assert_eq!(GUEST_PIECES.load(Ordering::Relaxed), before + 2);
        // SAFETY: the alias's two pages, alive here.
        let got = unsafe { [(at as *const u8).read(), ((at + 4096) as *const u8).read()] };
        assert_eq!(got, [0, 2]);
        drop(a);
        assert_eq!(GUEST_PIECES.load(Ordering::Relaxed), before);
    }

    #[test]
    fn unsealed_short_or_missing_files_are_refused() {
        let mut s = SharedRegions::default();
        assert!(s.share(4096).is_err(), "no descriptor");
        s.offer(vec![memfd(4096, 0)]);
        assert!(s.share(4096).is_err(), "not sealed");
        s.offer(vec![memfd(4096, libc::F_SEAL_SHRINK)]);
        assert!(s.share(8192).is_err(), "shorter than claimed");
        s.offer(vec![memfd(4096, libc::F_SEAL_SHRINK)]);
        assert!(s.share(0).is_err(), "empty");
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        s.offer(vec![OwnedFd::from(a)]);
        assert!(s.share(4096).is_err(), "a socket");
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::File::create(dir.path().join("f")).unwrap();
        f.set_len(4096).unwrap();
        s.offer(vec![OwnedFd::from(f)]);
        assert!(s.share(4096).is_err(), "a file on disk cannot be sealed");
    }

    #[test]
    fn guest_pieces_map_in_order_and_merge() {
        let _turn = PIECES_TURN.lock().unwrap_or_else(|e| e.into_inner());
        let fd = numbered_pages(4);
        let b = fd.as_fd();
        let mut s = SharedRegions::default();
        // Pages 2, 3 (one piece once merged), then 0.
        let before = GUEST_PIECES.load(Ordering::Relaxed);
        let h = s
            .share_pieces(
                &[(b, 2 * 4096, 4096), (b, 3 * 4096, 4096), (b, 0, 4096)],
                &[],
            )
            .unwrap();
        let (addr, len) = s.range(h).unwrap();
        assert_eq!(len, 3 * 4096);
        let mut got = [0u8; 3];
        for (i, g) in got.iter_mut().enumerate() {
            let segs = s.segs(h, i as u64 * 4096 + 100, 1).unwrap();
            let mut one = [0u8; 1];
            segs.read_at(0, &mut one).unwrap();
            *g = one[0];
        }
        assert_eq!(got, [2, 3, 0]);
        // Writes through the region land in the file (the guest's RAM).
        // SAFETY: the first byte of the live region, mapped read-write.
        unsafe { (addr as *mut u8).write_volatile(9) };
        let mut back = [0u8; 1];
        nix::sys::uio::pread(&fd, &mut back, 2 * 4096).unwrap();
        assert_eq!(back, [9]);
        assert!(GUEST_PIECES.load(Ordering::Relaxed) >= before + 2);
        s.unshare(h).unwrap();
        // Misaligned or empty pieces are refused.
        assert_eq!(
            s.share_pieces(&[(b, 100, 4096)], &[]).unwrap_err(),
            Status::INVALID_VALUE
        );
        assert_eq!(
            s.share_pieces(&[(b, 0, 100)], &[]).unwrap_err(),
            Status::INVALID_VALUE
        );
        assert_eq!(s.share_pieces(&[], &[]).unwrap_err(), Status::INVALID_VALUE);
    }

    #[test]
    fn pages_the_guest_never_touched_are_not_copied() {
        let fd = memfd(3 * 4096, libc::F_SEAL_SHRINK);
        let mut f = std::fs::File::from(fd.try_clone().unwrap());
        f.write_all(&[1u8; 4096]).unwrap();
        let mut s = SharedRegions::default();
        s.offer(vec![fd]);
        let h = s.share(3 * 4096).unwrap();
        assert!(s.segs(h, 0, 4096).is_ok());
        assert_eq!(s.segs(h, 0, 4097).unwrap_err(), Status::INVALID_VALUE);
        assert_eq!(s.segs(h, 8192, 1).unwrap_err(), Status::INVALID_VALUE);
    }
}
