// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Simulated device memory: host allocations at device-like addresses.
//!
//! Every allocation gets its own address range in `[HEAP_BASE, HEAP_END)`, aligned to
//! [`ALIGN`] and followed by an unmapped guard gap, so pointer arithmetic inside an
//! allocation works and an access just past its end is an illegal address, as on a GPU.
//! Memory is zeroed when allocated, so nothing leaks between sessions.
//!
//! # What an allocation costs
//!
//! Each allocation is charged its real footprint, not the bytes asked for: its size rounded
//! up to [`ALIGN`] (or to a page, for mapped ones) plus [`ALLOC_OVERHEAD`] for the heap's
//! bookkeeping, against both the session's limit and the budget all sessions share.
//! Allocations of [`MAP_THRESHOLD`] bytes or more are anonymous mappings, whose pages the
//! kernel commits only when first touched: a large `cudaMalloc` that is never written
//! costs no RAM, though it is charged in full (a `cudaMalloc` succeeds or fails up front,
//! as on a GPU).

use std::alloc::{self, Layout};
use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::num::NonZeroUsize;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::executor::{ExecResult, Status};

mod ipc;
mod ipc_state;
mod state;
#[path = "vmm.rs"]
mod vmm;
pub use self::ipc::IpcEvents;
pub use self::state::HeapState;
pub use crate::executor::vmm::GRANULARITY;
pub use vmm::Vmm;

/// First device address handed out, unless the guest reserved a range.
pub const HEAP_BASE: u64 = 0x7f00_0000_0000;
/// End of the default device address range.
pub const HEAP_END: u64 = 0x7fff_ffff_0000;
/// Smallest guest-reserved range accepted.
pub const MIN_RANGE: u64 = 1 << 30;
/// Alignment of every allocation (cudaMalloc guarantees at least 256).
pub const ALIGN: u64 = 512;
/// Unmapped bytes after every allocation.
pub const GUARD: u64 = 4096;
/// Bytes charged per allocation for bookkeeping, beyond its aligned size: the allocator's
/// header and alignment slack and the heap's map entry. A million 1-byte allocations
/// measured 598 bytes each before; each is charged `ALIGN + ALLOC_OVERHEAD` = 768 now.
pub const ALLOC_OVERHEAD: u64 = 256;
/// Allocations this large or larger are anonymous mappings, committed as they are touched.
pub const MAP_THRESHOLD: u64 = 64 << 10;
/// The page size mappings are rounded to.
const PAGE: u64 = 4096;
/// Most host ranges one session may map into its device address space.
pub const MAX_MAPPED: usize = 4096;
/// Device addresses the PTX executor reserves for its windows (shared, local, parameter
/// and function addresses); no mapped range may reach into them.
const WINDOWS: std::ops::Range<u64> =
    vcuda_ptx::SHARED_WINDOW..vcuda_ptx::FUNC_WINDOW + vcuda_ptx::WINDOW_SIZE;
/// End of the user address space of a guest process (47 bits).
const USER_END: u64 = 0x8000_0000_0000;

/// What an allocation of `size` bytes is charged (`None`: more than the address space).
pub fn charge(size: u64) -> Option<u64> {
    let unit = if size >= MAP_THRESHOLD { PAGE } else { ALIGN };
    size.checked_next_multiple_of(unit)?
        .checked_add(ALLOC_OVERHEAD)
}

/// What an allocation is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocKind {
    /// `cudaMalloc`: the guest may free it.
    User,
    /// A module variable: freed with its module.
    Symbol,
    /// A CUDA array: freed with `cudaFreeArray`.
    Array,
    /// A physical allocation of the VMM API: freed with `cuMemRelease`.
    Vmm,
}

/// Where an allocation's bytes come from.
#[derive(Debug)]
enum Backing {
    /// The global allocator, with this layout.
    Heap(Layout),
    /// An anonymous mapping of this many bytes.
    Map(NonZeroUsize),
}

/// One allocation.
#[derive(Debug)]
struct Allocation {
    ptr: NonNull<u8>,
    len: u64,
    backing: Backing,
    kind: AllocKind,
    /// What it is charged ([`charge`]).
    charge: u64,
}

impl Allocation {
    /// `size` zeroed bytes, aligned to at least [`ALIGN`].
    fn new(size: u64, kind: AllocKind, charge: u64) -> Option<Self> {
        let n = usize::try_from(size).ok()?;
        let (ptr, backing) = if size >= MAP_THRESHOLD {
            let len = NonZeroUsize::new(n.checked_next_multiple_of(PAGE as usize)?)?;
            use nix::sys::mman::{MapFlags, ProtFlags, mmap_anonymous};
            // SAFETY: a fresh private anonymous mapping at an address the kernel picks; it
            // aliases nothing, and is unmapped once, in `drop`. Its pages read as zero.
            let p = unsafe {
                mmap_anonymous(
                    None,
                    len,
                    ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                    MapFlags::MAP_PRIVATE,
                )
            }
            .ok()?;
            (p.cast::<u8>(), Backing::Map(len))
        } else {
            let layout = Layout::from_size_align(n, ALIGN as usize).ok()?;
            // SAFETY: `layout` has a non-zero size (the caller passes size > 0).
            let p = NonNull::new(unsafe { alloc::alloc_zeroed(layout) })?;
            (p, Backing::Heap(layout))
        };
        Some(Self {
            ptr,
            len: size,
            backing,
            kind,
            charge,
        })
    }
}

