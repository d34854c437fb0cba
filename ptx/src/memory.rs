// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Device memory access: the only `unsafe` code outside the compiler's run time (`jit`).
//!
//! The executor lends host memory for device address ranges through [`DeviceMemory`]. Blocks run
//! on several OS threads at once and guest kernels race freely, so every access goes through an
//! atomic of the access width (relaxed for plain loads and stores), which is defined behavior for
//! concurrent access and compiles to ordinary moves on x86-64 and AArch64.

use std::sync::atomic::{
    AtomicI32, AtomicI64, AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering::Relaxed,
    Ordering::SeqCst,
};

use crate::ir::AtomOp;

/// A device address range backed by host memory.
#[derive(Debug, Clone, Copy)]
pub struct Region {
    /// Device address of the first byte.
    pub base: u64,
    /// Length in bytes.
    pub len: u64,
    /// Host address of the first byte. Should have the same alignment modulo 16 as `base`
    /// (e.g. both page-aligned); accesses whose host address is misaligned for their width fall
    /// back to byte-wise copies (and atomics on them fail as misaligned).
    pub host: *mut u8,
}

/// Device memory as the executor owns it.
///
/// # Safety
///
/// A returned [`Region`] must contain `addr`, and `host..host + len` must stay valid for reads
/// and writes, possibly concurrent from many threads (which only use atomic accesses), until the
/// launch that asked for it returns.
pub unsafe trait DeviceMemory: Sync {
    /// The region containing device address `addr`, or `None` if it is unmapped.
    fn region(&self, addr: u64) -> Option<Region>;

    /// The texture or surface object a kernel names by `handle`, or `None` if the program
    /// has none by that handle. Texels are read and written through [`Self::region`].
    fn texture(&self, handle: u64) -> Option<crate::TexObject> {
        let _ = handle;
        None
    }

    /// Device-side `malloc`: `size` bytes of the device heap, 16-byte aligned, readable and
    /// writable through [`Self::region`]; `None` when the heap has no room (the kernel's
    /// `malloc` returns NULL) or the executor has none.
    fn malloc(&self, size: u64) -> Option<u64> {
        let _ = size;
        None
    }

    /// Device-side `free` of what [`Self::malloc`] returned (anything else: nothing).
    fn free(&self, addr: u64) {
        let _ = addr;
    }
}

#[derive(Clone, Copy)]
struct Cached {
    base: u64,
    len: u64,
    host: *mut u8,
}

/// A per-thread view of device memory with a small region cache.
pub(crate) struct GlobalMem<'m> {
    mem: &'m dyn DeviceMemory,
    cache: [Cached; 4],
    used: usize,
    next: usize,
}

/// Why a global access failed (the caller adds the location).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemFault {
    /// Not inside any region.
    Illegal,
    /// The host address is not aligned for an atomic of this width.
    HostMisaligned,
}

/// Whether `p` suits an atomic of `size` bytes (1, 2, 4 or 8; anything else never is).
#[inline(always)]
fn aligned(p: *mut u8, size: u32) -> bool {
    matches!(size, 1 | 2 | 4 | 8) && (p as usize) & (size as usize - 1) == 0
}

impl<'m> GlobalMem<'m> {
    pub fn new(mem: &'m dyn DeviceMemory) -> Self {
        GlobalMem {
            mem,
            cache: [Cached {
                base: 0,
                len: 0,
                host: std::ptr::null_mut(),
            }; 4],
            used: 0,
            next: 0,
        }
    }

    /// Host pointer for `size` bytes at `addr`, all inside one region.
    #[inline]
    fn ptr(&mut self, addr: u64, size: u64) -> Result<*mut u8, MemFault> {
        for c in &self.cache[..self.used] {
            let off = addr.wrapping_sub(c.base);
            if off < c.len && size <= c.len - off {
                return Ok(c.host.wrapping_add(off as usize));
            }
        }
        let r = self.mem.region(addr).ok_or(MemFault::Illegal)?;
        let off = addr.wrapping_sub(r.base);
        if r.host.is_null() || off >= r.len || size > r.len - off {
            return Err(MemFault::Illegal);
        }
        let slot = if self.used < self.cache.len() {
            self.used += 1;
            self.used - 1
        } else {
            self.next = (self.next + 1) % self.cache.len();
            self.next
        };
        self.cache[slot] = Cached {
            base: r.base,
            len: r.len,
            host: r.host,
        };
        Ok(r.host.wrapping_add(off as usize))
    }

