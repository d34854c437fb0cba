// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Round-trip and robustness tests.

use proptest::prelude::*;
use zerocopy::{FromBytes, IntoBytes};

use crate::decode::{split_records, split_requests};
use crate::*;

fn one(opcode: Opcode, segs: &[SegmentDesc], fixed: &[u8], tail: &[u8]) -> Vec<u8> {
    let mut b = MessageBuilder::new();
    b.push(opcode, 0, 7, segs, fixed, tail);
    b.finish(0).to_vec()
}

fn decode_one(msg: &[u8]) -> Result<Request<'_>, DecodeError> {
    let h = decode::decode_message_header(msg)?;
    let reqs = split_requests(&h, &msg[size_of::<MessageHeader>()..])?;
    assert_eq!(reqs.len(), 1);
    Request::decode(&reqs[0])
}

#[test]
fn every_fixed_opcode_round_trips() {
    let launch = LaunchReq {
        function: 3,
        stream: 4,
        grid: [1, 2, 3],
        block: [32, 1, 1],
        shared_mem: 0,
        param_len: 4,
    };
    let msg = one(Opcode::Launch, &[], launch.as_bytes(), &[1, 2, 3, 4]);
    assert_eq!(
        decode_one(&msg).unwrap(),
        Request::Launch(launch, &[1, 2, 3, 4])
    );

    let h2d = MemcpyHtoDReq {
        dst: 0x1000,
        dpitch: 0,
        width: 16,
        height: 2,
        stream: 0,
        flags: 0,
        reserved: 0,
    };
    let msg = one(
        Opcode::MemcpyHtoD,
        &[SegmentDesc::out(32)],
        h2d.as_bytes(),
        &[],
    );
    assert_eq!(decode_one(&msg).unwrap(), Request::MemcpyHtoD(h2d));
    // The segment must match width * height.
    let msg = one(
        Opcode::MemcpyHtoD,
        &[SegmentDesc::out(31)],
        h2d.as_bytes(),
        &[],
    );
    assert!(matches!(decode_one(&msg), Err(DecodeError::BadSegments(_))));

    let d2h = MemcpyDtoHReq {
        src: 0x1000,
        spitch: 0,
        width: 8,
        height: 1,
        stream: 0,
        flags: 1,
        reserved: 0,
    };
    let msg = one(
        Opcode::MemcpyDtoH,
        &[SegmentDesc::input(8)],
        d2h.as_bytes(),
        &[],
    );
    assert_eq!(decode_one(&msg).unwrap(), Request::MemcpyDtoH(d2h));

    let f = FunctionGetReq { module: 9 };
    let msg = one(Opcode::FunctionGet, &[], f.as_bytes(), b"_Z3addPfS_S_i");
    assert_eq!(
        decode_one(&msg).unwrap(),
        Request::FunctionGet(f, b"_Z3addPfS_S_i")
    );
    // Names must be non-empty and NUL-free.
    let msg = one(Opcode::FunctionGet, &[], f.as_bytes(), b"");
    assert!(decode_one(&msg).is_err());

    let msg = one(Opcode::Nop, &[], &[], &[]);
    assert_eq!(decode_one(&msg).unwrap(), Request::Nop(()));
    let msg = one(
        Opcode::Malloc,
        &[],
        MallocReq {
            device: 0,
            flags: 0,
            size: 5,
        }
        .as_bytes(),
        &[],
    );
    assert!(matches!(decode_one(&msg).unwrap(), Request::Malloc(m) if m.size == 5));
    // Trailing bytes and segments where none belong are errors.
    let msg = one(Opcode::Malloc, &[], MallocReq::default().as_bytes(), &[0]);
    assert_eq!(decode_one(&msg), Err(DecodeError::Trailing("Malloc")));
    let msg = one(
        Opcode::Malloc,
        &[SegmentDesc::out(0)],
        MallocReq::default().as_bytes(),
        &[],
    );
    assert!(decode_one(&msg).is_err());
}

#[test]
fn batches_place_data_in_order() {
    let mut b = MessageBuilder::new();
    let h2d = MemcpyHtoDReq {
        width: 10,
        height: 1,
        ..Default::default()
    };
    let d2h = MemcpyDtoHReq {
        width: 20,
        height: 1,
        ..Default::default()
    };
    b.push(
        Opcode::MemcpyHtoD,
        REQ_REPLY_ON_ERROR,
        1,
        &[SegmentDesc::out(10)],
        &h2d,
        &[],
    );
    b.push(
        Opcode::MemcpyDtoH,
        0,
        2,
        &[SegmentDesc::input(20)],
        &d2h,
        &[],
    );
    b.push(Opcode::MemcpyHtoD, 0, 3, &[SegmentDesc::out(10)], &h2d, &[]);
    let msg = b.finish(0).to_vec();
    let h = decode::decode_message_header(&msg).unwrap();
    assert_eq!((h.n_requests, h.out_len, h.in_len), (3, 20, 20));
    let reqs = split_requests(&h, &msg[32..]).unwrap();
    assert_eq!(reqs[0].out_offset, 0);
    assert_eq!(reqs[2].out_offset, 10);
    assert_eq!(reqs[1].in_offset, 0);
    assert_eq!(reqs[1].in_len, 20);
    assert_eq!(reqs[0].header.flags, REQ_REPLY_ON_ERROR);
}

