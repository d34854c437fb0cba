// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Decoding messages and requests. Nothing here panics, whatever the input.

use thiserror::Error;
use zerocopy::FromBytes;

use crate::wire::*;

/// Why a message or request could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// Fewer bytes than the structure needs.
    #[error("Truncated {what}: need {need} bytes, have {have}")]
    Truncated {
        /// What was being decoded.
        what: &'static str,
        /// Bytes needed.
        need: u64,
        /// Bytes available.
        have: u64,
    },
    /// A magic number is wrong.
    #[error("Bad magic {0:#010x}")]
    BadMagic(u32),
    /// The peer speaks another protocol version.
    #[error("Unsupported protocol version {0}")]
    BadVersion(u16),
    /// An unknown opcode.
    #[error("Unknown opcode {0:#06x}")]
    UnknownOpcode(u32),
    /// A length or count is over its limit.
    #[error("{what} {value} exceeds the limit {limit}")]
    TooLarge {
        /// What is too large.
        what: &'static str,
        /// Its value.
        value: u64,
        /// The limit.
        limit: u64,
    },
    /// A payload has bytes after its fixed part where none are allowed.
    #[error("Trailing bytes after {0} payload")]
    Trailing(&'static str),
    /// A segment has an unknown direction.
    #[error("Bad segment direction {0}")]
    BadDirection(u32),
    /// The segments do not match what the opcode needs.
    #[error("{0}: wrong data segments")]
    BadSegments(&'static str),
    /// Declared totals disagree with the contents.
    #[error("Inconsistent {0}")]
    Inconsistent(&'static str),
}

pub(crate) fn take<'a, T: FromBytes>(
    what: &'static str,
    bytes: &'a [u8],
) -> Result<(T, &'a [u8]), DecodeError> {
    T::read_from_prefix(bytes).map_err(|_| DecodeError::Truncated {
        what,
        need: size_of::<T>() as u64,
        have: bytes.len() as u64,
    })
}

pub(crate) fn limit(what: &'static str, value: u64, limit: u64) -> Result<(), DecodeError> {
    if value > limit {
        Err(DecodeError::TooLarge { what, value, limit })
    } else {
        Ok(())
    }
}

/// Checks a message header against the protocol's limits. `ctrl_len`, `out_len` and
/// `in_len` may then be trusted to be within bounds, not to be right.
pub fn check_message_header(h: &MessageHeader) -> Result<(), DecodeError> {
    if h.magic != MESSAGE_MAGIC {
        return Err(DecodeError::BadMagic(h.magic));
    }
    if h.version != PROTOCOL_VERSION {
        return Err(DecodeError::BadVersion(h.version));
    }
    limit(
        "request count",
        u64::from(h.n_requests),
        u64::from(MAX_REQUESTS_PER_MESSAGE),
    )?;
    limit(
        "control length",
        u64::from(h.ctrl_len),
        u64::from(MAX_CTRL_LEN),
    )?;
    limit("out-data length", h.out_len, MAX_DATA_LEN)?;
    limit("in-data length", h.in_len, MAX_DATA_LEN)?;
    Ok(())
}

/// Reads and checks the header at the start of `bytes`.
pub fn decode_message_header(bytes: &[u8]) -> Result<MessageHeader, DecodeError> {
    let (h, _) = take::<MessageHeader>("message header", bytes)?;
    check_message_header(&h)?;
    Ok(h)
}

/// One request of a message, with its place in the message's data areas.
#[derive(Debug, Clone)]
pub struct RawRequest<'a> {
    /// The header.
    pub header: RequestHeader,
    /// Its data segments.
    pub segments: Vec<SegmentDesc>,
    /// The payload.
    pub payload: &'a [u8],
    /// Offset of its first out byte in the message's out-data area.
    pub out_offset: u64,
    /// Total bytes of its out segments.
    pub out_len: u64,
    /// Offset of its first in byte in the in-data area.
    pub in_offset: u64,
    /// Total bytes of its in segments.
    pub in_len: u64,
}

