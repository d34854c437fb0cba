// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The call ring (`vcuda-ring`) as a hostile client drives it: the backend takes only a
//! sealed file of the right size, serves calls and descriptor notes through it, and closes
//! a session whose client scribbles over the ring's indices or sends garbage on the socket,
//! while it keeps serving everyone else.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use vcuda_protocol::decode::{decode_reply_header, split_records};
use vcuda_protocol::{
    DeviceReq, HELLO_FEATURE_CALL_RING, HELLO_FLAG_CALL_RING, HandleResp, HelloResp, MallocReq,
    MemGetInfoResp, MemcpyDtoHReq, MemcpyHtoDReq, MessageBuilder, PtrResp, ReplyHeader,
    SegmentDesc, ShareMemoryReq, ops, status,
};
use vcuda_ring::{Mapping, Ring, Side};
use zerocopy::FromBytes;

use super::shared::{memfd, send_with_fds};
use super::{Backend, MIB, hello_message, served_again, wait_closed};

/// `Hello` offering `fd` as the call ring: the reply's status and features.
fn hello_with_ring(s: &mut UnixStream, fd: Option<&std::os::fd::OwnedFd>) -> (u32, u64) {
    let fds: Vec<_> = fd.iter().map(|f| f.as_raw_fd()).collect();
    send_with_fds(s, &hello_message(HELLO_FLAG_CALL_RING), &fds);
    let recs = super::read_reply(s).unwrap();
    let features = HelloResp::read_from_prefix(&recs[0].1).map_or(0, |(r, _)| r.features);
    (recs[0].0, features)
}

/// Wakes the backend if it sleeps (as the library does after each write and read).
fn wake(r: &Ring, s: &mut UnixStream) {
    if r.peer_wants_wake() {
        s.write_all(&[vcuda_ring::NOTE_WAKE]).unwrap();
    }
}

/// Writes all of `msg` into the ring, waking the backend whenever it sleeps.
fn ring_send(r: &mut Ring, s: &mut UnixStream, msg: &[u8]) {
    let mut off = 0;
    let start = Instant::now();
    while off < msg.len() {
        off += r.write(&msg[off..]).unwrap();
        wake(r, s);
        assert!(start.elapsed() < Duration::from_secs(10), "ring stays full");
    }
}

/// Reads exactly `buf.len()` reply bytes from the ring (polling, at most 10 s).
fn ring_read_exact(r: &mut Ring, s: &mut UnixStream, buf: &mut [u8]) {
    let start = Instant::now();
    let mut got = 0;
    while got < buf.len() {
        got += r.read(&mut buf[got..]).unwrap();
        wake(r, s);
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no reply in the ring"
        );
    }
}

/// One reply from the ring: each record's status and payload.
fn ring_reply(r: &mut Ring, s: &mut UnixStream) -> Vec<(u32, Vec<u8>)> {
    let mut hdr = [0u8; size_of::<ReplyHeader>()];
    ring_read_exact(r, s, &mut hdr);
    let h = decode_reply_header(&hdr).unwrap();
    let mut ctrl = vec![0u8; h.ctrl_len as usize];
    ring_read_exact(r, s, &mut ctrl);
    let recs = split_records(&h, &ctrl).unwrap();
    let mut rest = vec![0u8; h.in_len as usize];
    ring_read_exact(r, s, &mut rest);
    recs.iter()
        .map(|r| (r.header.status, r.payload.to_vec()))
        .collect()
}

/// A session on the call ring.
fn ring_session(b: &Backend) -> (UnixStream, Ring) {
    let mut s = b.connect();
    let (map, fd) = Mapping::create().unwrap();
    let (st, features) = hello_with_ring(&mut s, Some(&fd));
    assert_eq!(st, status::SUCCESS);
    assert_ne!(features & HELLO_FEATURE_CALL_RING, 0, "{}", b.log());
    (s, Ring::new(map, Side::Guest))
}

fn mem_get_info(r: &mut Ring, s: &mut UnixStream) -> MemGetInfoResp {
    let mut m = MessageBuilder::new();
    m.push_op::<ops::MemGetInfo>(0, 7, &[], &DeviceReq::default(), &[]);
    ring_send(r, s, m.finish(0));
    let recs = ring_reply(r, s);
    assert_eq!(recs[0].0, status::SUCCESS);
    MemGetInfoResp::read_from_prefix(&recs[0].1).unwrap().0
}