#[test]
fn reply_round_trip() {
    let mut r = ReplyBuilder::new();
    r.push(
        RecordKind::Reply,
        5,
        0,
        &[PtrResp { ptr: 42 }.as_bytes()],
        0,
    );
    r.push(RecordKind::Stdout, 0, 0, &[b"hello\n"], 0);
    r.push(RecordKind::Reply, 6, status::INVALID_VALUE, &[], 16);
    let bytes = r.finish().to_vec();
    let h = decode::decode_reply_header(&bytes).unwrap();
    let recs = split_records(&h, &bytes[32..]).unwrap();
    assert_eq!(recs.len(), 3);
    assert_eq!(PtrResp::read_from_bytes(recs[0].payload).unwrap().ptr, 42);
    assert_eq!(recs[1].payload, b"hello\n");
    assert_eq!(recs[2].header.status, status::INVALID_VALUE);
    assert_eq!(h.in_len, 16);
}

#[test]
fn header_limits() {
    let mut b = MessageBuilder::new();
    b.push(Opcode::Nop, 0, 1, &[], &[] as &[u8], &[]);
    let mut msg = b.finish(0).to_vec();
    // Wrong version.
    msg[4] = 9;
    assert_eq!(
        decode::decode_message_header(&msg),
        Err(DecodeError::BadVersion(9))
    );
    msg[4] = PROTOCOL_VERSION as u8;
    // A request count that disagrees with the control area.
    msg[8] = 2;
    let h = decode::decode_message_header(&msg).unwrap();
    assert!(split_requests(&h, &msg[32..]).is_err());
}

fn arb_segment() -> impl Strategy<Value = SegmentDesc> {
    (0u64..4096, prop::bool::ANY).prop_map(|(len, out)| {
        if out {
            SegmentDesc::out(len)
        } else {
            SegmentDesc::input(len)
        }
    })
}

proptest! {
    #[test]
    fn decoding_random_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(h) = decode::decode_message_header(&bytes) {
            let ctrl = &bytes[32.min(bytes.len())..];
            if let Ok(reqs) = split_requests(&h, ctrl) {
                for r in &reqs {
                    let _ = Request::decode(r);
                }
            }
        }
        if let Ok(h) = decode::decode_reply_header(&bytes) {
            let _ = split_records(&h, &bytes[32.min(bytes.len())..]);
        }
    }

    #[test]
    fn mutated_messages_never_panic(idx in 0usize..200, val in any::<u8>(), param in prop::collection::vec(any::<u8>(), 0..64)) {
        let mut b = MessageBuilder::new();
        let l = LaunchReq { param_len: param.len() as u32, ..Default::default() };
        b.push(Opcode::Launch, 0, 1, &[], &l, &param);
        b.push(Opcode::MemcpyHtoD, 0, 2, &[SegmentDesc::out(8)], &MemcpyHtoDReq { width: 8, height: 1, ..Default::default() }, &[]);
        let mut msg = b.finish(0).to_vec();
        let i = idx % msg.len();
        msg[i] = val;
        if let Ok(h) = decode::decode_message_header(&msg)
            && let Ok(reqs) = split_requests(&h, &msg[32..]) {
                for r in &reqs {
                    let _ = Request::decode(r);
                }
            }
    }

    #[test]
    fn arbitrary_batches_round_trip(
        reqs in prop::collection::vec((any::<u64>(), any::<u16>(), prop::collection::vec(arb_segment(), 0..4), prop::collection::vec(any::<u8>(), 0..64)), 0..16)
    ) {
        let mut b = MessageBuilder::new();
        for (seq, flags, segs, payload) in &reqs {
            b.push(Opcode::Nop, *flags, *seq, segs, &payload[..], &[]);
        }
        let msg = b.finish(0).to_vec();
        let h = decode::decode_message_header(&msg).unwrap();
        let raw = split_requests(&h, &msg[32..]).unwrap();
        prop_assert_eq!(raw.len(), reqs.len());
        let (mut out_off, mut in_off) = (0, 0);
        for (r, (seq, flags, segs, payload)) in raw.iter().zip(&reqs) {
            prop_assert_eq!(r.header.seq, *seq);
            prop_assert_eq!(r.header.flags, *flags);
            prop_assert_eq!(&r.segments, segs);
            prop_assert_eq!(r.payload, &payload[..]);
            prop_assert_eq!(r.out_offset, out_off);
            prop_assert_eq!(r.in_offset, in_off);
            out_off += r.out_len;
            in_off += r.in_len;
        }
    }
}

#[test]
fn every_operation_decodes_its_own_request() {
    // A zeroed fixed part of the size the table gives decodes to the same operation,
    // unless the operation needs a tail or data (then it is rejected, never misread).
    for &op in Opcode::ALL {
        let mut b = MessageBuilder::new();
        b.push(op, 0, 1, &[], &vec![0u8; op.request_size()][..], &[]);
        let msg = b.finish(0).to_vec();
        match decode_one(&msg) {
            Ok(r) => assert_eq!(r.opcode(), op, "{}", op.name()),
            Err(e) => assert!(
                matches!(
                    op,
                    Opcode::FunctionGet
                        | Opcode::SymbolGet
                        | Opcode::SymbolBind
                        | Opcode::RandGenerate
                        | Opcode::MemcpyHtoD
                        | Opcode::MemcpyDtoH
                ),
                "{} rejected its own request: {e}",
                op.name()
            ),
        }
        // One byte more is trailing garbage for operations without a tail.
        let mut b = MessageBuilder::new();
        b.push(op, 0, 1, &[], &vec![0u8; op.request_size() + 1][..], &[]);
        let msg = b.finish(0).to_vec();
        if !matches!(
            op,
            Opcode::Hello | Opcode::FunctionGet | Opcode::SymbolGet | Opcode::Launch
        ) {
            assert!(decode_one(&msg).is_err(), "{}", op.name());
        }
    }
}
