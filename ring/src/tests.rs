// SPDX-License-Identifier: Apache-2.0 OR MIT
use super::*;

fn pair() -> (Ring, Ring) {
    let (g, fd) = Mapping::create().unwrap();
    let h = Mapping::attach(&fd).unwrap();
    (Ring::new(g, Side::Guest), Ring::new(h, Side::Host))
}

fn memfd(len: i64, seals: nix::fcntl::SealFlag) -> OwnedFd {
    use nix::sys::memfd::{MFdFlags, memfd_create};
    let fd = memfd_create(c"t", MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING).unwrap();
    nix::unistd::ftruncate(&fd, len).unwrap();
    if !seals.is_empty() {
        nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_ADD_SEALS(seals)).unwrap();
    }
    fd
}

#[test]
fn requests_and_replies_flow_both_ways_across_the_wrap() {
    let (mut g, mut h) = pair();
    let mut buf = vec![0u8; DATA_BYTES];
    // Walk the indices around the areas several times with odd sizes.
    let mut sent = 0u64;
    for round in 0..40u64 {
        let len = (round as usize * 70_001) % DATA_BYTES + 1;
        let msg: Vec<u8> = (0..len).map(|i| (i as u64 + sent) as u8).collect();
        assert_eq!(g.write(&msg).unwrap(), len);
        assert_eq!(h.readable().unwrap(), len);
        assert_eq!(h.read(&mut buf).unwrap(), len);
        assert_eq!(&buf[..len], &msg[..]);
        assert_eq!(h.write(&msg).unwrap(), len);
        assert_eq!(g.read(&mut buf).unwrap(), len);
        assert_eq!(&buf[..len], &msg[..]);
        sent += len as u64;
    }
    assert_eq!(g.out_offset(), sent);
    assert_eq!(h.in_offset(), sent);
}

#[test]
fn a_full_ring_takes_no_more_until_read() {
    let (mut g, mut h) = pair();
    let big = vec![7u8; DATA_BYTES + 100];
    assert_eq!(g.write(&big).unwrap(), DATA_BYTES);
    assert_eq!(g.write(&big).unwrap(), 0);
    assert_eq!(g.writable().unwrap(), 0);
    let mut b = [0u8; 100];
    assert_eq!(h.read(&mut b).unwrap(), 100);
    assert_eq!(g.writable().unwrap(), 100);
    assert_eq!(g.write(&big[..200]).unwrap(), 100);
}

#[test]
fn indices_a_peer_cannot_have_are_errors() {
    let (g, mut h) = pair();
    // The guest claims more request bytes than the ring holds.
    g.scribble(REQ_HEAD, DATA_BYTES as u64 + 1);
    assert!(matches!(h.readable(), Err(RingError::Corrupt { .. })));
    assert!(h.read(&mut [0u8; 8]).is_err());
    // Or moves its reply tail past what the host wrote.
    g.scribble(REQ_HEAD, 0);
    g.scribble(REP_TAIL, 5);
    assert!(matches!(h.writable(), Err(RingError::Corrupt { .. })));
    assert!(h.write(b"x").is_err());
    // Backwards within the ring is only fewer bytes, never outside it.
    g.scribble(REP_TAIL, 0);
    g.scribble(REQ_HEAD, u64::MAX);
    assert!(h.readable().is_err());
}

#[test]
fn only_sealed_long_shmem_files_are_attached() {
    use nix::fcntl::SealFlag;
    assert!(matches!(
        Mapping::attach(&memfd(FILE_BYTES as i64, SealFlag::empty())),
        Err(RingError::Unsuitable(_))
    ));
    assert!(matches!(
        Mapping::attach(&memfd(FILE_BYTES as i64 - 4096, SealFlag::F_SEAL_SHRINK)),
        Err(RingError::Unsuitable(_))
    ));
    assert!(Mapping::attach(&memfd(FILE_BYTES as i64, SealFlag::F_SEAL_SHRINK)).is_ok());
    let (r, w) = nix::unistd::pipe().unwrap();
    drop(w);
    assert!(Mapping::attach(&r).is_err());
    // A file the backend could not seal against writes.
    assert!(matches!(
        Mapping::attach(&memfd(
            FILE_BYTES as i64,
            SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_SEAL
        )),
        Err(RingError::Unsuitable(_))
    ));
}