// SAFETY: `Allocation` owns its buffer (like a `Box<[u8]>`); the raw pointer is only
// dereferenced under the heap's borrow rules or, during a launch, through atomic accesses by
// the interpreter. An allocation shared through an IPC handle is reachable from two
// sessions' heaps, whose copies and kernels may then touch it at once: the program's own
// race, as between two processes' kernels on a GPU. The buffer holds plain bytes (every
// value valid) and nothing the backend decides depends on its contents.
unsafe impl Send for Allocation {}
// SAFETY: `Allocation` owns its buffer exclusively and a shared reference only gives out
// the pointer, never a `&mut`; reads through it during a launch are atomic accesses.
unsafe impl Sync for Allocation {}

impl Drop for Allocation {
    fn drop(&mut self) {
        match self.backing {
            // SAFETY: `ptr` came from `alloc_zeroed(layout)` and is freed exactly once, here.
            Backing::Heap(layout) => unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) },
            Backing::Map(len) => {
                let ptr = self.ptr.cast::<c_void>();
                // SAFETY: `ptr` is the start of our mapping of `len` bytes, unmapped once,
                // here; nothing refers to it any more (the allocation is being dropped).
                let r = unsafe { nix::sys::mman::munmap(ptr, len.get()) };
                if let Err(e) = r {
                    log::warn!("unmapping simulated device memory: {e}");
                }
            }
        }
    }
}

/// Bytes of simulated device memory in use across all sessions of one backend.
#[derive(Debug)]
pub struct MemoryBudget {
    total: u64,
    used: AtomicU64,
}

impl MemoryBudget {
    /// A budget of `total` bytes.
    pub fn new(total: u64) -> Arc<Self> {
        Arc::new(Self {
            total,
            used: AtomicU64::new(0),
        })
    }

    /// Total bytes.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Free bytes.
    pub fn free(&self) -> u64 {
        self.total.saturating_sub(self.used.load(Ordering::Relaxed))
    }

    fn reserve(&self, n: u64) -> bool {
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                u.checked_add(n).filter(|&t| t <= self.total)
            })
            .is_ok()
    }

    fn release(&self, n: u64) {
        self.used.fetch_sub(n, Ordering::Relaxed);
    }
}

/// An IPC handle's token: 128 random bits.
type Token = [u8; 16];

/// An allocation opened through an IPC handle (see `ipc.rs`).
#[derive(Debug)]
struct Import {
    token: Token,
    opens: u32,
    charge: u64,
}

/// Heap ids (see [`DeviceHeap::id`]).
static NEXT_HEAP: AtomicU64 = AtomicU64::new(1);

/// Host memory shared by the guest and exposed at a device address (mapped host memory,
/// managed memory): owned by the session's shared regions, not by the heap.
#[derive(Debug)]
struct Mapped {
    host: NonNull<u8>,
    len: u64,
}

// SAFETY: a `Mapped` only names memory the session's shared regions keep mapped until it is
// removed (the session unmaps it from the heap before unsharing); it is used like an
// allocation's buffer.
unsafe impl Send for Mapped {}
// SAFETY: as for `Send`; shared references only give out the pointer.
unsafe impl Sync for Mapped {}

/// One session's device memory.
#[derive(Debug)]
pub struct DeviceHeap {
    allocs: BTreeMap<u64, Arc<Allocation>>,
    /// Allocations of other sessions opened here through IPC handles, by address (their
    /// entries in `allocs` share the exporter's buffer).
    imports: BTreeMap<u64, Import>,
    /// Imports of a loaded session, linked once every session of its VM is loaded.
    pending_imports: Vec<crate::migrate::state::ImportState>,
    /// This session's exported allocations: their tokens in `ipc::EXPORTS`, by address.
    exports: HashMap<u64, Token>,
    /// Tells this heap's exports from other sessions' in `ipc::EXPORTS`.
    id: u64,
    /// Host ranges exposed at device addresses, by device address.
    mapped: BTreeMap<u64, Mapped>,
    next: u64,
    start: u64,
    end: u64,
    budget: Arc<MemoryBudget>,
    /// Most bytes the session may be charged.
    limit: u64,
    /// Bytes charged for the session's allocations.
    charged: u64,
    /// What a kernel reads and writes in the padding after an allocation (see
    /// [`DeviceHeap::padding`]): shared by every gap, its contents unspecified.
    pad: Box<[std::sync::atomic::AtomicU64]>,
    /// The VMM API's objects (see `vmm.rs`).
    vmm: Vmm,
}