#[test]
fn calls_and_descriptors_go_through_the_ring() {
    let b = Backend::start(&[]);
    let (mut s, mut r) = ring_session(&b);
    assert!(mem_get_info(&mut r, &mut s).total > 0);

    // A descriptor travels on the socket with a note naming its message's offset.
    let region = memfd(MIB, libc::F_SEAL_SHRINK, MIB as usize);
    let note = vcuda_ring::fd_note(r.out_offset());
    send_with_fds(&mut s, &note, &[region.as_raw_fd()]);
    r.note_sent();
    let mut m = MessageBuilder::new();
    let req = ShareMemoryReq {
        len: MIB,
        flags: 0,
        reserved: 0,
    };
    m.push_op::<ops::ShareMemory>(0, 8, &[], &req, &[]);
    ring_send(&mut r, &mut s, m.finish(0));
    let recs = ring_reply(&mut r, &mut s);
    assert_eq!(recs[0].0, status::SUCCESS, "{}", b.log());
    assert_ne!(
        HandleResp::read_from_prefix(&recs[0].1).unwrap().0.handle,
        0
    );

    // Data larger than the ring streams through it, both ways.
    let len = 3 * MIB;
    let mut m = MessageBuilder::new();
    let req = MallocReq {
        device: 0,
        flags: 0,
        size: len,
    };
    m.push_op::<ops::Malloc>(0, 9, &[], &req, &[]);
    ring_send(&mut r, &mut s, m.finish(0));
    let recs = ring_reply(&mut r, &mut s);
    let ptr = PtrResp::read_from_prefix(&recs[0].1).unwrap().0.ptr;
    let data: Vec<u8> = (0..len).map(|i| (i * 7 + i / 4096) as u8).collect();
    let mut m = MessageBuilder::new();
    let h2d = MemcpyHtoDReq {
        dst: ptr,
        dpitch: 0,
        width: len,
        height: 1,
        stream: 0,
        flags: 0,
        reserved: 0,
    };
    m.push_op::<ops::MemcpyHtoD>(0, 10, &[SegmentDesc::out(len)], &h2d, &[]);
    let d2h = MemcpyDtoHReq {
        src: ptr,
        spitch: 0,
        width: len,
        height: 1,
        stream: 0,
        flags: 0,
        reserved: 0,
    };
    m.push_op::<ops::MemcpyDtoH>(0, 11, &[SegmentDesc::input(len)], &d2h, &[]);
    let mut msg = m.finish(0).to_vec();
    msg.extend_from_slice(&data);
    ring_send(&mut r, &mut s, &msg);
    let mut hdr = [0u8; size_of::<ReplyHeader>()];
    ring_read_exact(&mut r, &mut s, &mut hdr);
    let h = decode_reply_header(&hdr).unwrap();
    let mut ctrl = vec![0u8; h.ctrl_len as usize];
    ring_read_exact(&mut r, &mut s, &mut ctrl);
    let recs = split_records(&h, &ctrl).unwrap();
    assert!(recs.iter().all(|r| r.header.status == status::SUCCESS));
    assert_eq!(h.in_len, len);
    let mut back = vec![0u8; len as usize];
    ring_read_exact(&mut r, &mut s, &mut back);
    assert!(back == data, "the data came back changed");
}

#[test]
fn a_scribbled_ring_closes_only_its_session() {
    let b = Backend::start(&[]);
    let (mut s, mut r) = ring_session(&b);
    mem_get_info(&mut r, &mut s);
    // More request bytes than the ring can hold.
    r.scribble(0x40, u64::MAX / 3);
    s.write_all(&[vcuda_ring::NOTE_WAKE]).unwrap();
    wait_closed(&mut s, Duration::from_secs(10));
    served_again(&b);

    // A reply tail ahead of what the backend wrote.
    let (mut s, mut r) = ring_session(&b);
    mem_get_info(&mut r, &mut s);
    r.scribble(0x100, 1 << 40);
    let mut m = MessageBuilder::new();
    m.push_op::<ops::MemGetInfo>(0, 9, &[], &DeviceReq::default(), &[]);
    ring_send(&mut r, &mut s, m.finish(0));
    wait_closed(&mut s, Duration::from_secs(10));

    // A byte on the socket that is no note.
    let (mut s, mut r) = ring_session(&b);
    mem_get_info(&mut r, &mut s);
    s.write_all(&[0x55]).unwrap();
    wait_closed(&mut s, Duration::from_secs(10));
    served_again(&b);
    assert!(
        b.log().contains("corrupted the call ring"),
        "the backend says why: {}",
        b.log()
    );
}

#[test]
fn unsuitable_ring_files_are_refused_and_the_socket_serves() {
    let b = Backend::start(&[]);
    for fd in [
        None,
        Some(memfd(vcuda_ring::FILE_BYTES as u64, 0, 0)),
        Some(memfd(4096, libc::F_SEAL_SHRINK, 0)),
    ] {
        let mut s = b.connect();
        let (st, features) = hello_with_ring(&mut s, fd.as_ref());
        assert_eq!(st, status::SUCCESS);
        assert_eq!(features & HELLO_FEATURE_CALL_RING, 0);
        // The session stays on the socket.
        let (free, total) = super::mem_info(&mut s);
        assert!(free <= total && total > 0);
        let mut buf = [0u8; 1];
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        assert!(s.read(&mut buf).is_err(), "nothing more on the socket");
    }
}