/// Splits a message's control area (the bytes after the [`MessageHeader`]) into requests,
/// checking every header, segment table and length against the header's totals.
pub fn split_requests<'a>(
    header: &MessageHeader,
    ctrl: &'a [u8],
) -> Result<Vec<RawRequest<'a>>, DecodeError> {
    check_message_header(header)?;
    if ctrl.len() as u64 != u64::from(header.ctrl_len) {
        return Err(DecodeError::Inconsistent("control length"));
    }
    let mut rest = ctrl;
    let mut out = Vec::with_capacity(header.n_requests.min(64) as usize);
    let (mut out_off, mut in_off) = (0u64, 0u64);
    for _ in 0..header.n_requests {
        let (h, r) = take::<RequestHeader>("request header", rest)?;
        if h.magic != REQUEST_MAGIC {
            return Err(DecodeError::BadMagic(h.magic));
        }
        if h.version != PROTOCOL_VERSION {
            return Err(DecodeError::BadVersion(h.version));
        }
        limit(
            "segment count",
            u64::from(h.n_segments),
            u64::from(MAX_SEGMENTS_PER_REQUEST),
        )?;
        limit(
            "payload length",
            u64::from(h.payload_len),
            u64::from(MAX_PAYLOAD_LEN),
        )?;
        let mut r = r;
        let mut segments = Vec::with_capacity(h.n_segments as usize);
        let (mut req_out, mut req_in) = (0u64, 0u64);
        for _ in 0..h.n_segments {
            let (s, r2) = take::<SegmentDesc>("segment", r)?;
            r = r2;
            limit("segment length", s.len, MAX_SEGMENT_LEN)?;
            match s.direction() {
                Some(SegmentDir::Out) => req_out += s.len,
                Some(SegmentDir::In) => req_in += s.len,
                None => return Err(DecodeError::BadDirection(s.dir)),
            }
            segments.push(s);
        }
        let plen = h.payload_len as usize;
        if r.len() < plen {
            return Err(DecodeError::Truncated {
                what: "payload",
                need: plen as u64,
                have: r.len() as u64,
            });
        }
        let (payload, r) = r.split_at(plen);
        rest = r;
        out.push(RawRequest {
            header: h,
            segments,
            payload,
            out_offset: out_off,
            out_len: req_out,
            in_offset: in_off,
            in_len: req_in,
        });
        // Each request's segments are at most 64 x 64 MiB, so these cannot overflow before
        // the total check below fails.
        out_off = out_off.saturating_add(req_out);
        in_off = in_off.saturating_add(req_in);
        limit("out-data total", out_off, header.out_len)?;
        limit("in-data total", in_off, header.in_len)?;
    }
    if !rest.is_empty() {
        return Err(DecodeError::Inconsistent("request count"));
    }
    if out_off != header.out_len {
        return Err(DecodeError::Inconsistent("out-data length"));
    }
    Ok(out)
}

/// One record of a reply.
#[derive(Debug, Clone)]
pub struct RawRecord<'a> {
    /// The header.
    pub header: RecordHeader,
    /// The payload.
    pub payload: &'a [u8],
}

/// Reads and checks a reply header.
pub fn decode_reply_header(bytes: &[u8]) -> Result<ReplyHeader, DecodeError> {
    let (h, _) = take::<ReplyHeader>("reply header", bytes)?;
    if h.magic != REPLY_MAGIC {
        return Err(DecodeError::BadMagic(h.magic));
    }
    if h.version != PROTOCOL_VERSION {
        return Err(DecodeError::BadVersion(h.version));
    }
    limit(
        "record count",
        u64::from(h.n_records),
        u64::from(MAX_REQUESTS_PER_MESSAGE) + 16,
    )?;
    limit(
        "control length",
        u64::from(h.ctrl_len),
        u64::from(MAX_CTRL_LEN),
    )?;
    limit("in-data length", h.in_len, MAX_DATA_LEN)?;
    Ok(h)
}

/// Splits a reply's control area into records.
pub fn split_records<'a>(
    header: &ReplyHeader,
    ctrl: &'a [u8],
) -> Result<Vec<RawRecord<'a>>, DecodeError> {
    if ctrl.len() as u64 != u64::from(header.ctrl_len) {
        return Err(DecodeError::Inconsistent("control length"));
    }
    let mut rest = ctrl;
    let mut out = Vec::with_capacity(header.n_records.min(64) as usize);
    let mut in_total = 0u64;
    for _ in 0..header.n_records {
        let (h, r) = take::<RecordHeader>("record header", rest)?;
        if RecordKind::from_u16(h.kind).is_none() {
            return Err(DecodeError::Inconsistent("record kind"));
        }
        limit(
            "payload length",
            u64::from(h.payload_len),
            u64::from(MAX_PAYLOAD_LEN),
        )?;
        let plen = h.payload_len as usize;
        if r.len() < plen {
            return Err(DecodeError::Truncated {
                what: "record payload",
                need: plen as u64,
                have: r.len() as u64,
            });
        }
        limit("record in-data", h.in_len, MAX_DATA_LEN)?;
        in_total = in_total.saturating_add(h.in_len);
        let (payload, r) = r.split_at(plen);
        rest = r;
        out.push(RawRecord { header: h, payload });
    }
    if !rest.is_empty() {
        return Err(DecodeError::Inconsistent("record count"));
    }
    if in_total != header.in_len {
        return Err(DecodeError::Inconsistent("in-data length"));
    }
    Ok(out)
}