/// Bytes of [`DeviceHeap::pad`]: the longest gap after an allocation, plus alignment slack.
const PAD_LEN: u64 = ALIGN + GUARD + 32;

/// A device range resolved to host memory.
#[derive(Debug, Clone, Copy)]
pub struct Resolved {
    /// Device address of the allocation.
    pub base: u64,
    /// Its length.
    pub len: u64,
    /// Its host memory.
    pub host: *mut u8,
}

impl DeviceHeap {
    /// An empty heap drawing on `budget`, at most `limit` bytes of it.
    pub fn new(budget: Arc<MemoryBudget>, limit: u64) -> Self {
        Self {
            allocs: BTreeMap::new(),
            imports: BTreeMap::new(),
            pending_imports: Vec::new(),
            exports: HashMap::new(),
            id: NEXT_HEAP.fetch_add(1, Ordering::Relaxed),
            mapped: BTreeMap::new(),
            next: HEAP_BASE,
            start: HEAP_BASE,
            end: HEAP_END,
            budget,
            limit,
            charged: 0,
            pad: (0..PAD_LEN / 8)
                .map(|_| std::sync::atomic::AtomicU64::new(0))
                .collect(),
            vmm: Vmm::default(),
        }
    }

    /// The padding after an allocation that contains `addr`, if any: the bytes from its end
    /// to the next 512-byte boundary and the guard gap after it. On a GPU, allocations are
    /// carved out of 2 MiB pages, so a kernel reading a little past a buffer's end (or a
    /// little before the next buffer's start) reads the page's padding or a neighbour
    /// instead of faulting; a kernel here sees the padding as memory of unspecified
    /// contents (one buffer shared by every gap of the heap). The memory checker
    /// (`--memcheck`) does not use this: there such accesses fault.
    pub fn padding(&self, addr: u64) -> Option<Resolved> {
        let (&base, a) = self.allocs.range(..=addr).next_back()?;
        let end = base.checked_add(a.len)?;
        let gap_end = end.next_multiple_of(ALIGN).checked_add(GUARD)?;
        if !(end..gap_end).contains(&addr) {
            return None;
        }
        // The next allocation may start right at `gap_end` (never before).
        let len = gap_end - end;
        // Host and device addresses agree modulo 16 (`Region`'s alignment rule).
        let pad = self.pad.as_ptr().cast::<u8>().cast_mut();
        // `len + 15 + 8 <= PAD_LEN`: the region fits in the buffer.
        let host = pad
            .wrapping_add(pad.align_offset(16))
            .wrapping_add((end % 16) as usize);
        Some(Resolved {
            base: end,
            len,
            host,
        })
    }

    /// The allocation nearest to `addr` (for the memory checker's reports): its base and
    /// length.
    pub fn nearest(&self, addr: u64) -> Option<(u64, u64)> {
        let before = self.allocs.range(..=addr).next_back();
        let after = self.allocs.range(addr..).next();
        let dist = |(&b, a): (&u64, &Arc<Allocation>)| {
            if addr < b {
                b - addr
            } else {
                addr.saturating_sub(b + a.len)
            }
        };
        [before, after]
            .into_iter()
            .flatten()
            .min_by_key(|&x| dist(x))
            .map(|(&b, a)| (b, a.len))
    }

    /// Places future allocations in `[base, base + len)`, the range the guest reserved, if
    /// nothing is allocated yet and the range is sane (aligned, at least `MIN_RANGE`,
    /// inside the 47-bit user address space). Otherwise keeps the default range.
    pub fn set_range(&mut self, base: u64, len: u64) {
        let end = base.checked_add(len);
        let ok = self.allocs.is_empty()
            && base.is_multiple_of(0x10000)
            && base >= 0x1_0000_0000
            && len >= MIN_RANGE
            && end.is_some_and(|e| e <= 0x8000_0000_0000);
        if ok {
            self.start = base;
            self.next = base;
            self.end = base + len;
        }
    }

    /// The session's view of device memory, as `cudaMemGetInfo` reports it: `(free,
    /// total)`, where total is the session's limit (or the whole budget if smaller) and
    /// free what the session could still be charged.
    pub fn info(&self) -> (u64, u64) {
        let total = self.limit.min(self.budget.total());
        let free = total.saturating_sub(self.charged).min(self.budget.free());
        (free, total)
    }

    /// Allocates `size` zeroed bytes. `size` 0 gives address 0, as cudaMalloc does.
    pub fn alloc(&mut self, size: u64, kind: AllocKind) -> ExecResult<u64> {
        if size == 0 {
            return Ok(0);
        }
        let charge = charge(size).ok_or(Status::MEMORY_ALLOCATION)?;
        let (addr, span) = self.place(size, charge)?;
        if !self.budget.reserve(charge) {
            return Err(Status::MEMORY_ALLOCATION);
        }
        let Some(a) = Allocation::new(size, kind, charge) else {
            self.budget.release(charge);
            return Err(Status::MEMORY_ALLOCATION);
        };
        self.allocs.insert(addr, Arc::new(a));
        self.charged += charge;
        // Never backwards: everything at or above `next` is free (`find_space`'s fast path).
        self.next = self.next.max(addr + span);
        Ok(addr)
    }

