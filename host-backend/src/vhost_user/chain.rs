// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Descriptor-chain validation: turns a chain the guest posted into a [`Chain`] whose every
//! byte range is known to lie inside guest memory, or rejects it.
//!
//! Nothing here trusts the guest. The walk stops after [`MAX_CHAIN_DESCRIPTORS`]
//! descriptors; lengths are summed in `u64` from `u32` descriptor lengths (at most 2^42, no
//! overflow); every descriptor is checked against the guest memory map before any byte is
//! read; headers are copied out once and only the copies are used afterwards. Data areas stay
//! in guest memory and are later accessed through `VolatileSlice`s.

use std::ops::Deref;

use thiserror::Error;
use vcuda_protocol::decode::{DecodeError, check_message_header};
use vcuda_protocol::virtio::{
    ChainHeader, ChainOp, MAX_CHAIN_DESCRIPTORS, MAX_SHARE_EXTENTS, MAX_SHARE_LEN,
    MIN_REPLY_CAPACITY, PageExtent, SHARE_PAGE, SharePagesReq, UnsharePagesReq,
};
use vcuda_protocol::{MessageHeader, RecordHeader, ReplyHeader};
use vhost_user_backend::bitmap::BitmapMmapRegion;
use virtio_queue::DescriptorChain;
use vm_memory::bitmap::{Bitmap, WithBitmapSlice};
use vm_memory::{Bytes, GuestAddress, GuestMemoryBackend, GuestMemoryMmap, VolatileSlice};
use zerocopy::FromBytes;

/// The guest memory the backend maps, with the dirty-page log QEMU hands over while a VM
/// migrates (`SET_LOG_BASE`): writes through vm-memory are logged as they happen, and the
/// device logs the rest itself ([`Area::mark_dirty`]).
pub type Mem = GuestMemoryMmap<BitmapMmapRegion>;

/// Bytes a reply area needs to hold one error record.
pub const ERROR_REPLY_LEN: u64 = (size_of::<ReplyHeader>() + size_of::<RecordHeader>()) as u64;

const CHAIN_HEADER_LEN: u64 = size_of::<ChainHeader>() as u64;
const MESSAGE_HEADER_LEN: u64 = size_of::<MessageHeader>() as u64;

/// Why a chain was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ChainError {
    /// More descriptors than [`MAX_CHAIN_DESCRIPTORS`].
    #[error("Chain has more than {MAX_CHAIN_DESCRIPTORS} descriptors")]
    TooManyDescriptors,
    /// The chain has no descriptor, loops, names a descriptor outside the table, has a bad
    /// indirect table or is longer than 4 GiB.
    #[error("Broken descriptor chain")]
    Broken,
    /// A device-readable descriptor follows a device-writable one.
    #[error("Readable descriptor after a writable one")]
    ReadableAfterWritable,
    /// A descriptor's buffer is not inside guest memory.
    #[error("Descriptor buffer {addr:#x}+{len} outside guest memory")]
    OutOfRange {
        /// Guest-physical address.
        addr: u64,
        /// Length.
        len: u32,
    },
    /// The readable part cannot hold a [`ChainHeader`].
    #[error("Readable part of {0} bytes has no chain header")]
    NoHeader(u64),
    /// Unknown [`ChainOp`].
    #[error("Unknown chain operation {0}")]
    BadOp(u32),
    /// `reply_capacity` is below [`MIN_REPLY_CAPACITY`] or beyond the writable part.
    #[error("Reply capacity {capacity} outside {MIN_REPLY_CAPACITY}..={writable}")]
    BadReplyCapacity {
        /// What the chain header says.
        capacity: u32,
        /// Bytes of the writable part.
        writable: u64,
    },
    /// The message header is invalid.
    #[error("Bad message header")]
    BadMessage(#[source] DecodeError),
    /// The readable part's length disagrees with the headers.
    #[error("Readable part is {actual} bytes, the headers need {expected}")]
    ReadableLength {
        /// What the headers imply.
        expected: u64,
        /// What the chain has.
        actual: u64,
    },
    /// A `SharePages` request is malformed.
    #[error("Bad SharePages request: {0}")]
    BadShare(&'static str),
    /// A `SubmitDetached` message asks for in data (nobody would read it).
    #[error("Detached message with {0} bytes of in data")]
    DetachedInData(u64),
    /// The writable part's length disagrees with the headers.
    #[error("Writable part is {actual} bytes, the headers need {expected}")]
    WritableLength {
        /// What the headers imply.
        expected: u64,
        /// What the chain has.
        actual: u64,
    },
}

/// A guest-physical byte range known to lie inside guest memory (possibly across adjacent
/// regions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    /// Start.
    pub addr: GuestAddress,
    /// Length.
    pub len: u32,
}