    /// The region holding `size` bytes at `addr` (device base, length, host address), for
    /// the compiled code's inline region check.
    pub(crate) fn region_of(&mut self, addr: u64, size: u64) -> Option<(u64, u64, *mut u8)> {
        let p = self.ptr(addr, size).ok()?;
        let r = self.mem.region(addr)?;
        Some((
            r.base,
            r.len,
            p.wrapping_sub(addr.wrapping_sub(r.base) as usize),
        ))
    }

    /// Loads `size` (1, 2, 4, 8) bytes, zero-extended.
    pub fn load(&mut self, addr: u64, size: u32) -> Result<u64, MemFault> {
        let p = self.ptr(addr, size as u64)?;
        if !aligned(p, size) {
            return Ok(self.load_bytes(p, size));
        }
        // SAFETY: `p..p+size` lies inside a region the executor guarantees valid for concurrent
        // reads and writes until the launch returns (DeviceMemory contract), and `p` is aligned
        // to `size`, so it is a valid atomic of that width. All other accesses are atomic too.
        Ok(unsafe {
            match size {
                1 => AtomicU8::from_ptr(p).load(Relaxed) as u64,
                2 => AtomicU16::from_ptr(p.cast()).load(Relaxed) as u64,
                4 => AtomicU32::from_ptr(p.cast()).load(Relaxed) as u64,
                _ => AtomicU64::from_ptr(p.cast()).load(Relaxed),
            }
        })
    }

    fn load_bytes(&self, p: *mut u8, size: u32) -> u64 {
        let mut v = 0u64;
        for k in 0..size.min(8) as usize {
            // SAFETY: `p..p+size` is inside a valid region (checked by `ptr`); byte atomics
            // need no alignment.
            let b = unsafe { AtomicU8::from_ptr(p.add(k)).load(Relaxed) };
            v |= (b as u64) << (8 * k);
        }
        v
    }

    /// Stores the low `size` bytes of `v`.
    pub fn store(&mut self, addr: u64, size: u32, v: u64) -> Result<(), MemFault> {
        let p = self.ptr(addr, size as u64)?;
        if !aligned(p, size) {
            for k in 0..size.min(8) as usize {
                // SAFETY: as in `load_bytes`.
                unsafe { AtomicU8::from_ptr(p.add(k)).store((v >> (8 * k)) as u8, Relaxed) };
            }
            return Ok(());
        }
        // SAFETY: as in `load`: inside a valid region, aligned to `size`, atomic access.
        unsafe {
            match size {
                1 => AtomicU8::from_ptr(p).store(v as u8, Relaxed),
                2 => AtomicU16::from_ptr(p.cast()).store(v as u16, Relaxed),
                4 => AtomicU32::from_ptr(p.cast()).store(v as u32, Relaxed),
                _ => AtomicU64::from_ptr(p.cast()).store(v, Relaxed),
            }
        }
        Ok(())
    }