    /// Where `len` bytes charged `charge` would go, within the session's limit: the address
    /// and the span they take (aligned, with the guard gap after).
    fn place(&self, len: u64, charge: u64) -> ExecResult<(u64, u64)> {
        let span = len
            .checked_next_multiple_of(ALIGN)
            .and_then(|s| s.checked_add(GUARD))
            .ok_or(Status::MEMORY_ALLOCATION)?;
        if self
            .charged
            .checked_add(charge)
            .is_none_or(|c| c > self.limit)
        {
            return Err(Status::MEMORY_ALLOCATION);
        }
        let addr = self.find_space(span).ok_or(Status::MEMORY_ALLOCATION)?;
        Ok((addr, span))
    }

    /// Finds `span` free bytes of address space: after the last allocation if it fits, else
    /// in the first gap large enough.
    fn find_space(&self, span: u64) -> Option<u64> {
        if self.next.checked_add(span).is_some_and(|e| e <= self.end) {
            return Some(self.next);
        }
        let mut prev_end = self.start;
        // Only below `end`: the VMM's reservations (and their mappings) lie above it.
        for (&base, a) in self.allocs.range(..self.end) {
            if base.saturating_sub(prev_end) >= span {
                return Some(prev_end);
            }
            prev_end = (base + a.len).next_multiple_of(ALIGN) + GUARD;
        }
        prev_end
            .checked_add(span)
            .filter(|&e| e <= self.end)
            .map(|_| prev_end)
    }

    /// Frees the allocation starting at `addr` (0 is a no-op).
    pub fn free(&mut self, addr: u64, kind: AllocKind) -> ExecResult<()> {
        if addr == 0 {
            return Ok(());
        }
        match self.allocs.get(&addr) {
            Some(a) if a.kind == kind && !self.imports.contains_key(&addr) => {}
            _ => return Err(Status::INVALID_VALUE),
        }
        if let Some(a) = self.allocs.remove(&addr) {
            self.budget.release(a.charge);
            self.charged -= a.charge;
        }
        self.withdraw_export(addr);
        Ok(())
    }

    /// Exposes `len` bytes of host memory at `host` at device address `addr`. The range
    /// must lie in the guest's user address space, outside the range reserved for
    /// allocations, the PTX windows, every allocation and every other mapped range.
    ///
    /// # Safety
    ///
    /// `[host, host + len)` is readable and writable memory that stays mapped until
    /// [`DeviceHeap::unmap_host`] removes it (or the heap is dropped).
    pub unsafe fn map_host(&mut self, addr: u64, host: *mut u8, len: u64) -> ExecResult<()> {
        let end = addr.checked_add(len).ok_or(Status::INVALID_VALUE)?;
        let overlaps = |r: &std::ops::Range<u64>| addr < r.end && r.start < end;
        // The session's whole device range, VMM reservations included.
        let reserved = self.start..self.vmm_top();
        if len == 0
            || addr == 0
            || end > USER_END
            || overlaps(&WINDOWS)
            || overlaps(&reserved)
            || self
                .allocs
                .range(..end)
                .next_back()
                .is_some_and(|(&b, a)| overlaps(&(b..(b + a.len).next_multiple_of(ALIGN) + GUARD)))
            || self
                .mapped
                .range(..end)
                .next_back()
                .is_some_and(|(&b, m)| overlaps(&(b..b + m.len)))
        {
            return Err(Status::INVALID_VALUE);
        }
        if self.mapped.len() >= MAX_MAPPED {
            return Err(Status::MEMORY_ALLOCATION);
        }
        let host = NonNull::new(host).ok_or(Status::INVALID_VALUE)?;
        self.mapped.insert(addr, Mapped { host, len });
        Ok(())
    }

    /// Removes the mapped range starting at `addr`; its memory is no longer used.
    pub fn unmap_host(&mut self, addr: u64) -> ExecResult<()> {
        self.mapped
            .remove(&addr)
            .map(drop)
            .ok_or(Status::INVALID_VALUE)
    }

    /// Frees every allocation (mapped ranges stay: they belong to the guest's memory).
    pub fn clear(&mut self) {
        self.forget_exports();
        self.imports.clear();
        self.pending_imports.clear();
        self.vmm_clear();
        self.allocs.clear();
        self.budget.release(self.charged);
        self.charged = 0;
        self.next = self.start;
    }

    /// The allocation or mapped range containing `addr`.
    pub fn resolve(&self, addr: u64) -> Option<Resolved> {
        let alloc = self
            .allocs
            .range(..=addr)
            .next_back()
            .and_then(|(&base, a)| {
                (addr - base < a.len).then_some(Resolved {
                    base,
                    len: a.len,
                    host: a.ptr.as_ptr(),
                })
            });
        alloc.or_else(|| {
            let (&base, m) = self.mapped.range(..=addr).next_back()?;
            (addr - base < m.len).then_some(Resolved {
                base,
                len: m.len,
                host: m.host.as_ptr(),
            })
        })
    }

