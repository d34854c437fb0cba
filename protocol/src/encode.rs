// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Building messages (guest side) and replies (host side).

use zerocopy::{Immutable, IntoBytes};

use crate::operations::{Op, Opcode};
use crate::wire::*;

/// Builds a message: a header followed by requests. Reuse one builder to avoid allocations.
#[derive(Debug)]
pub struct MessageBuilder {
    buf: Vec<u8>,
    n_requests: u32,
    out_len: u64,
    in_len: u64,
}

impl Default for MessageBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl MessageBuilder {
    /// An empty message.
    pub fn new() -> Self {
        let mut buf = Vec::with_capacity(512);
        buf.resize(size_of::<MessageHeader>(), 0);
        Self {
            buf,
            n_requests: 0,
            out_len: 0,
            in_len: 0,
        }
    }

    /// Empties the builder.
    pub fn clear(&mut self) {
        self.buf.truncate(size_of::<MessageHeader>());
        self.n_requests = 0;
        self.out_len = 0;
        self.in_len = 0;
    }

    /// Number of requests so far.
    pub fn len(&self) -> u32 {
        self.n_requests
    }

    /// Whether there are no requests.
    pub fn is_empty(&self) -> bool {
        self.n_requests == 0
    }

    /// Bytes of the control area so far (header included).
    pub fn ctrl_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Bytes of out data the requests so far declare.
    pub fn out_len(&self) -> u64 {
        self.out_len
    }

    /// Bytes of in data the requests so far declare.
    pub fn in_len(&self) -> u64 {
        self.in_len
    }

    /// Appends a request: `fixed` and then `tail` form its payload.
    pub fn push<T: IntoBytes + Immutable + ?Sized>(
        &mut self,
        opcode: Opcode,
        flags: u16,
        seq: u64,
        segments: &[SegmentDesc],
        fixed: &T,
        tail: &[u8],
    ) {
        let fixed = fixed.as_bytes();
        let h = RequestHeader {
            magic: REQUEST_MAGIC,
            version: PROTOCOL_VERSION,
            flags,
            opcode: opcode as u32,
            payload_len: (fixed.len() + tail.len()) as u32,
            seq,
            n_segments: segments.len() as u32,
            reserved: 0,
        };
        self.buf.extend_from_slice(h.as_bytes());
        for s in segments {
            self.buf.extend_from_slice(s.as_bytes());
            match s.direction() {
                Some(SegmentDir::Out) => self.out_len += s.len,
                Some(SegmentDir::In) => self.in_len += s.len,
                None => {}
            }
        }
        self.buf.extend_from_slice(fixed);
        self.buf.extend_from_slice(tail);
        self.n_requests += 1;
    }

    /// Appends a request of operation `O`: its fixed part `req`, then `tail`.
    pub fn push_op<O: Op>(
        &mut self,
        flags: u16,
        seq: u64,
        segments: &[SegmentDesc],
        req: &O::Req,
        tail: &[u8],
    ) {
        self.push(O::CODE, flags, seq, segments, req, tail);
    }

    /// Fills in the header and returns the whole control area (header included).
    pub fn finish(&mut self, flags: u16) -> &[u8] {
        let h = MessageHeader {
            magic: MESSAGE_MAGIC,
            version: PROTOCOL_VERSION,
            flags,
            n_requests: self.n_requests,
            ctrl_len: (self.buf.len() - size_of::<MessageHeader>()) as u32,
            out_len: self.out_len,
            in_len: self.in_len,
        };
        self.buf[..size_of::<MessageHeader>()].copy_from_slice(h.as_bytes());
        &self.buf
    }
}

/// Builds a reply: a header followed by records.
#[derive(Debug)]
pub struct ReplyBuilder {
    buf: Vec<u8>,
    n_records: u32,
    in_len: u64,
}

impl Default for ReplyBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ReplyBuilder {
    /// An empty reply.
    pub fn new() -> Self {
        let mut buf = Vec::with_capacity(256);
        buf.resize(size_of::<ReplyHeader>(), 0);
        Self {
            buf,
            n_records: 0,
            in_len: 0,
        }
    }

    /// Empties the builder.
    pub fn clear(&mut self) {
        self.buf.truncate(size_of::<ReplyHeader>());
        self.n_records = 0;
        self.in_len = 0;
    }

    /// Number of records so far.
    pub fn len(&self) -> u32 {
        self.n_records
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.n_records == 0
    }

    /// Bytes so far (header included).
    pub fn ctrl_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Appends a record whose payload is the concatenation of `payload`.
    pub fn push(
        &mut self,
        kind: RecordKind,
        seq: u64,
        status: u32,
        payload: &[&[u8]],
        in_len: u64,
    ) {
        let plen: usize = payload.iter().map(|p| p.len()).sum();
        let h = RecordHeader {
            seq,
            status,
            kind: kind as u16,
            flags: 0,
            payload_len: plen as u32,
            reserved: 0,
            in_len,
        };
        self.buf.extend_from_slice(h.as_bytes());
        for p in payload {
            self.buf.extend_from_slice(p);
        }
        self.n_records += 1;
        self.in_len += in_len;
    }

    /// Appends `other`'s records, in order.
    pub fn append(&mut self, other: &ReplyBuilder) {
        self.buf
            .extend_from_slice(&other.buf[size_of::<ReplyHeader>()..]);
        self.n_records += other.n_records;
        self.in_len += other.in_len;
    }

    /// Fills in the header and returns the whole control area (header included).
    pub fn finish(&mut self) -> &[u8] {
        let h = ReplyHeader {
            magic: REPLY_MAGIC,
            version: PROTOCOL_VERSION,
            flags: 0,
            n_records: self.n_records,
            ctrl_len: (self.buf.len() - size_of::<ReplyHeader>()) as u32,
            in_len: self.in_len,
            reserved: 0,
        };
        self.buf[..size_of::<ReplyHeader>()].copy_from_slice(h.as_bytes());
        &self.buf
    }
}