    /// Atomic read-modify-write of 4 or 8 bytes; returns the old value.
    pub fn atomic(
        &mut self,
        addr: u64,
        size: u32,
        op: AtomOp,
        signed: bool,
        b: u64,
        c: u64,
    ) -> Result<u64, MemFault> {
        let p = self.ptr(addr, size as u64)?;
        if !aligned(p, size) {
            return Err(MemFault::HostMisaligned);
        }
        // SAFETY: inside a valid region (checked by `ptr`), aligned to `size` (checked above);
        // every access to this memory is atomic.
        Ok(unsafe {
            if size == 4 {
                let a = AtomicU32::from_ptr(p.cast());
                let b32 = b as u32;
                (match op {
                    AtomOp::Add => a.fetch_add(b32, SeqCst),
                    AtomOp::Exch => a.swap(b32, SeqCst),
                    AtomOp::And => a.fetch_and(b32, SeqCst),
                    AtomOp::Or => a.fetch_or(b32, SeqCst),
                    AtomOp::Xor => a.fetch_xor(b32, SeqCst),
                    AtomOp::Cas => match a.compare_exchange(b32, c as u32, SeqCst, SeqCst) {
                        Ok(v) | Err(v) => v,
                    },
                    AtomOp::Min if signed => {
                        AtomicI32::from_ptr(p.cast()).fetch_min(b32 as i32, SeqCst) as u32
                    }
                    AtomOp::Max if signed => {
                        AtomicI32::from_ptr(p.cast()).fetch_max(b32 as i32, SeqCst) as u32
                    }
                    AtomOp::Min => a.fetch_min(b32, SeqCst),
                    AtomOp::Max => a.fetch_max(b32, SeqCst),
                    _ => match a.fetch_update(SeqCst, SeqCst, |old| {
                        Some(atomic_apply(op, 4, signed, old as u64, b, c) as u32)
                    }) {
                        Ok(v) | Err(v) => v,
                    },
                }) as u64
            } else {
                let a = AtomicU64::from_ptr(p.cast());
                match op {
                    AtomOp::Add => a.fetch_add(b, SeqCst),
                    AtomOp::Exch => a.swap(b, SeqCst),
                    AtomOp::And => a.fetch_and(b, SeqCst),
                    AtomOp::Or => a.fetch_or(b, SeqCst),
                    AtomOp::Xor => a.fetch_xor(b, SeqCst),
                    AtomOp::Cas => match a.compare_exchange(b, c, SeqCst, SeqCst) {
                        Ok(v) | Err(v) => v,
                    },
                    AtomOp::Min if signed => {
                        AtomicI64::from_ptr(p.cast()).fetch_min(b as i64, SeqCst) as u64
                    }
                    AtomOp::Max if signed => {
                        AtomicI64::from_ptr(p.cast()).fetch_max(b as i64, SeqCst) as u64
                    }
                    AtomOp::Min => a.fetch_min(b, SeqCst),
                    AtomOp::Max => a.fetch_max(b, SeqCst),
                    _ => match a.fetch_update(SeqCst, SeqCst, |old| {
                        Some(atomic_apply(op, 8, signed, old, b, c))
                    }) {
                        Ok(v) | Err(v) => v,
                    },
                }
            }
        })
    }
}

/// The new value of an atomic operation (used for shared and local memory, and for the
/// operations without a native atomic).
pub(crate) fn atomic_apply(op: AtomOp, size: u32, signed: bool, old: u64, b: u64, c: u64) -> u64 {
    let mask = if size == 8 { u64::MAX } else { 0xffff_ffff };
    let (old, b, c) = (old & mask, b & mask, c & mask);
    let sx = |v: u64| {
        if size == 8 {
            v as i64
        } else {
            v as u32 as i32 as i64
        }
    };
    let r = match op {
        AtomOp::Add => old.wrapping_add(b),
        AtomOp::FAdd => {
            if size == 8 {
                (f64::from_bits(old) + f64::from_bits(b)).to_bits()
            } else {
                // atom.add.f32 flushes subnormal inputs and results to zero.
                let f = |x: u64| crate::float::ftz32(f32::from_bits(x as u32));
                crate::float::ftz32(f(old) + f(b)).to_bits() as u64
            }
        }
        AtomOp::Min if signed => sx(old).min(sx(b)) as u64,
        AtomOp::Max if signed => sx(old).max(sx(b)) as u64,
        AtomOp::Min => old.min(b),
        AtomOp::Max => old.max(b),
        AtomOp::Exch => b,
        AtomOp::Cas => {
            if old == b {
                c
            } else {
                old
            }
        }
        AtomOp::And => old & b,
        AtomOp::Or => old | b,
        AtomOp::Xor => old ^ b,
        AtomOp::Inc => {
            if old >= b {
                0
            } else {
                old + 1
            }
        }
        AtomOp::Dec => {
            if old == 0 || old > b {
                b
            } else {
                old - 1
            }
        }
    };
    r & mask
}
