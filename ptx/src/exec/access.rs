// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Memory access from the interpreter: the faults an access can raise, little-endian reads and
//! writes of byte buffers, the shared-memory fast paths, generic-address classification, and
//! loads, stores and atomics dispatched by state space.

use super::{
    ctx::Ctx,
    warp::{Warp, lanes},
};
use crate::{
    access::{classify, window_addr},
    alu::Lanes,
    cluster,
    error::KernelError,
    ir::{AtomOp, Space},
    memory::{MemFault, atomic_apply},
    module::PARAM_WINDOW,
};

pub(super) enum Fault {
    Illegal { addr: u64, size: u32, write: bool },
    Misaligned { addr: u64, size: u32 },
    Stack,
}

#[inline(always)]
pub(super) fn rd(buf: &[u8], off: u64, size: u32) -> Option<u64> {
    let o = usize::try_from(off).ok()?;
    let end = o.checked_add(size as usize)?;
    let b = buf.get(o..end)?;
    Some(match size {
        1 => b[0] as u64,
        2 => u16::from_le_bytes(b.try_into().ok()?) as u64,
        4 => u32::from_le_bytes(b.try_into().ok()?) as u64,
        8 => u64::from_le_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

#[inline(always)]
pub(super) fn wr(buf: &mut [u8], off: u64, size: u32, v: u64) -> Option<()> {
    let o = usize::try_from(off).ok()?;
    let end = o.checked_add(size as usize)?;
    let b = buf.get_mut(o..end)?;
    match size {
        1 => b[0] = v as u8,
        2 => b.copy_from_slice(&(v as u16).to_le_bytes()),
        4 => b.copy_from_slice(&(v as u32).to_le_bytes()),
        8 => b.copy_from_slice(&v.to_le_bytes()),
        _ => return None,
    }
    Some(())
}

/// Where an `SZ`-byte access of `lane` at `a` lies in a block-owned buffer of `len` bytes:
/// its offset, or the lane's fault (misaligned, or outside the buffer).
#[inline(always)]
fn fixed_offset<const SZ: usize>(
    lane: usize,
    a: u64,
    len: usize,
    write: bool,
) -> Result<usize, (usize, Fault)> {
    let size = SZ as u32;
    if a & (SZ as u64 - 1) != 0 {
        return Err((lane, Fault::Misaligned { addr: a, size }));
    }
    match usize::try_from(a) {
        Ok(o) if o.checked_add(SZ).is_some_and(|end| end <= len) => Ok(o),
        _ => Err((
            lane,
            Fault::Illegal {
                addr: a,
                size,
                write,
            },
        )),
    }
}

/// Loads `SZ` bytes per active lane from a block-owned buffer (shared memory).
#[inline(always)]
pub(super) fn ld_fixed<const SZ: usize>(
    buf: &[u8],
    base: &Lanes,
    off: u64,
    mask: u32,
    sx: bool,
    out: &mut Lanes,
) -> Result<(), (usize, Fault)> {
    for lane in lanes(mask) {
        let a = base[lane].wrapping_add(off) & 0xffff_ffff;
        let o = fixed_offset::<SZ>(lane, a, buf.len(), false)?;
        let mut x = [0u8; 8];
        x[..SZ].copy_from_slice(&buf[o..o + SZ]);
        let v = u64::from_le_bytes(x);
        out[lane] = if sx { sext(v, SZ as u8) } else { v };
    }
    Ok(())
}

/// Stores `SZ` bytes per active lane into a block-owned buffer (shared memory).
#[inline(always)]
pub(super) fn st_fixed<const SZ: usize>(
    buf: &mut [u8],
    base: &Lanes,
    off: u64,
    mask: u32,
    vals: &Lanes,
) -> Result<(), (usize, Fault)> {
    for lane in lanes(mask) {
        let a = base[lane].wrapping_add(off) & 0xffff_ffff;
        let o = fixed_offset::<SZ>(lane, a, buf.len(), true)?;
        buf[o..o + SZ].copy_from_slice(&vals[lane].to_le_bytes()[..SZ]);
    }
    Ok(())
}

pub(super) fn sext(v: u64, bytes: u8) -> u64 {
    let sh = 64 - bytes as u32 * 8;
    (((v << sh) as i64) >> sh) as u64
}

impl<'a> Ctx<'a> {
    /// Loads `size` bytes at shared address `a` (32 bits): from the block's own shared
    /// memory, or from a cluster peer's for an address `mapa` made (see `crate::cluster`).
    pub(super) fn shared_load(&self, a: u64, size: u32) -> Option<u64> {
        match cluster::split(a) {
            (None, off) => rd(&self.shared, off, size),
            (Some(r), off) if r == self.rank => rd(&self.shared, off, size),
            (Some(r), off) => self.cluster()?.load(r, off, size),
        }
    }

    /// Stores `size` bytes at shared address `a` (as [`Ctx::shared_load`]).
    pub(super) fn shared_store(&mut self, a: u64, size: u32, v: u64) -> Option<()> {
        match cluster::split(a) {
            (None, off) => wr(&mut self.shared, off, size, v),
            (Some(r), off) if r == self.rank => wr(&mut self.shared, off, size, v),
            (Some(r), off) => self.cluster()?.store(r, off, size, v),
        }
    }

    /// An atomic operation at shared address `a` (as [`Ctx::shared_load`]): the old value. In
    /// a launch with clusters the block's own atomics are atomic too, since its peers may
    /// update the same memory at once.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn shared_atomic(
        &mut self,
        a: u64,
        size: u32,
        op: AtomOp,
        signed: bool,
        b: u64,
        c: u64,
    ) -> Option<u64> {
        let (r, off) = cluster::split(a);
        let r = r.unwrap_or(self.rank);
        if let Some(cl) = self.cl {
            return cl.atomic(r, off, size, op, signed, b, c);
        }
        if r != self.rank {
            return None;
        }
        let old = rd(&self.shared, off, size)?;
        wr(
            &mut self.shared,
            off,
            size,
            atomic_apply(op, size, signed, old, b, c),
        )?;
        Some(old)
    }

    pub(super) fn fault(&self, f: Fault, w: &Warp, lane: usize, line: u32) -> KernelError {
        let loc = self.loc(w, lane, line);
        match f {
            Fault::Illegal { addr, size, write } => KernelError::IllegalAddress {
                addr,
                size,
                write,
                loc,
            },
            Fault::Misaligned { addr, size } => KernelError::MisalignedAddress { addr, size, loc },
            Fault::Stack => KernelError::StackOverflow { loc },
        }
    }

    pub(super) fn load(
        &mut self,
        w: &Warp,
        lane: usize,
        space: Space,
        addr: u64,
        size: u32,
    ) -> Result<u64, Fault> {
        let ill = Fault::Illegal {
            addr,
            size,
            write: false,
        };
        let (space, a) = match space {
            Space::Generic => classify(addr),
            s => (s, window_addr(s, addr)),
        };
        match space {
            Space::Global | Space::Const | Space::Generic => match self.gmem.load(a, size) {
                Ok(v) => Ok(v),
                Err(_) => Err(ill),
            },
            Space::Shared => self.shared_load(a, size).ok_or(ill),
            Space::Local => rd(&w.local[lane], a, size).ok_or(ill),
            Space::Param if a >= PARAM_WINDOW => {
                rd(self.l.params, a.wrapping_sub(PARAM_WINDOW), size).ok_or(ill)
            }
            // `.param` variables of device functions and call sites live in the frame.
            Space::Param => rd(&w.local[lane], a, size).ok_or(ill),
        }
    }

    pub(super) fn store(
        &mut self,
        w: &mut Warp,
        lane: usize,
        space: Space,
        addr: u64,
        size: u32,
        v: u64,
    ) -> Result<(), Fault> {
        let ill = Fault::Illegal {
            addr,
            size,
            write: true,
        };
        let (space, a) = match space {
            Space::Generic => classify(addr),
            s => (s, window_addr(s, addr)),
        };
        match space {
            Space::Global | Space::Generic => self.gmem.store(a, size, v).map_err(|_| ill),
            Space::Shared => self.shared_store(a, size, v).ok_or(ill),
            Space::Local => wr(&mut w.local[lane], a, size, v).ok_or(ill),
            Space::Param if a < PARAM_WINDOW => wr(&mut w.local[lane], a, size, v).ok_or(ill),
            Space::Const | Space::Param => Err(ill),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn atomic(
        &mut self,
        w: &mut Warp,
        lane: usize,
        space: Space,
        addr: u64,
        size: u32,
        op: AtomOp,
        signed: bool,
        b: u64,
        c: u64,
    ) -> Result<u64, Fault> {
        let ill = Fault::Illegal {
            addr,
            size,
            write: true,
        };
        let (space, a) = match space {
            Space::Generic => classify(addr),
            s => (s, window_addr(s, addr)),
        };
        let rmw = |buf: &mut [u8]| -> Option<u64> {
            let old = rd(buf, a, size)?;
            wr(buf, a, size, atomic_apply(op, size, signed, old, b, c))?;
            Some(old)
        };
        match space {
            Space::Global | Space::Generic => match self.gmem.atomic(a, size, op, signed, b, c) {
                Ok(v) => Ok(v),
                Err(MemFault::HostMisaligned) => Err(Fault::Misaligned { addr, size }),
                Err(MemFault::Illegal) => Err(ill),
            },
            Space::Shared => self.shared_atomic(a, size, op, signed, b, c).ok_or(ill),
            Space::Local => rmw(&mut w.local[lane]).ok_or(ill),
            Space::Const | Space::Param => Err(ill),
        }
    }
}