    /// Whether `[addr, addr + len)` lies inside one mapped host range (not an allocation).
    pub fn is_mapped_host(&self, addr: u64, len: u64) -> bool {
        self.mapped
            .range(..=addr)
            .next_back()
            .is_some_and(|(&base, m)| {
                addr.checked_add(len)
                    .is_some_and(|end| end <= base.saturating_add(m.len))
            })
    }

    /// Checks that `[addr, addr + len)` lies in one allocation; returns its host offset
    /// base and the offset of `addr` in it.
    fn range(&self, addr: u64, len: u64) -> ExecResult<(Resolved, usize)> {
        let r = self.resolve(addr).ok_or(Status::INVALID_VALUE)?;
        let off = addr - r.base;
        match off.checked_add(len) {
            Some(end) if end <= r.len => Ok((r, off as usize)),
            _ => Err(Status::INVALID_VALUE),
        }
    }

    /// `[addr, addr + len)` as a mutable byte slice. The exclusive borrow of the heap
    /// guarantees no kernel is running.
    pub fn bytes_mut(&mut self, addr: u64, len: u64) -> ExecResult<&mut [u8]> {
        if len == 0 {
            return Ok(&mut []);
        }
        let (r, off) = self.range(addr, len)?;
        // SAFETY: the range is inside one live allocation or mapped range (checked by
        // `range`), and `&mut self` excludes every other access by this session for the
        // slice's lifetime (another session may reach an allocation shared through an IPC
        // handle: see `Allocation`'s `Send`). A mapped range is the guest's shared memory, which the guest
        // process may also write: any byte value is a valid `u8`, and nothing the backend
        // decides depends on the bytes staying put (the guest must not race its kernels,
        // as on a GPU).
        Ok(unsafe { std::slice::from_raw_parts_mut(r.host.add(off), len as usize) })
    }

    /// `[addr, addr + len)` as a byte slice.
    pub fn bytes(&self, addr: u64, len: u64) -> ExecResult<&[u8]> {
        if len == 0 {
            return Ok(&[]);
        }
        let (r, off) = self.range(addr, len)?;
        // SAFETY: inside one live allocation or mapped range; shared borrows of the heap never
        // coexist with the backend's writes (writes need `&mut self`, and kernels run only
        // while the executor holds the heap exclusively). The guest may write a mapped
        // range meanwhile: see `bytes_mut`.
        Ok(unsafe { std::slice::from_raw_parts(r.host.add(off), len as usize) })
    }

    /// `[addr, addr + len)` as pieces, each inside one allocation or mapped range, back to
    /// back: VMM mappings side by side are one range of device memory, as on a GPU (other
    /// allocations have gaps between them, so a range past one's end fails as before).
    pub fn spans(&self, addr: u64, len: u64) -> ExecResult<Vec<(u64, u64)>> {
        if len == 0 {
            return Ok(vec![(addr, 0)]);
        }
        let end = addr.checked_add(len).ok_or(Status::INVALID_VALUE)?;
        let mut out = Vec::new();
        let mut at = addr;
        while at < end {
            let r = self.resolve(at).ok_or(Status::INVALID_VALUE)?;
            let stop = r.base.saturating_add(r.len).min(end);
            out.push((at, stop - at));
            at = stop;
        }
        Ok(out)
    }

    /// Copies `len` bytes between two device ranges (which may overlap), each possibly
    /// made of several pieces ([`DeviceHeap::spans`]).
    pub fn copy(&mut self, dst: u64, src: u64, len: u64) -> ExecResult<()> {
        let (mut done, mut pieces) = (0u64, Vec::new());
        // Checked whole before anything is copied.
        while done < len {
            let (d, doff) = self.range(dst.wrapping_add(done), 1)?;
            let (s, soff) = self.range(src.wrapping_add(done), 1)?;
            let n = (len - done)
                .min(d.len - doff as u64)
                .min(s.len - soff as u64);
            pieces.push((d.host, doff, s.host, soff, n));
            done += n;
        }
        for (d, doff, s, soff, n) in pieces {
            // SAFETY: both pieces are inside live allocations or mapped ranges (checked
            // above, and nothing changed since: `&mut self`); `ptr::copy` allows overlap;
            // `&mut self` excludes concurrent access by the backend (the guest's own writes
            // to a mapped range: see `bytes_mut`).
            unsafe { std::ptr::copy(s.add(soff), d.add(doff), n as usize) };
        }
        Ok(())
    }

