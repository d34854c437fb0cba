// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The PTX compiler (issue 38, finding 1): a kernel costly to compile, within the compile
//! budget, is charged to the session while its compile runs; a session without the memory
//! for it runs the kernel interpreted instead, with the same result.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

use vcuda_protocol::decode::{decode_reply_header, split_records};
use vcuda_protocol::{
    FunctionGetReq, FunctionGetResp, LaunchReq, MODULE_HAS_DATA, MallocReq, MemcpyDtoHReq,
    MessageBuilder, ModuleLoadReq, ModuleLoadResp, PtrResp, ReplyHeader, SegmentDesc, ops, status,
};
use zerocopy::FromBytes;

use super::{Backend, MIB, hello};

/// Sends `msg` and reads its reply: each record's status and payload, and the in-data.
fn call(s: &mut UnixStream, msg: &[u8]) -> (Vec<(u32, Vec<u8>)>, Vec<u8>) {
    s.write_all(msg).unwrap();
    let mut hdr = [0u8; size_of::<ReplyHeader>()];
    s.read_exact(&mut hdr).unwrap();
    let h = decode_reply_header(&hdr).unwrap();
    let mut ctrl = vec![0u8; h.ctrl_len as usize];
    s.read_exact(&mut ctrl).unwrap();
    let recs = split_records(&h, &ctrl).unwrap();
    let mut data = vec![0u8; h.in_len as usize];
    s.read_exact(&mut data).unwrap();
    let recs = recs
        .iter()
        .map(|r| (r.header.status, r.payload.to_vec()))
        .collect();
    (recs, data)
}

/// Loads `ptx`, launches its kernel `k(out)` on one thread and reads back the word it
/// stores: the word.
fn run_kernel(s: &mut UnixStream, ptx: &str) -> u32 {
    let mut m = MessageBuilder::new();
    let malloc = MallocReq {
        device: 0,
        flags: 0,
        size: 4,
    };
    m.push_op::<ops::Malloc>(0, 1, &[], &malloc, &[]);
    let (r, _) = call(s, m.finish(0));
    let ptr = PtrResp::read_from_prefix(&r[0].1).unwrap().0.ptr;

    let image = vcuda_fatbin::ptx_fatbin(&[ptx.as_bytes()], 50);
    let load = ModuleLoadReq {
        hash: {
            use sha2::{Digest, Sha256};
            Sha256::digest(&image).into()
        },
        size: image.len() as u64,
        flags: MODULE_HAS_DATA,
        reserved: 0,
    };
    let mut m = MessageBuilder::new();
    let seg = [SegmentDesc::out(image.len() as u64)];
    m.push_op::<ops::ModuleLoad>(0, 2, &seg, &load, &[]);
    let mut msg = m.finish(0).to_vec();
    msg.extend_from_slice(&image);
    let (r, _) = call(s, &msg);
    assert_eq!(r[0].0, status::SUCCESS);
    let module = ModuleLoadResp::read_from_prefix(&r[0].1).unwrap().0.handle;

    let mut m = MessageBuilder::new();
    m.push_op::<ops::FunctionGet>(0, 3, &[], &FunctionGetReq { module }, b"k");
    let (r, _) = call(s, m.finish(0));
    assert_eq!(r[0].0, status::SUCCESS);
    let function = FunctionGetResp::read_from_prefix(&r[0].1).unwrap().0.handle;

    let mut m = MessageBuilder::new();
    let launch = LaunchReq {
        function,
        grid: [1, 1, 1],
        block: [1, 1, 1],
        param_len: 8,
        ..Default::default()
    };
    m.push_op::<ops::Launch>(0, 4, &[], &launch, &ptr.to_le_bytes());
    let copy = MemcpyDtoHReq {
        src: ptr,
        width: 4,
        height: 1,
        ..Default::default()
    };
    m.push_op::<ops::MemcpyDtoH>(0, 5, &[SegmentDesc::input(4)], &copy, &[]);
    let (r, data) = call(s, m.finish(0));
    let statuses: Vec<u32> = r.iter().map(|r| r.0).collect();
    assert_eq!(statuses, [status::SUCCESS; 2]);
    u32::from_le_bytes(data[..4].try_into().unwrap())
}

/// The backend's peak resident memory so far (`VmHWM`).
fn peak(b: &Backend) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{}/status", b.child.id())).unwrap();
    let kib: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib * 1024
}

#[test]
fn a_compile_is_charged_to_its_session() {
    // 200 registers live across 100 if/else diamonds: within the compile budget, about a
    // second and a few hundred MB to compile, milliseconds to interpret.
    let (ptx, want) = vcuda_ptx::testing::live_across_diamonds(200, 100);
    let mut grew = Vec::new();
    for (limit, compiles) in [("64M", false), ("1G", true)] {
        let b = Backend::start(&["--cpu-memory", "2G", "--session-mem-limit", limit]);
        let mut s = b.connect();
        assert_eq!(hello(&mut s).unwrap(), status::SUCCESS);
        let before = peak(&b);
        assert_eq!(run_kernel(&mut s, &ptx), want, "the kernel's sum");
        grew.push(peak(&b).saturating_sub(before));
        let log = b.log();
        let refused = log.contains("does not fit in the memory left");
        assert_eq!(refused, !compiles, "session limit {limit}:\n{log}");
        assert_eq!(log.contains("runs interpreted"), !compiles, "{log}");
    }
    eprintln!(
        "a kernel costly to compile: with a 64 MiB session limit its compile was refused and \
         it ran interpreted (backend peak grew {} MiB); with 1 GiB it compiled (grew {} MiB)",
        grew[0] / MIB,
        grew[1] / MIB
    );
    assert!(grew[0] < grew[1], "{grew:?}");
}
