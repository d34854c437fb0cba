// SPDX-License-Identifier: GPL-2.0
//! Bounce chunks: a call's data copied through physically contiguous kernel memory, for user
//! buffers too scattered for the device's descriptor limit.
//!
//! The request owns the chunks (in its [`Bufs`]); the device reads the out chunks and writes
//! the in chunks while the chain is on a ring; the submitting thread copies in before the
//! call and, once the request is `DONE`, copies the in chunks out (`Request::copy_back`).

use kernel::{
    page::PAGE_SIZE,
    prelude::*,
    uaccess::{UserPtr, UserSlice},
};

use super::{bufs::Bufs, sg::SgBuilder};
use crate::{
    abi::{VcudaSeg, SEG_IN, SEG_OUT},
    sys::Chunk,
};

/// A call's data in kernel chunks, for user buffers whose pages are too scattered to fit the
/// device's descriptor limit: out data is copied in before the call, in data is copied out
/// after it (only if the caller is still there). In chunks start with the user's current
/// bytes, so bytes the device does not write come back unchanged.
pub(super) struct Bounce {
    out: KVec<Chunk>,
    pub(super) inp: KVec<Chunk>,
    /// The in segments (address, length), in order.
    pub(super) in_segs: KVec<(u64, u64)>,
}

/// Largest bounce chunk: 2^10 pages (4 MiB).
const MAX_CHUNK_ORDER: u32 = 10;

impl Bufs {
    /// Copies the segments into bounce chunks (in segments too, see [`Bounce`]) and adds the
    /// chunks to the out (1) and in (3) lists.
    pub(super) fn bounce(
        &mut self,
        segs: &[VcudaSeg],
        totals: [u64; 2],
        sgb: &mut SgBuilder,
    ) -> Result {
        let mut b = Bounce {
            out: alloc_chunks(totals[0])?,
            inp: alloc_chunks(totals[1])?,
            in_segs: KVec::new(),
        };
        for s in segs.iter().filter(|s| s.dir == SEG_IN && s.len > 0) {
            b.in_segs.push((s.addr, s.len), GFP_KERNEL_ACCOUNT)?;
        }
        for (dir, chunks) in [(SEG_OUT, &b.out), (SEG_IN, &b.inp)] {
            let mut cur = ChunkCursor::new(chunks);
            for s in segs.iter().filter(|s| s.dir == dir && s.len > 0) {
                cur.copy_from_user(s.addr, s.len)?;
            }
        }
        for (list, chunks, total) in [(1, &b.out, totals[0]), (3, &b.inp, totals[1])] {
            let mut left = total as usize;
            for c in chunks.iter() {
                let n = c.len().min(left);
                sgb.add(list, c.page(), 0, n)?;
                left -= n;
            }
        }
        self.bounce = Some(b);
        Ok(())
    }
}

/// Allocates chunks for `total` bytes, as large as the allocator gives them.
pub(super) fn alloc_chunks(total: u64) -> Result<KVec<Chunk>> {
    let mut v = KVec::new();
    let mut left = total as usize;
    let mut max_order = MAX_CHUNK_ORDER;
    while left > 0 {
        let pages = left.div_ceil(PAGE_SIZE);
        let fit = usize::BITS - (pages - 1).leading_zeros();
        let order = fit.min(max_order);
        match Chunk::alloc(order) {
            Some(c) => {
                left -= c.len().min(left);
                v.push(c, GFP_KERNEL_ACCOUNT)?;
            }
            None if order > 0 => max_order = order - 1,
            None => return Err(ENOMEM),
        }
    }
    Ok(v)
}

/// Walks a chunk list as one byte stream.
pub(super) struct ChunkCursor<'a> {
    chunks: &'a [Chunk],
    i: usize,
    off: usize,
}

impl<'a> ChunkCursor<'a> {
    pub(super) fn new(chunks: &'a [Chunk]) -> Self {
        Self {
            chunks,
            i: 0,
            off: 0,
        }
    }

    /// The next `len` bytes of the stream, piece by piece (kernel address, length).
    fn pieces(&mut self, mut len: u64, mut f: impl FnMut(*mut u8, usize) -> Result) -> Result {
        while len > 0 {
            let c = self.chunks.get(self.i).ok_or(EINVAL)?;
            let n = (c.len() - self.off).min(len as usize);
            // SAFETY: `off + n <= c.len()`: inside the chunk.
            f(unsafe { c.as_ptr().add(self.off) }, n)?;
            self.off += n;
            len -= n as u64;
            if self.off == c.len() {
                self.i += 1;
                self.off = 0;
            }
        }
        Ok(())
    }

    fn copy_from_user(&mut self, addr: u64, len: u64) -> Result {
        let mut r = UserSlice::new(UserPtr::from_addr(addr as usize), len as usize).reader();
        self.pieces(len, |p, n| {
            // SAFETY: `p..p + n` lies in a chunk this request owns and nothing else uses yet.
            r.read_raw(unsafe { core::slice::from_raw_parts_mut(p.cast(), n) })
        })
    }

    pub(super) fn copy_to_user(&mut self, addr: u64, len: u64) -> Result {
        let mut w = UserSlice::new(UserPtr::from_addr(addr as usize), len as usize).writer();
        self.pieces(len, |p, n| {
            // SAFETY: `p..p + n` lies in a chunk the device is done with.
            w.write_slice(unsafe { core::slice::from_raw_parts(p, n) })
        })
    }
}