    /// Copies `height` rows of `width` bytes between two pitched device ranges, each inside
    /// one allocation (checked once for all rows), row after row.
    pub fn copy_2d(
        &mut self,
        (dst, dpitch): (u64, u64),
        (src, spitch): (u64, u64),
        width: u64,
        height: u64,
    ) -> ExecResult<()> {
        if width == 0 || height == 0 {
            return Ok(());
        }
        let span = |pitch: u64| {
            (height - 1)
                .checked_mul(pitch)
                .and_then(|s| s.checked_add(width))
                .ok_or(Status::INVALID_VALUE)
        };
        if (height > 1 && (dpitch < width || spitch < width)) || width > isize::MAX as u64 {
            return Err(Status::INVALID_VALUE);
        }
        let (dspan, sspan) = (span(dpitch)?, span(spitch)?);
        let (d, doff) = self.range(dst, dspan)?;
        let (s, soff) = self.range(src, sspan)?;
        for row in 0..height {
            // SAFETY: every row lies inside its checked range (`row * pitch + width` is at
            // most the span), both inside live allocations or mapped ranges (which may
            // overlap: two device ranges can map the same shared memory, so `ptr::copy`);
            // `&mut self` excludes concurrent access by the backend (the guest's own writes
            // to a mapped range: see `bytes_mut`).
            unsafe {
                std::ptr::copy(
                    s.host.add(soff + (row * spitch) as usize),
                    d.host.add(doff + (row * dpitch) as usize),
                    width as usize,
                );
            }
        }
        Ok(())
    }

    /// Bytes charged to this session ([`charge`] of each allocation).
    pub fn charged(&self) -> u64 {
        self.charged
    }

    /// Charges a kernel's compile (launched now) to this session and the backend's budget
    /// while it runs: within what the session may still allocate and what the budget has
    /// free, given back when the compile is done.
    pub fn compile_memory(&self) -> vcuda_ptx::CompileMemory {
        let room = self.limit.saturating_sub(self.charged);
        let budget = self.budget.clone();
        vcuda_ptx::CompileMemory::new(move |n| {
            if n > room || !budget.reserve(n) {
                return None;
            }
            Some(Box::new(Reserved(budget.clone(), n)) as Box<dyn Send>)
        })
    }
}

/// Bytes reserved in a [`MemoryBudget`], released on drop.
struct Reserved(Arc<MemoryBudget>, u64);

impl Drop for Reserved {
    fn drop(&mut self) {
        self.0.release(self.1);
    }
}

impl Drop for DeviceHeap {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::ipc::IPC_MAGIC;
    use super::*;

    #[test]
    fn ipc_handles_share_an_allocation_between_sessions() {
        let budget = MemoryBudget::new(1 << 24);
        let mut a = DeviceHeap::new(budget.clone(), u64::MAX);
        let mut b = DeviceHeap::new(budget.clone(), u64::MAX);
        let p = a.alloc(1000, AllocKind::User).unwrap();
        let h = a.ipc_export(p + 10).unwrap();
        assert_eq!(a.ipc_export(p).unwrap(), h, "one handle per allocation");
        // Not in its own session (CUDA: another process only).
        assert_eq!(
            a.ipc_import(&h),
            Err(Status(vcuda_protocol::status::DEVICE_UNINITIALIZED))
        );
        let (q, len) = b.ipc_import(&h).unwrap();
        assert_eq!(len, 1000);
        assert_eq!(
            b.ipc_import(&h).unwrap(),
            (q, 1000),
            "opened again: the same address"
        );
        let pa = a.resolve(p).unwrap();
        let pb = b.resolve(q + 999).unwrap();
        assert_eq!(pb.base, q);
        assert_eq!(pb.host, pa.host, "the same buffer");
        // cudaFree does not take an imported address; the importer is charged too.
        assert_eq!(b.free(q, AllocKind::User), Err(Status::INVALID_VALUE));
        assert_eq!(b.charged(), a.charged());
        // The exporter frees: the importer's mapping stays valid, nobody opens it again.
        a.free(p, AllocKind::User).unwrap();
        assert_eq!(b.resolve(q).unwrap().host, pa.host);
        let mut c = DeviceHeap::new(budget.clone(), u64::MAX);
        assert_eq!(c.ipc_import(&h), Err(Status::INVALID_VALUE));
        b.ipc_close(q).unwrap();
        assert!(b.resolve(q).is_some(), "one open left");
        b.ipc_close(q).unwrap();
        assert!(b.resolve(q).is_none());
        assert_eq!(b.ipc_close(q), Err(Status::INVALID_VALUE));
        assert_eq!(b.charged(), 0);
        assert_eq!(budget.free(), budget.total());
        // Forged and foreign handles.
        let mut bad = h;
        bad[8] ^= 1;
        assert_eq!(c.ipc_import(&bad), Err(Status::INVALID_VALUE));
        assert_eq!(c.ipc_import(&[0; 64]), Err(Status::INVALID_VALUE));
        // Symbols and arrays are not exported; nor is an address outside any allocation.
        let s = a.alloc(64, AllocKind::Symbol).unwrap();
        assert_eq!(a.ipc_export(s), Err(Status::INVALID_VALUE));
        assert_eq!(a.ipc_export(s + 4096), Err(Status::INVALID_VALUE));
    }