#[test]
fn an_attached_file_keeps_its_pages() {
    // Issue 38: holes punched in the file after the backend mapped it made the backend
    // create the pages again on its next access, charged to it.
    let (g, fd) = Mapping::create().unwrap();
    let mut g = Ring::new(g, Side::Guest);
    let mut h = Ring::new(Mapping::attach(&fd).unwrap(), Side::Host);
    let len = FILE_BYTES as libc::off_t;
    // SAFETY: plain calls on the test's own descriptor.
    let (punch, write) = unsafe {
        let flags = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        let punch = libc::fallocate(fd.as_raw_fd(), flags, 0, len);
        let punch = (punch, io::Error::last_os_error().raw_os_error());
        let write = libc::pwrite(fd.as_raw_fd(), [1u8].as_ptr().cast(), 1, 4096);
        (punch, (write, io::Error::last_os_error().raw_os_error()))
    };
    assert_eq!(punch, (-1, Some(libc::EPERM)));
    assert_eq!(write, (-1, Some(libc::EPERM)));
    // SAFETY: a new writable shared mapping of the file, unmapped at once if made.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            FILE_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    assert_eq!(p, libc::MAP_FAILED, "a new writable mapping was allowed");
    // Both earlier mappings still work.
    assert_eq!(g.write(b"ping").unwrap(), 4);
    let mut buf = [0u8; 4];
    assert_eq!(h.read(&mut buf).unwrap(), 4);
    assert_eq!(&buf, b"ping");
}

#[test]
fn a_sleeper_is_woken_once() {
    let (g, h) = pair();
    assert!(!g.peer_wants_wake());
    h.sleep_begin();
    assert!(g.peer_wants_wake());
    assert!(!g.peer_wants_wake(), "cleared by the first waker");
    g.sleep_begin();
    g.sleep_end();
    assert!(!h.peer_wants_wake());
}

#[test]
fn notes_parse_across_reads_and_reject_garbage() {
    let mut n = Notes::default();
    let mut out = Vec::new();
    let note = fd_note(0x0102_0304_0506_0708);
    let mut bytes = vec![NOTE_WAKE, NOTE_WAKE];
    bytes.extend_from_slice(&note);
    bytes.push(NOTE_WAKE);
    n.feed(&bytes[..5], &mut out).unwrap();
    assert!(out.is_empty());
    n.feed(&bytes[5..], &mut out).unwrap();
    assert_eq!(out, vec![Note::Fd(0x0102_0304_0506_0708)]);
    assert!(n.feed(&[9], &mut out).is_err());
}

#[test]
fn two_threads_stream_through_a_small_window() {
    let (mut g, mut h) = pair();
    let total = 8 * DATA_BYTES + 12345;
    let t = std::thread::spawn(move || {
        let mut sent = 0usize;
        while sent < total {
            let chunk: Vec<u8> = (sent..(sent + 4099).min(total)).map(|i| i as u8).collect();
            let mut off = 0;
            while off < chunk.len() {
                off += g.write(&chunk[off..]).unwrap();
            }
            sent += chunk.len();
        }
    });
    let mut got = 0usize;
    let mut buf = vec![0u8; 7000];
    while got < total {
        let n = h.read(&mut buf).unwrap();
        for (i, b) in buf[..n].iter().enumerate() {
            assert_eq!(*b, (got + i) as u8);
        }
        got += n;
    }
    t.join().unwrap();
}

proptest::proptest! {
    #[test]
    fn any_chunking_keeps_the_stream(writes in proptest::collection::vec(1usize..300_000, 1..20),
                                     reads in proptest::collection::vec(1usize..300_000, 1..20)) {
        let (mut g, mut h) = pair();
        let mut expect = Vec::new();
        let mut got = Vec::new();
        let mut k = 0u8;
        for (i, w) in writes.iter().enumerate() {
            let data: Vec<u8> = (0..*w).map(|_| { k = k.wrapping_add(1); k }).collect();
            let n = g.write(&data).unwrap();
            expect.extend_from_slice(&data[..n]);
            let mut b = vec![0u8; reads[i % reads.len()]];
            let m = h.read(&mut b).unwrap();
            got.extend_from_slice(&b[..m]);
        }
        let mut b = vec![0u8; DATA_BYTES];
        let m = h.read(&mut b).unwrap();
        got.extend_from_slice(&b[..m]);
        proptest::prop_assert_eq!(got, expect);
    }
}
