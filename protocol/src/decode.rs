// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Decoding messages and requests. Nothing here panics, whatever the input.

use thiserror::Error;
use zerocopy::FromBytes;

use crate::op::*;
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

fn take<'a, T: FromBytes>(
    what: &'static str,
    bytes: &'a [u8],
) -> Result<(T, &'a [u8]), DecodeError> {
    T::read_from_prefix(bytes).map_err(|_| DecodeError::Truncated {
        what,
        need: size_of::<T>() as u64,
        have: bytes.len() as u64,
    })
}

fn limit(what: &'static str, value: u64, limit: u64) -> Result<(), DecodeError> {
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

/// A decoded request payload. Tails (names, parameter buffers) borrow from the message.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Request<'a> {
    Hello(HelloReq, &'a [u8]),
    Nop,
    GetDeviceInfo(DeviceReq),
    DeviceSynchronize(DeviceReq),
    DeviceReset(DeviceReq),
    MemGetInfo(DeviceReq),
    DeviceSetLimit(LimitReq),
    DeviceGetLimit(LimitReq),
    Malloc(MallocReq),
    Free(PtrReq),
    MemcpyHtoD(MemcpyHtoDReq),
    MemcpyDtoH(MemcpyDtoHReq),
    MemcpyDtoD(MemcpyDtoDReq),
    Memset(MemsetReq),
    StreamCreate(StreamCreateReq),
    StreamDestroy(HandleReq),
    StreamSynchronize(HandleReq),
    StreamQuery(HandleReq),
    StreamWaitEvent(StreamWaitEventReq),
    EventCreate(EventCreateReq),
    EventDestroy(HandleReq),
    EventRecord(EventRecordReq),
    EventSynchronize(HandleReq),
    EventQuery(HandleReq),
    EventElapsedTime(EventElapsedReq),
    ModuleLoad(ModuleLoadReq),
    ModuleUnload(HandleReq),
    FunctionGet(FunctionGetReq, &'a [u8]),
    SymbolGet(SymbolGetReq, &'a [u8]),
    Launch(LaunchReq, &'a [u8]),
    FuncSetAttribute(FuncSetAttributeReq),
    BlasCreate(BlasCreateReq),
    BlasDestroy(HandleReq),
    BlasCall(BlasCallReq),
    RandCreate(RandCreateReq),
    RandDestroy(HandleReq),
    RandSet(RandSetReq),
    RandGenerate(RandGenerateReq),
}

/// Longest kernel or variable name accepted.
pub const MAX_NAME_LEN: usize = 4096;

fn fixed<T: FromBytes>(what: &'static str, payload: &[u8]) -> Result<T, DecodeError> {
    let (v, rest) = take::<T>(what, payload)?;
    if rest.is_empty() {
        Ok(v)
    } else {
        Err(DecodeError::Trailing(what))
    }
}

fn name_tail<'a, T: FromBytes>(
    what: &'static str,
    payload: &'a [u8],
) -> Result<(T, &'a [u8]), DecodeError> {
    let (v, rest) = take::<T>(what, payload)?;
    limit("name length", rest.len() as u64, MAX_NAME_LEN as u64)?;
    if rest.is_empty() || rest.contains(&0) {
        return Err(DecodeError::Inconsistent("name"));
    }
    Ok((v, rest))
}

/// Checks that a request's segments are exactly `outs` out segments and `ins` in segments.
fn segs(what: &'static str, s: &[SegmentDesc], outs: usize, ins: usize) -> Result<(), DecodeError> {
    let o = s
        .iter()
        .filter(|s| s.direction() == Some(SegmentDir::Out))
        .count();
    let i = s
        .iter()
        .filter(|s| s.direction() == Some(SegmentDir::In))
        .count();
    if o == outs && i == ins {
        Ok(())
    } else {
        Err(DecodeError::BadSegments(what))
    }
}

impl<'a> Request<'a> {
    /// Decodes a request's payload, checking that its segments fit the opcode.
    pub fn decode(raw: &RawRequest<'a>) -> Result<Self, DecodeError> {
        let op = Opcode::try_from(raw.header.opcode).map_err(DecodeError::UnknownOpcode)?;
        let p = raw.payload;
        let s = &raw.segments[..];
        use Opcode as O;
        let no_segs = |what| segs(what, s, 0, 0);
        Ok(match op {
            O::Hello => {
                no_segs("Hello")?;
                let (h, tail) = take::<HelloReq>("Hello", p)?;
                limit("program name", tail.len() as u64, MAX_NAME_LEN as u64)?;
                Request::Hello(h, tail)
            }
            O::Nop => {
                no_segs("Nop")?;
                if !p.is_empty() {
                    return Err(DecodeError::Trailing("Nop"));
                }
                Request::Nop
            }
            O::GetDeviceInfo => Request::GetDeviceInfo(fixed("GetDeviceInfo", p)?),
            O::DeviceSynchronize => Request::DeviceSynchronize(fixed("DeviceSynchronize", p)?),
            O::DeviceReset => Request::DeviceReset(fixed("DeviceReset", p)?),
            O::MemGetInfo => Request::MemGetInfo(fixed("MemGetInfo", p)?),
            O::DeviceSetLimit => Request::DeviceSetLimit(fixed("DeviceSetLimit", p)?),
            O::DeviceGetLimit => Request::DeviceGetLimit(fixed("DeviceGetLimit", p)?),
            O::Malloc => Request::Malloc(fixed("Malloc", p)?),
            O::Free => Request::Free(fixed("Free", p)?),
            O::MemcpyHtoD => {
                let r: MemcpyHtoDReq = fixed("MemcpyHtoD", p)?;
                segs("MemcpyHtoD", s, 1, 0)?;
                if Some(raw.out_len) != r.width.checked_mul(r.height) {
                    return Err(DecodeError::BadSegments("MemcpyHtoD"));
                }
                Request::MemcpyHtoD(r)
            }
            O::MemcpyDtoH => {
                let r: MemcpyDtoHReq = fixed("MemcpyDtoH", p)?;
                segs("MemcpyDtoH", s, 0, 1)?;
                if Some(raw.in_len) != r.width.checked_mul(r.height) {
                    return Err(DecodeError::BadSegments("MemcpyDtoH"));
                }
                Request::MemcpyDtoH(r)
            }
            O::MemcpyDtoD => Request::MemcpyDtoD(fixed("MemcpyDtoD", p)?),
            O::Memset => Request::Memset(fixed("Memset", p)?),
            O::StreamCreate => Request::StreamCreate(fixed("StreamCreate", p)?),
            O::StreamDestroy => Request::StreamDestroy(fixed("StreamDestroy", p)?),
            O::StreamSynchronize => Request::StreamSynchronize(fixed("StreamSynchronize", p)?),
            O::StreamQuery => Request::StreamQuery(fixed("StreamQuery", p)?),
            O::StreamWaitEvent => Request::StreamWaitEvent(fixed("StreamWaitEvent", p)?),
            O::EventCreate => Request::EventCreate(fixed("EventCreate", p)?),
            O::EventDestroy => Request::EventDestroy(fixed("EventDestroy", p)?),
            O::EventRecord => Request::EventRecord(fixed("EventRecord", p)?),
            O::EventSynchronize => Request::EventSynchronize(fixed("EventSynchronize", p)?),
            O::EventQuery => Request::EventQuery(fixed("EventQuery", p)?),
            O::EventElapsedTime => Request::EventElapsedTime(fixed("EventElapsedTime", p)?),
            O::ModuleLoad => {
                let r: ModuleLoadReq = fixed("ModuleLoad", p)?;
                if r.flags & MODULE_HAS_DATA != 0 {
                    segs("ModuleLoad", s, 1, 0)?;
                    if raw.out_len != r.size {
                        return Err(DecodeError::BadSegments("ModuleLoad"));
                    }
                } else {
                    segs("ModuleLoad", s, 0, 0)?;
                }
                Request::ModuleLoad(r)
            }
            O::ModuleUnload => Request::ModuleUnload(fixed("ModuleUnload", p)?),
            O::FunctionGet => {
                let (r, name) = name_tail("FunctionGet", p)?;
                Request::FunctionGet(r, name)
            }
            O::SymbolGet => {
                let (r, name) = name_tail("SymbolGet", p)?;
                Request::SymbolGet(r, name)
            }
            O::Launch => {
                let (r, tail) = take::<LaunchReq>("Launch", p)?;
                limit(
                    "parameter length",
                    u64::from(r.param_len),
                    u64::from(MAX_PARAM_LEN),
                )?;
                if tail.len() != r.param_len as usize {
                    return Err(DecodeError::Inconsistent("parameter length"));
                }
                Request::Launch(r, tail)
            }
            O::FuncSetAttribute => Request::FuncSetAttribute(fixed("FuncSetAttribute", p)?),
            O::BlasCreate => Request::BlasCreate(fixed("BlasCreate", p)?),
            O::BlasDestroy => Request::BlasDestroy(fixed("BlasDestroy", p)?),
            O::BlasCall => Request::BlasCall(fixed("BlasCall", p)?),
            O::RandCreate => Request::RandCreate(fixed("RandCreate", p)?),
            O::RandDestroy => Request::RandDestroy(fixed("RandDestroy", p)?),
            O::RandSet => Request::RandSet(fixed("RandSet", p)?),
            O::RandGenerate => {
                let r: RandGenerateReq = fixed("RandGenerate", p)?;
                let elem = lib::dist::elem_size(r.dist)
                    .ok_or(DecodeError::Inconsistent("distribution"))?;
                let bytes =
                    r.n.checked_mul(elem)
                        .ok_or(DecodeError::Inconsistent("RandGenerate length"))?;
                if r.flags & lib::RAND_TO_HOST != 0 {
                    // The output fills in segments only.
                    limit("host generator output", bytes, MAX_DATA_LEN)?;
                    if s.iter().any(|s| s.direction() != Some(SegmentDir::In))
                        || raw.in_len != bytes
                    {
                        return Err(DecodeError::BadSegments("RandGenerate"));
                    }
                } else {
                    segs("RandGenerate", s, 0, 0)?;
                }
                Request::RandGenerate(r)
            }
        })
        .and_then(|r| {
            // Only the copy and module opcodes carry data.
            match op {
                O::MemcpyHtoD
                | O::MemcpyDtoH
                | O::ModuleLoad
                | O::Hello
                | O::Nop
                | O::RandGenerate => Ok(r),
                _ => no_segs("request").map(|_| r),
            }
        })
    }
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