    #[test]
    fn event_handles_open_elsewhere_until_withdrawn() {
        let budget = MemoryBudget::new(1 << 20);
        let (a, b) = (
            DeviceHeap::new(budget.clone(), u64::MAX),
            DeviceHeap::new(budget.clone(), u64::MAX),
        );
        let mut ev = IpcEvents::default();
        let h = ev.export(0x50, &a).unwrap();
        assert_eq!(ev.export(0x50, &a).unwrap(), h, "one handle per event");
        assert_eq!(IpcEvents::check_open(&h, &b), Ok(()));
        assert_eq!(
            IpcEvents::check_open(&h, &a),
            Err(Status(vcuda_protocol::status::DEVICE_UNINITIALIZED))
        );
        let mut bad = h;
        bad[20] ^= 4;
        assert_eq!(IpcEvents::check_open(&bad, &b), Err(Status::INVALID_VALUE));
        // A memory handle is not an event handle.
        let mut m = h;
        m[..8].copy_from_slice(IPC_MAGIC);
        assert_eq!(IpcEvents::check_open(&m, &b), Err(Status::INVALID_VALUE));
        ev.remove(0x50);
        assert_eq!(IpcEvents::check_open(&h, &b), Err(Status::INVALID_VALUE));
        let h2 = ev.export(0x60, &a).unwrap();
        drop(ev);
        assert_eq!(IpcEvents::check_open(&h2, &b), Err(Status::INVALID_VALUE));
    }

    #[test]
    fn a_session_ending_withdraws_its_handles() {
        let budget = MemoryBudget::new(1 << 24);
        let mut a = DeviceHeap::new(budget.clone(), u64::MAX);
        let mut b = DeviceHeap::new(budget.clone(), u64::MAX);
        let p = a.alloc(4096, AllocKind::User).unwrap();
        let h = a.ipc_export(p).unwrap();
        let (q, _) = b.ipc_import(&h).unwrap();
        drop(a);
        // Open mappings stay; the handle opens nowhere else.
        assert!(b.resolve(q).is_some());
        let mut c = DeviceHeap::new(budget.clone(), u64::MAX);
        assert_eq!(c.ipc_import(&h), Err(Status::INVALID_VALUE));
        drop(b);
        assert_eq!(budget.free(), budget.total());
    }

    #[test]
    fn padding_follows_each_allocation_up_to_the_next() {
        let budget = MemoryBudget::new(1 << 20);
        let mut h = DeviceHeap::new(budget, u64::MAX);
        let a = h.alloc(100, AllocKind::User).unwrap();
        let b = h.alloc(100, AllocKind::User).unwrap();
        // Not inside an allocation: no padding.
        assert!(h.padding(a).is_none() && h.padding(a + 99).is_none());
        assert!(h.padding(a - 1).is_none());
        let p = h.padding(a + 100).unwrap();
        assert_eq!(p.base, a + 100);
        assert_eq!(p.base + p.len, (a + 100).next_multiple_of(ALIGN) + GUARD);
        assert!(p.base + p.len <= b);
        assert_eq!(p.host as u64 % 16, p.base % 16);
        assert!(h.padding(b - 1).is_some_and(|q| q.base == a + 100));
        // Nearest allocations for reports.
        assert_eq!(h.nearest(a + 120), Some((a, 100)));
        assert_eq!(h.nearest(b - 3), Some((b, 100)));
    }

    #[test]
    fn alloc_resolve_free() {
        let budget = MemoryBudget::new(1 << 20);
        let mut h = DeviceHeap::new(budget.clone(), u64::MAX);
        let a = h.alloc(100, AllocKind::User).unwrap();
        let b = h.alloc(100, AllocKind::User).unwrap();
        assert_eq!(a % ALIGN, 0);
        assert!(b >= a + 100 + GUARD);
        assert!(h.resolve(a + 99).is_some());
        assert!(h.resolve(a + 100).is_none());
        h.bytes_mut(a + 10, 4)
            .unwrap()
            .copy_from_slice(&[1, 2, 3, 4]);
        h.copy(b, a + 10, 4).unwrap();
        assert_eq!(h.bytes(b, 4).unwrap(), &[1, 2, 3, 4]);
        assert!(h.bytes(a + 98, 4).is_err());
        assert_eq!(budget.free(), (1 << 20) - 2 * (ALIGN + ALLOC_OVERHEAD));
        h.free(a, AllocKind::User).unwrap();
        assert_eq!(h.free(a, AllocKind::User), Err(Status::INVALID_VALUE));
        assert_eq!(h.free(b + 1, AllocKind::User), Err(Status::INVALID_VALUE));
        assert_eq!(
            h.alloc(2 << 20, AllocKind::User),
            Err(Status::MEMORY_ALLOCATION)
        );
        assert_eq!(h.alloc(0, AllocKind::User), Ok(0));
        drop(h);
        assert_eq!(budget.free(), 1 << 20);
    }

