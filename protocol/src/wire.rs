// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Message framing: the headers every transport carries.
//!
//! A *message* goes from guest to host:
//!
//! ```text
//! [MessageHeader][request 0][request 1]...[request n-1]   <- control area (ctrl_len bytes after the header)
//! [out data of request 0][out data of request 1]...       <- out-data area (out_len bytes)
//! ```
//!
//! and each request in the control area is
//!
//! ```text
//! [RequestHeader][SegmentDesc x n_segments][payload (payload_len bytes)]
//! ```
//!
//! A *reply* goes from host to guest:
//!
//! ```text
//! [ReplyHeader][record 0]...[record n-1]   <- control area
//! [in data ...]                            <- in-data area (in_len bytes)
//! ```
//!
//! with each record `[RecordHeader][payload]`. Everything is little-endian and packed (no
//! padding between records; readers copy headers out, so nothing needs alignment).
//!
//! Bulk data never sits in a payload: it travels in *data segments*. A request lists its
//! segments (length and direction); the bytes of all `Out` segments of a message follow the
//! control area in request order, and `In` segments are filled in the in-data area. The socket
//! transport carries both areas inline; the virtio transport carries them as guest-physical
//! scatter-gather lists (see [`crate::virtio`]), so the host reads and writes the program's own
//! pages. Either way the host sees one logical byte stream per direction.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// The protocol version this crate speaks. Bumped on any incompatible change.
pub const PROTOCOL_VERSION: u16 = 2;

/// `b"VCUM"`: starts every message.
pub const MESSAGE_MAGIC: u32 = u32::from_le_bytes(*b"VCUM");
/// `b"VCUQ"`: starts every request.
pub const REQUEST_MAGIC: u32 = u32::from_le_bytes(*b"VCUQ");
/// `b"VCUR"`: starts every reply.
pub const REPLY_MAGIC: u32 = u32::from_le_bytes(*b"VCUR");

/// Most requests in one message.
pub const MAX_REQUESTS_PER_MESSAGE: u32 = 4096;
/// Largest control area of a message or reply.
pub const MAX_CTRL_LEN: u32 = 4 << 20;
/// Largest payload of one request or record.
pub const MAX_PAYLOAD_LEN: u32 = 1 << 20;
/// Most data segments one request may list.
pub const MAX_SEGMENTS_PER_REQUEST: u32 = 64;
/// Largest data segment. The guest library splits bigger copies into several requests, so
/// the host never buffers more than this for one request.
pub const MAX_SEGMENT_LEN: u64 = 64 << 20;
/// Largest out-data or in-data area of one message.
pub const MAX_DATA_LEN: u64 = 256 << 20;

/// Header of a guest-to-host message.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct MessageHeader {
    /// [`MESSAGE_MAGIC`].
    pub magic: u32,
    /// [`PROTOCOL_VERSION`].
    pub version: u16,
    /// `MSG_*` flags.
    pub flags: u16,
    /// Number of requests in the control area.
    pub n_requests: u32,
    /// Bytes of requests after this header.
    pub ctrl_len: u32,
    /// Bytes of out data after the control area.
    pub out_len: u64,
    /// Bytes of in-data space the guest provides for the reply.
    pub in_len: u64,
}
const _: () = assert!(size_of::<MessageHeader>() == 32);

/// Message flag: every request is [`REQ_REPLY_ON_ERROR`]; the guest is not waiting for a reply.
pub const MSG_NO_WAIT: u16 = 1 << 0;

/// Header of one request.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct RequestHeader {
    /// [`REQUEST_MAGIC`].
    pub magic: u32,
    /// [`PROTOCOL_VERSION`].
    pub version: u16,
    /// `REQ_*` flags.
    pub flags: u16,
    /// An [`crate::Opcode`] value.
    pub opcode: u32,
    /// Bytes of payload after the segment table.
    pub payload_len: u32,
    /// Chosen by the guest; the reply record carries it back. Unique among requests in flight.
    pub seq: u64,
    /// Number of [`SegmentDesc`] after this header.
    pub n_segments: u32,
    /// Zero.
    pub reserved: u32,
}
const _: () = assert!(size_of::<RequestHeader>() == 32);

/// Request flag: reply only if the request fails. The guest does not wait; a failure
/// surfaces later as an asynchronous error ([`RecordKind::AsyncError`]), the way CUDA reports
/// errors of launches and asynchronous copies.
pub const REQ_REPLY_ON_ERROR: u16 = 1 << 0;

/// Direction of a data segment.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentDir {
    /// Guest to host (the host reads it).
    Out = 1,
    /// Host to guest (the host writes it).
    In = 2,
}

/// One data segment of a request.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct SegmentDesc {
    /// Length in bytes, at most [`MAX_SEGMENT_LEN`].
    pub len: u64,
    /// A [`SegmentDir`] value.
    pub dir: u32,
    /// Zero.
    pub reserved: u32,
}
const _: () = assert!(size_of::<SegmentDesc>() == 16);

impl SegmentDesc {
    /// An out segment of `len` bytes.
    pub fn out(len: u64) -> Self {
        Self {
            len,
            dir: SegmentDir::Out as u32,
            reserved: 0,
        }
    }
    /// An in segment of `len` bytes.
    pub fn input(len: u64) -> Self {
        Self {
            len,
            dir: SegmentDir::In as u32,
            reserved: 0,
        }
    }
    /// The direction, if valid.
    pub fn direction(&self) -> Option<SegmentDir> {
        match self.dir {
            1 => Some(SegmentDir::Out),
            2 => Some(SegmentDir::In),
            _ => None,
        }
    }
}

/// Header of a host-to-guest reply.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ReplyHeader {
    /// [`REPLY_MAGIC`].
    pub magic: u32,
    /// [`PROTOCOL_VERSION`].
    pub version: u16,
    /// Zero.
    pub flags: u16,
    /// Number of records in the control area.
    pub n_records: u32,
    /// Bytes of records after this header.
    pub ctrl_len: u32,
    /// Bytes of in data after the control area (socket transport) or written into the
    /// guest's in segments (virtio transport).
    pub in_len: u64,
    /// Zero.
    pub reserved: u64,
}
const _: () = assert!(size_of::<ReplyHeader>() == 32);

/// What a reply record is.
#[repr(u16)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// The reply to request `seq`.
    Reply = 0,
    /// Request `seq`, sent with [`REQ_REPLY_ON_ERROR`], failed with `status`. The guest
    /// reports it from its next call, like CUDA's asynchronous errors.
    AsyncError = 1,
    /// Device-side `printf` output; the payload is the text for the program's stdout.
    Stdout = 2,
}

impl RecordKind {
    /// Decodes a record kind.
    pub fn from_u16(v: u16) -> Option<Self> {
        match v {
            0 => Some(Self::Reply),
            1 => Some(Self::AsyncError),
            2 => Some(Self::Stdout),
            _ => None,
        }
    }
}

/// Header of one reply record.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct RecordHeader {
    /// The request's sequence number (0 for [`RecordKind::Stdout`]).
    pub seq: u64,
    /// A `cudaError_t` (or, for library calls, the library's status type).
    pub status: u32,
    /// A [`RecordKind`] value.
    pub kind: u16,
    /// Zero.
    pub flags: u16,
    /// Bytes of payload after this header.
    pub payload_len: u32,
    /// Zero.
    pub reserved: u32,
    /// Bytes of in data this request produced (at most the sum of its in segments).
    pub in_len: u64,
}
const _: () = assert!(size_of::<RecordHeader>() == 32);

/// Longest kernel or variable name accepted.
pub const MAX_NAME_LEN: usize = 4096;
