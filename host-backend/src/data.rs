// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Data segments as the host sees them: one logical byte range made of pieces of memory.
//!
//! The socket transport gives one piece (its receive buffer); the vhost-user transport gives
//! the guest-physical buffers of a descriptor chain, mapped from guest memory, so executors
//! copy straight between guest pages and device memory. Pieces are [`VolatileSlice`]s
//! because the guest may change its memory at any time.

use thiserror::Error;
use vm_memory::VolatileSlice;
use vm_memory::bitmap::BitmapSlice;

/// A segment access out of range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("Data access at {offset}+{len} outside {total} bytes")]
pub struct DataError {
    /// Requested offset.
    pub offset: u64,
    /// Requested length.
    pub len: u64,
    /// Bytes available.
    pub total: u64,
}

/// An ordered list of memory pieces forming one logical byte range.
#[derive(Clone, Debug, Default)]
pub struct DataSegs<'a> {
    parts: Vec<VolatileSlice<'a>>,
    len: u64,
}

impl<'a> DataSegs<'a> {
    /// Joins `parts` in order.
    pub fn new(parts: Vec<VolatileSlice<'a>>) -> Self {
        let len = parts.iter().map(|p| p.len() as u64).sum();
        Self { parts, len }
    }

    /// Joins pieces of guest memory that carry a dirty-page log, dropping the log: whoever
    /// writes through these pieces logs the written range itself (the vhost-user transport
    /// logs each call's in data once the call has run).
    pub fn untracked<B: BitmapSlice>(parts: Vec<VolatileSlice<'a, B>>) -> Self {
        let parts = parts
            .into_iter()
            .map(|s| {
                // SAFETY: the same memory as `s`, for the same lifetime `'a` (the guest
                // memory map `s` borrows stays mapped that long), accessed volatile as `s`
                // is; only the bitmap differs.
                unsafe { VolatileSlice::with_bitmap(s.ptr_guard_mut().as_ptr(), s.len(), (), None) }
            })
            .collect();
        Self::new(parts)
    }

    /// One piece: a host buffer.
    pub fn from_slice(buf: &'a mut [u8]) -> Self {
        Self::new(vec![VolatileSlice::from(buf)])
    }

    /// Total bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The pieces, in order.
    pub fn parts(&self) -> &[VolatileSlice<'a>] {
        &self.parts
    }

    fn check(&self, offset: u64, len: u64) -> Result<(), DataError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(DataError {
                offset,
                len,
                total: self.len,
            }),
        }
    }

    /// The bytes `[offset, offset + len)` as their own list of pieces.
    pub fn sub(&self, offset: u64, len: u64) -> Result<DataSegs<'a>, DataError> {
        self.check(offset, len)?;
        let mut parts = Vec::new();
        let (mut skip, mut want) = (offset, len);
        for p in &self.parts {
            if want == 0 {
                break;
            }
            let plen = p.len() as u64;
            if skip >= plen {
                skip -= plen;
                continue;
            }
            let n = (plen - skip).min(want);
            // In range: skip < plen and skip + n <= plen.
            if let Ok(s) = p.subslice(skip as usize, n as usize) {
                parts.push(s);
            }
            want -= n;
            skip = 0;
        }
        Ok(DataSegs { parts, len })
    }

    /// Calls `f(piece_offset, piece)` for every piece overlapping `[offset, offset + len)`,
    /// clipped to that range.
    pub fn for_each(
        &self,
        offset: u64,
        len: u64,
        mut f: impl FnMut(u64, &VolatileSlice<'a>),
    ) -> Result<(), DataError> {
        let sub = self.sub(offset, len)?;
        let mut at = 0;
        for p in &sub.parts {
            f(at, p);
            at += p.len() as u64;
        }
        Ok(())
    }

    /// Copies `dst.len()` bytes starting at `offset` into `dst`.
    pub fn read_at(&self, offset: u64, dst: &mut [u8]) -> Result<(), DataError> {
        self.for_each(offset, dst.len() as u64, |at, p| {
            let at = at as usize;
            p.copy_to(&mut dst[at..at + p.len()]);
        })
    }

    /// Copies `src` into the bytes starting at `offset`.
    pub fn write_at(&self, offset: u64, src: &[u8]) -> Result<(), DataError> {
        self.for_each(offset, src.len() as u64, |at, p| {
            let at = at as usize;
            p.copy_from(&src[at..at + p.len()]);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_read_and_write_as_one() {
        let mut a = [0u8; 3];
        let mut b = [0u8; 5];
        let segs = DataSegs::new(vec![
            VolatileSlice::from(&mut a[..]),
            VolatileSlice::from(&mut b[..]),
        ]);
        assert_eq!(segs.len(), 8);
        segs.write_at(1, &[1, 2, 3, 4]).unwrap();
        let mut out = [0u8; 8];
        segs.read_at(0, &mut out).unwrap();
        assert_eq!(out, [0, 1, 2, 3, 4, 0, 0, 0]);
        let sub = segs.sub(2, 3).unwrap();
        assert_eq!(sub.parts().len(), 2);
        let mut s = [0u8; 3];
        sub.read_at(0, &mut s).unwrap();
        assert_eq!(s, [2, 3, 4]);
        assert!(segs.read_at(6, &mut [0; 3]).is_err());
        assert!(segs.sub(u64::MAX, 2).is_err());
    }
}