    #[test]
    fn sessions_are_charged_footprints_within_their_limit() {
        let budget = MemoryBudget::new(1 << 30);
        let mut a = DeviceHeap::new(budget.clone(), 1 << 20);
        let mut b = DeviceHeap::new(budget.clone(), 1 << 20);
        // 1-byte allocations cost ALIGN + ALLOC_OVERHEAD each: 1365 fit in 1 MiB.
        let per = ALIGN + ALLOC_OVERHEAD;
        let n = (1 << 20) / per;
        for _ in 0..n {
            a.alloc(1, AllocKind::User).unwrap();
        }
        assert_eq!(a.alloc(1, AllocKind::User), Err(Status::MEMORY_ALLOCATION));
        assert_eq!(a.charged(), n * per);
        assert_eq!(a.info(), ((1 << 20) - n * per, 1 << 20));
        // The other session is unaffected.
        let big = b.alloc(512 << 10, AllocKind::User).unwrap();
        assert_eq!(b.charged(), charge(512 << 10).unwrap());
        assert_eq!(
            b.alloc(600 << 10, AllocKind::User),
            Err(Status::MEMORY_ALLOCATION)
        );
        b.free(big, AllocKind::User).unwrap();
        assert_eq!(b.charged(), 0);
        drop(a);
        assert_eq!(budget.free(), 1 << 30);
        // The shared budget bounds everyone.
        let small = MemoryBudget::new(1 << 20);
        let mut c = DeviceHeap::new(small.clone(), u64::MAX);
        assert_eq!(
            c.alloc(2 << 20, AllocKind::User),
            Err(Status::MEMORY_ALLOCATION)
        );
        assert_eq!(c.info(), (1 << 20, 1 << 20));
    }

    #[test]
    fn mapped_host_ranges_resolve_and_are_checked() {
        let mut h = DeviceHeap::new(MemoryBudget::new(1 << 20), u64::MAX);
        let a = h.alloc(100, AllocKind::User).unwrap();
        let mut buf = vec![0u8; 8192];
        let p = buf.as_mut_ptr();
        let at = 0x7e00_0000_0000;
        // SAFETY: `buf` outlives every use of the heap's mapping below.
        let map = |h: &mut DeviceHeap, addr: u64, len: u64| unsafe { h.map_host(addr, p, len) };
        map(&mut h, at, 8192).unwrap();
        h.bytes_mut(at + 8, 4).unwrap().copy_from_slice(&[5; 4]);
        h.copy(a, at + 8, 4).unwrap();
        assert_eq!(h.bytes(a, 4).unwrap(), &[5; 4]);
        assert!(h.bytes(at + 8190, 4).is_err(), "past the mapped range");
        let bad = Err(Status::INVALID_VALUE);
        assert_eq!(map(&mut h, at + 4096, 4096), bad, "overlaps a mapped range");
        assert_eq!(map(&mut h, at - 4096, 4097), bad, "overlaps from below");
        assert_eq!(map(&mut h, a, 64), bad, "an allocation");
        assert_eq!(
            map(&mut h, HEAP_BASE + (1 << 30), 64),
            bad,
            "the heap's range"
        );
        assert_eq!(
            map(&mut h, vcuda_ptx::LOCAL_WINDOW + 64, 64),
            bad,
            "a window"
        );
        assert_eq!(map(&mut h, USER_END - 64, 128), bad, "beyond user space");
        assert_eq!(map(&mut h, u64::MAX - 4, 64), bad, "overflow");
        assert_eq!(map(&mut h, 0, 64), bad, "null");
        assert_eq!(map(&mut h, at + 8192, 0), bad, "empty");
        map(&mut h, at + 8192, 64).unwrap();
        h.clear();
        assert!(h.resolve(at).is_some(), "mapped ranges survive a reset");
        h.unmap_host(at).unwrap();
        assert!(h.resolve(at).is_none());
        assert_eq!(h.unmap_host(at), bad);
        drop(h);
        drop(buf);
    }

    fn rss() -> u64 {
        let s = std::fs::read_to_string("/proc/self/status").unwrap();
        let l = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() << 10
    }

    #[test]
    fn large_allocations_are_committed_as_they_are_touched() {
        let budget = MemoryBudget::new(4 << 30);
        let mut h = DeviceHeap::new(budget, u64::MAX);
        let before = rss();
        let p = h.alloc(1 << 30, AllocKind::User).unwrap();
        let after = rss();
        // Other tests run in this process too: allow them some growth.
        assert!(after < before + (64 << 20), "{before} -> {after}");
        // Zeroed, writable, and only what is touched is committed.
        let bytes = h.bytes_mut(p + (512 << 20), 4096).unwrap();
        assert!(bytes.iter().all(|&b| b == 0));
        bytes.fill(7);
        assert_eq!(h.bytes(p + (512 << 20), 4).unwrap(), &[7; 4]);
        h.free(p, AllocKind::User).unwrap();
    }
}