/// An ordered list of [`Range`]s forming one logical byte area.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Area {
    ranges: Vec<Range>,
    len: u64,
}

impl Area {
    fn push(&mut self, r: Range) {
        if r.len > 0 {
            self.len += u64::from(r.len);
            self.ranges.push(r);
        }
    }

    /// Total bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the area is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The ranges, in order.
    pub fn ranges(&self) -> &[Range] {
        &self.ranges
    }

    /// The bytes `[offset, offset + len)`, clipped to the area.
    pub fn sub(&self, offset: u64, len: u64) -> Area {
        let mut out = Area::default();
        let (mut skip, mut want) = (offset, len);
        for r in &self.ranges {
            if want == 0 {
                break;
            }
            let rlen = u64::from(r.len);
            if skip >= rlen {
                skip -= rlen;
                continue;
            }
            // skip < rlen <= u32::MAX, so both fit in u32.
            let n = (rlen - skip).min(want);
            out.push(Range {
                // Ranges were checked to lie inside guest memory, so this does not wrap.
                addr: GuestAddress(r.addr.0.wrapping_add(skip)),
                len: n as u32,
            });
            want -= n;
            skip = 0;
        }
        out
    }

    /// Copies the area's bytes starting at `offset` into `buf`; false if out of range or
    /// unmapped.
    pub fn read(&self, mem: &Mem, offset: u64, buf: &mut [u8]) -> bool {
        let sub = self.sub(offset, buf.len() as u64);
        if sub.len != buf.len() as u64 {
            return false;
        }
        let mut at = 0usize;
        for r in &sub.ranges {
            let n = r.len as usize;
            if mem.read_slice(&mut buf[at..at + n], r.addr).is_err() {
                return false;
            }
            at += n;
        }
        true
    }

    /// Copies `buf` into the area starting at `offset`; false if out of range or unmapped.
    pub fn write(&self, mem: &Mem, offset: u64, buf: &[u8]) -> bool {
        let sub = self.sub(offset, buf.len() as u64);
        if sub.len != buf.len() as u64 {
            return false;
        }
        let mut at = 0usize;
        for r in &sub.ranges {
            let n = r.len as usize;
            if mem.write_slice(&buf[at..at + n], r.addr).is_err() {
                return false;
            }
            at += n;
        }
        true
    }

    /// Logs the area as written in the dirty-page log (a no-op while no migration logs):
    /// for writes that bypass vm-memory's accessors (an executor copying into the pieces
    /// [`Area::slices`] gave, a device's DMA).
    pub fn mark_dirty(&self, mem: &Mem) {
        for r in &self.ranges {
            mark_dirty(mem, r.addr, u64::from(r.len));
        }
    }

    /// The area as host memory pieces, for [`crate::data::DataSegs`]; `None` if some range
    /// is not mapped in `mem` (never after validation against the same `mem`).
    pub fn slices<'m>(
        &self,
        mem: &'m Mem,
    ) -> Option<Vec<VolatileSlice<'m, <BitmapMmapRegion as WithBitmapSlice<'m>>::S>>> {
        let mut out = Vec::with_capacity(self.ranges.len());
        for r in &self.ranges {
            for s in GuestMemoryBackend::get_slices(mem, r.addr, r.len as usize) {
                out.push(s.ok()?);
            }
        }
        Some(out)
    }
}

/// Logs `len` bytes of guest memory at `addr` as written in the dirty-page log (a no-op
/// while no migration logs; bytes outside guest memory are skipped).
pub fn mark_dirty(mem: &Mem, addr: GuestAddress, len: u64) {
    let Ok(len) = usize::try_from(len) else {
        return;
    };
    for s in GuestMemoryBackend::get_slices(mem, addr, len).flatten() {
        s.bitmap().mark_dirty(0, s.len());
    }
}

