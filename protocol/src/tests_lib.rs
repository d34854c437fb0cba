// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Round-trip and robustness tests of the cuBLAS and cuRAND requests.

use proptest::prelude::*;
use zerocopy::{FromBytes, IntoBytes};

use crate::decode::split_requests;
use crate::*;

fn one(opcode: Opcode, flags: u16, segs: &[SegmentDesc], fixed: &[u8]) -> Vec<u8> {
    let mut b = MessageBuilder::new();
    b.push(opcode, flags, 11, segs, fixed, &[]);
    b.finish(0).to_vec()
}

fn decode_one(msg: &[u8]) -> Result<Request<'_>, DecodeError> {
    let h = decode::decode_message_header(msg)?;
    let reqs = split_requests(&h, &msg[size_of::<MessageHeader>()..])?;
    Request::decode(&reqs[0])
}

fn gen_req(n: u64, dist: u32, flags: u32) -> RandGenerateReq {
    RandGenerateReq {
        handle: 1,
        stream: 0,
        dst: 0x1000,
        n,
        dist,
        flags,
        mean: 1.5,
        stddev: 2.0,
    }
}

#[test]
fn library_requests_round_trip() {
    let c = BlasCallReq {
        handle: 5,
        func: lib::func::GEMM,
        m: 3,
        n: 4,
        k: 5,
        lda: 3,
        alpha: 1.0f32
            .to_le_bytes()
            .iter()
            .chain(&[0; 12])
            .copied()
            .collect::<Vec<_>>()[..16]
            .try_into()
            .unwrap(),
        ..Default::default()
    };
    let msg = one(Opcode::BlasCall, REQ_REPLY_ON_ERROR, &[], c.as_bytes());
    assert_eq!(decode_one(&msg).unwrap(), Request::BlasCall(c));
    // Segments never belong to a BLAS call.
    let msg = one(Opcode::BlasCall, 0, &[SegmentDesc::out(4)], c.as_bytes());
    assert!(decode_one(&msg).is_err());
    let msg = one(Opcode::BlasCall, 0, &[], &c.as_bytes()[..255]);
    assert!(matches!(
        decode_one(&msg),
        Err(DecodeError::Truncated { .. })
    ));

    let cr = BlasCreateReq::default();
    let msg = one(Opcode::BlasCreate, 0, &[], cr.as_bytes());
    assert_eq!(decode_one(&msg).unwrap(), Request::BlasCreate(cr));
    let h = HandleReq { handle: 9 };
    let msg = one(Opcode::RandDestroy, 0, &[], h.as_bytes());
    assert_eq!(decode_one(&msg).unwrap(), Request::RandDestroy(h));
    let rc = RandCreateReq {
        rng_type: 101,
        flags: lib::RAND_HOST,
        ..Default::default()
    };
    let msg = one(Opcode::RandCreate, 0, &[], rc.as_bytes());
    assert_eq!(decode_one(&msg).unwrap(), Request::RandCreate(rc));
    let rs = RandSetReq {
        handle: 2,
        what: lib::set::SEED,
        reserved: 0,
        value: 1234,
    };
    let msg = one(Opcode::RandSet, 0, &[], rs.as_bytes());
    assert_eq!(decode_one(&msg).unwrap(), Request::RandSet(rs));
}

#[test]
fn rand_generate_segments_match_the_output() {
    // Device output: no segments.
    let g = gen_req(10, lib::dist::UNIFORM_F32, 0);
    let msg = one(Opcode::RandGenerate, 0, &[], g.as_bytes());
    assert_eq!(decode_one(&msg).unwrap(), Request::RandGenerate(g));
    let msg = one(
        Opcode::RandGenerate,
        0,
        &[SegmentDesc::input(40)],
        g.as_bytes(),
    );
    assert!(decode_one(&msg).is_err());
    // Host output: in segments of exactly n * element size bytes, possibly several.
    let g = gen_req(10, lib::dist::NORMAL_F64, lib::RAND_TO_HOST);
    let msg = one(
        Opcode::RandGenerate,
        0,
        &[SegmentDesc::input(48), SegmentDesc::input(32)],
        g.as_bytes(),
    );
    assert_eq!(decode_one(&msg).unwrap(), Request::RandGenerate(g));
    let msg = one(
        Opcode::RandGenerate,
        0,
        &[SegmentDesc::input(40)],
        g.as_bytes(),
    );
    assert!(matches!(decode_one(&msg), Err(DecodeError::BadSegments(_))));
    let msg = one(
        Opcode::RandGenerate,
        0,
        &[SegmentDesc::out(80)],
        g.as_bytes(),
    );
    assert!(decode_one(&msg).is_err());
    // Unknown distributions and overflowing lengths are rejected.
    let g = gen_req(10, 77, 0);
    let msg = one(Opcode::RandGenerate, 0, &[], g.as_bytes());
    assert!(decode_one(&msg).is_err());
    let g = gen_req(u64::MAX / 2, lib::dist::BITS64, lib::RAND_TO_HOST);
    let msg = one(Opcode::RandGenerate, 0, &[], g.as_bytes());
    assert!(decode_one(&msg).is_err());
}