/// The message a [`ChainOp::Submit`] chain carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The message header (checked against the protocol's limits).
    pub header: MessageHeader,
    /// The control area after the header (`header.ctrl_len` bytes).
    pub ctrl: Area,
    /// The out-data area (`header.out_len` bytes).
    pub out: Area,
    /// The in-data area (`header.in_len` bytes).
    pub inp: Area,
}

/// A validated chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chain {
    /// The chain header (a copy).
    pub header: ChainHeader,
    /// Its operation.
    pub op: ChainOp,
    /// The reply area (`header.reply_capacity` bytes, device-writable).
    pub reply: Area,
    /// The message, for [`ChainOp::Submit`].
    pub message: Option<Message>,
    /// What a [`ChainOp::SharePages`] or [`ChainOp::UnsharePages`] chain asks for.
    pub pages: Option<PagesOp>,
}

/// The request of a [`ChainOp::SharePages`] or [`ChainOp::UnsharePages`] chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PagesOp {
    /// Share the pages the extent table lists (its bytes still in guest memory: read them
    /// with [`PagesOp::extents`]).
    Share {
        /// The request (checked: `len` a non-zero multiple of the page size up to
        /// [`MAX_SHARE_LEN`], `n_extents` in `1..=MAX_SHARE_EXTENTS`).
        req: SharePagesReq,
        /// The extent table, `n_extents` × 16 bytes.
        table: Area,
    },
    /// Stop sharing a region.
    Unshare(UnsharePagesReq),
}

impl PagesOp {
    /// Reads and checks a `Share`'s extent table: every extent page-aligned and non-empty,
    /// their lengths adding up to the request's. (Whether they lie in guest memory is the
    /// mapper's to check.)
    pub fn extents(
        req: &SharePagesReq,
        table: &Area,
        mem: &Mem,
    ) -> Result<Vec<PageExtent>, ChainError> {
        let n = req.n_extents as usize;
        let mut bytes = vec![0u8; n * size_of::<PageExtent>()];
        if !table.read(mem, 0, &mut bytes) {
            return Err(ChainError::BadShare("extent table unreadable"));
        }
        let mut total = 0u64;
        let mut out = Vec::with_capacity(n);
        for c in bytes.chunks_exact(size_of::<PageExtent>()) {
            let e = PageExtent::read_from_bytes(c).map_err(|_| ChainError::BadShare("extent"))?;
            if e.len == 0 || !e.addr.is_multiple_of(SHARE_PAGE) || !e.len.is_multiple_of(SHARE_PAGE)
            {
                return Err(ChainError::BadShare("extent not whole pages"));
            }
            total = total
                .checked_add(e.len)
                .filter(|&t| t <= req.len)
                .ok_or(ChainError::BadShare("extents longer than the region"))?;
            out.push(e);
        }
        if total != req.len {
            return Err(ChainError::BadShare("extents shorter than the region"));
        }
        Ok(out)
    }
}

/// A rejected chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// Why.
    pub error: ChainError,
    /// Where an error reply may go: the first `min(reply_capacity, writable length)`
    /// writable bytes when the chain header was readable and that is at least
    /// [`ERROR_REPLY_LEN`]; empty otherwise (the chain is then returned with `len` 0).
    pub reply: Area,
}