#[test]
fn library_opcodes_are_in_their_ranges() {
    for op in Opcode::ALL {
        let v = *op as u32;
        let name = format!("{op:?}");
        if name.starts_with("Blas") {
            assert_eq!(v & 0xff00, 0x1000, "{name}");
        }
        if name.starts_with("Rand") {
            assert_eq!(v & 0xff00, 0x1100, "{name}");
        }
        assert_eq!(Opcode::try_from(v), Ok(*op));
    }
    assert_eq!(
        BlasCallResp::read_from_bytes(&[0; 16]).unwrap().value,
        [0; 16]
    );
}

fn arb_lib_request() -> impl Strategy<Value = (Opcode, Vec<u8>, Vec<SegmentDesc>)> {
    let blas = prop::collection::vec(any::<u8>(), 256).prop_map(|b| {
        let r = BlasCallReq::read_from_bytes(&b).unwrap();
        (Opcode::BlasCall, r.as_bytes().to_vec(), vec![])
    });
    let gen_ = (
        0u64..2048,
        0u32..12,
        0u32..2,
        prop::collection::vec((1u64..4096, prop::bool::ANY), 0..4),
    )
        .prop_map(|(n, dist, flags, segs)| {
            let r = gen_req(n, dist, flags);
            let segs = segs
                .into_iter()
                .map(|(l, inp)| {
                    if inp {
                        SegmentDesc::input(l)
                    } else {
                        SegmentDesc::out(l)
                    }
                })
                .collect();
            (Opcode::RandGenerate, r.as_bytes().to_vec(), segs)
        });
    let small = (
        prop::sample::select(vec![
            Opcode::BlasCreate,
            Opcode::BlasDestroy,
            Opcode::RandCreate,
            Opcode::RandDestroy,
            Opcode::RandSet,
        ]),
        prop::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(|(op, b)| (op, b, vec![]));
    prop_oneof![blas, gen_, small]
}

proptest! {
    #[test]
    fn library_requests_decode_without_panic(
        (op, fixed, segs) in arb_lib_request(),
        flip in prop::option::of((0usize..512, any::<u8>())),
    ) {
        let mut msg = one(op, 0, &segs, &fixed);
        if let Some((i, v)) = flip {
            let i = i % msg.len();
            msg[i] = v;
        }
        if let Ok(h) = decode::decode_message_header(&msg)
            && let Ok(reqs) = split_requests(&h, &msg[32..]) {
                for r in &reqs {
                    if let Ok(Request::RandGenerate(g)) = Request::decode(r) {
                        // Whatever decodes has consistent lengths.
                        let bytes = g.n * lib::dist::elem_size(g.dist).unwrap();
                        if g.flags & lib::RAND_TO_HOST != 0 {
                            prop_assert_eq!(r.in_len, bytes);
                        } else {
                            prop_assert!(r.segments.is_empty());
                        }
                    }
                }
            }
    }

    #[test]
    fn blas_calls_round_trip(bytes in prop::collection::vec(any::<u8>(), 256)) {
        let r = BlasCallReq::read_from_bytes(&bytes).unwrap();
        let msg = one(Opcode::BlasCall, REQ_REPLY_ON_ERROR, &[], r.as_bytes());
        match decode_one(&msg) {
            Ok(Request::BlasCall(d)) => prop_assert_eq!(d.as_bytes(), r.as_bytes()),
            other => prop_assert!(false, "{:?}", other),
        }
    }
}