/// Validates a chain popped from a request queue. The chain's memory must be the guest
/// memory later used to access the areas.
pub fn parse<M>(chain: DescriptorChain<M>) -> Result<Chain, Rejected>
where
    M: Deref<Target = Mem>,
{
    let mut chain = chain;
    let mut readable = Area::default();
    let mut writable = Area::default();
    let mut seen_writable = false;
    let mut count = 0u32;
    let mut last_has_next = false;
    let no_reply = |error| Rejected {
        error,
        reply: Area::default(),
    };
    // The iterator ends quietly on a broken link (bad index, loop, bad indirect table, over
    // 4 GiB); a last descriptor that still says "next" tells those apart from a proper end.
    while let Some(d) = chain.next() {
        count += 1;
        if count > MAX_CHAIN_DESCRIPTORS {
            return Err(no_reply(ChainError::TooManyDescriptors));
        }
        last_has_next = d.has_next();
        let r = Range {
            addr: d.addr(),
            len: d.len(),
        };
        if r.len > 0 && !GuestMemoryBackend::check_range(chain.memory(), r.addr, r.len as usize) {
            return Err(no_reply(ChainError::OutOfRange {
                addr: r.addr.0,
                len: r.len,
            }));
        }
        if d.is_write_only() {
            seen_writable = true;
            writable.push(r);
        } else if seen_writable {
            return Err(no_reply(ChainError::ReadableAfterWritable));
        } else {
            readable.push(r);
        }
    }
    if count == 0 || last_has_next {
        return Err(no_reply(ChainError::Broken));
    }
    let mem = chain.memory();

    let mut hbuf = [0u8; size_of::<ChainHeader>()];
    if readable.len() < CHAIN_HEADER_LEN || !readable.read(mem, 0, &mut hbuf) {
        return Err(no_reply(ChainError::NoHeader(readable.len())));
    }
    let Ok(header) = ChainHeader::read_from_bytes(&hbuf) else {
        return Err(no_reply(ChainError::NoHeader(readable.len())));
    };
    let usable = u64::from(header.reply_capacity).min(writable.len());
    let error_area = if usable >= ERROR_REPLY_LEN {
        writable.sub(0, usable)
    } else {
        Area::default()
    };
    let reject = |error| {
        Err(Rejected {
            error,
            reply: error_area.clone(),
        })
    };

    let Some(op) = ChainOp::from_u32(header.op) else {
        return reject(ChainError::BadOp(header.op));
    };
    let capacity = u64::from(header.reply_capacity);
    if header.reply_capacity < MIN_REPLY_CAPACITY || capacity > writable.len() {
        return reject(ChainError::BadReplyCapacity {
            capacity: header.reply_capacity,
            writable: writable.len(),
        });
    }
    let reply = writable.sub(0, capacity);

    match op {
        ChainOp::OpenSession | ChainOp::CloseSession => {
            if readable.len() != CHAIN_HEADER_LEN {
                return reject(ChainError::ReadableLength {
                    expected: CHAIN_HEADER_LEN,
                    actual: readable.len(),
                });
            }
            if writable.len() != capacity {
                return reject(ChainError::WritableLength {
                    expected: capacity,
                    actual: writable.len(),
                });
            }
            Ok(Chain {
                header,
                op,
                reply,
                message: None,
                pages: None,
            })
        }
        ChainOp::SharePages | ChainOp::UnsharePages => {
            if writable.len() != capacity {
                return reject(ChainError::WritableLength {
                    expected: capacity,
                    actual: writable.len(),
                });
            }
            let body = readable.len() - CHAIN_HEADER_LEN.min(readable.len());
            let pages = if op == ChainOp::SharePages {
                let mut rbuf = [0u8; size_of::<SharePagesReq>()];
                if !readable.read(mem, CHAIN_HEADER_LEN, &mut rbuf) {
                    return reject(ChainError::BadShare("no request"));
                }
                let Ok(req) = SharePagesReq::read_from_bytes(&rbuf) else {
                    return reject(ChainError::BadShare("no request"));
                };
                if req.reserved != 0
                    || req.n_extents == 0
                    || req.n_extents > MAX_SHARE_EXTENTS
                    || req.len == 0
                    || req.len > MAX_SHARE_LEN
                    || !req.len.is_multiple_of(SHARE_PAGE)
                {
                    return reject(ChainError::BadShare("out of bounds"));
                }
                let table_len = u64::from(req.n_extents) * size_of::<PageExtent>() as u64;
                let expected = size_of::<SharePagesReq>() as u64 + table_len;
                if body != expected {
                    return reject(ChainError::ReadableLength {
                        expected: CHAIN_HEADER_LEN + expected,
                        actual: readable.len(),
                    });
                }
                PagesOp::Share {
                    req,
                    table: readable.sub(
                        CHAIN_HEADER_LEN + size_of::<SharePagesReq>() as u64,
                        table_len,
                    ),
                }
            } else {
                let mut rbuf = [0u8; size_of::<UnsharePagesReq>()];
                let req = (body == rbuf.len() as u64
                    && readable.read(mem, CHAIN_HEADER_LEN, &mut rbuf))
                .then(|| UnsharePagesReq::read_from_bytes(&rbuf).ok())
                .flatten();
                let Some(req) = req else {
                    return reject(ChainError::ReadableLength {
                        expected: CHAIN_HEADER_LEN + rbuf.len() as u64,
                        actual: readable.len(),
                    });
                };
                PagesOp::Unshare(req)
            };
            Ok(Chain {
                header,
                op,
                reply,
                message: None,
                pages: Some(pages),
            })
        }
        ChainOp::Submit | ChainOp::SubmitDetached => {
            let mut mbuf = [0u8; size_of::<MessageHeader>()];
            if !readable.read(mem, CHAIN_HEADER_LEN, &mut mbuf) {
                return reject(ChainError::ReadableLength {
                    expected: CHAIN_HEADER_LEN + MESSAGE_HEADER_LEN,
                    actual: readable.len(),
                });
            }
            let Ok(mh) = MessageHeader::read_from_bytes(&mbuf) else {
                return reject(ChainError::NoHeader(readable.len()));
            };
            if let Err(e) = check_message_header(&mh) {
                return reject(ChainError::BadMessage(e));
            }
            if op == ChainOp::SubmitDetached && mh.in_len != 0 {
                return reject(ChainError::DetachedInData(mh.in_len));
            }
            // Bounded by check_message_header: 48 + 4 MiB + 256 MiB and 4 GiB + 256 MiB.
            let ctrl_at = CHAIN_HEADER_LEN + MESSAGE_HEADER_LEN;
            let out_at = ctrl_at + u64::from(mh.ctrl_len);
            let expected = out_at + mh.out_len;
            if readable.len() != expected {
                return reject(ChainError::ReadableLength {
                    expected,
                    actual: readable.len(),
                });
            }
            let expected = capacity + mh.in_len;
            if writable.len() != expected {
                return reject(ChainError::WritableLength {
                    expected,
                    actual: writable.len(),
                });
            }
            Ok(Chain {
                header,
                op,
                reply,
                message: Some(Message {
                    header: mh,
                    ctrl: readable.sub(ctrl_at, u64::from(mh.ctrl_len)),
                    out: readable.sub(out_at, mh.out_len),
                    inp: writable.sub(capacity, mh.in_len),
                }),
                pages: None,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn area(ranges: &[(u64, u32)]) -> Area {
        let mut a = Area::default();
        for &(addr, len) in ranges {
            a.push(Range {
                addr: GuestAddress(addr),
                len,
            });
        }
        a
    }

    #[test]
    fn sub_splits_ranges() {
        let a = area(&[(0x1000, 10), (0x3000, 0), (0x2000, 10)]);
        assert_eq!(a.len(), 20);
        assert_eq!(a.ranges().len(), 2);
        assert_eq!(a.sub(5, 10), area(&[(0x1005, 5), (0x2000, 5)]));
        assert_eq!(a.sub(10, 100), area(&[(0x2000, 10)]));
        assert!(a.sub(20, 1).is_empty());
        assert!(a.sub(u64::MAX, u64::MAX).is_empty());
    }

    #[test]
    fn read_write_across_ranges_and_regions() {
        let mem =
            Mem::from_ranges(&[(GuestAddress(0), 0x1000), (GuestAddress(0x1000), 0x1000)]).unwrap();
        // One range crossing the region boundary, then another.
        let a = area(&[(0xff8, 16), (0x100, 4)]);
        let data: Vec<u8> = (0..20).collect();
        assert!(a.write(&mem, 0, &data));
        let mut back = [0u8; 20];
        assert!(a.read(&mem, 0, &mut back));
        assert_eq!(&back[..], &data[..]);
        assert_eq!(a.slices(&mem).unwrap().len(), 3);
        assert!(!a.read(&mem, 1, &mut back));
        let outside = area(&[(0x1ff0, 32)]);
        assert!(outside.slices(&mem).is_none());
        assert!(!outside.write(&mem, 0, &[0; 32]));
    }
}
