// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Memory shared over the Unix socket (`ShareMemory`, `SCM_RIGHTS`): the backend checks
//! every descriptor and region a client names, closes the descriptors no request takes,
//! and unmaps a session's regions when it ends.

use std::io::{IoSlice, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use nix::sys::memfd::{MFdFlags, memfd_create};
use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
use vcuda_protocol::{
    HandleReq, HandleResp, MallocReq, MapHostMemoryReq, MemcpyHtoDSharedReq, MemsetReq,
    MessageBuilder, PtrReq, PtrResp, ShareMemoryReq, ops, status,
};
use zerocopy::FromBytes;

use super::{Backend, MIB, hello, read_reply};

/// Sends `msg` with `fds` attached to its first byte.
pub(super) fn send_with_fds(s: &mut UnixStream, msg: &[u8], fds: &[RawFd]) {
    let iov = [IoSlice::new(msg)];
    let cmsg = [ControlMessage::ScmRights(fds)];
    let cmsgs: &[ControlMessage<'_>] = if fds.is_empty() { &[] } else { &cmsg };
    let n = sendmsg::<()>(s.as_raw_fd(), &iov, cmsgs, MsgFlags::empty(), None).unwrap();
    s.write_all(&msg[n..]).unwrap();
}

/// A memfd of `len` bytes with `seals`, its first `touched` bytes written.
pub(super) fn memfd(len: u64, seals: i32, touched: usize) -> OwnedFd {
    let fd = memfd_create(
        "vcuda-hostile",
        MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING,
    )
    .unwrap();
    nix::unistd::ftruncate(&fd, len as i64).unwrap();
    nix::unistd::write(&fd, &vec![9u8; touched]).unwrap();
    if seals != 0 {
        let seals = nix::fcntl::SealFlag::from_bits_truncate(seals);
        nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_ADD_SEALS(seals)).unwrap();
    }
    fd
}

/// `ShareMemory` of `len` bytes with `fds` beside it: the status and handle.
fn share(s: &mut UnixStream, len: u64, fds: &[RawFd]) -> (u32, u64) {
    let mut b = MessageBuilder::new();
    let req = ShareMemoryReq {
        len,
        flags: 0,
        reserved: 0,
    };
    b.push_op::<ops::ShareMemory>(0, 2, &[], &req, &[]);
    send_with_fds(s, b.finish(0), fds);
    let r = read_reply(s).unwrap();
    let handle = HandleResp::read_from_prefix(&r[0].1).map_or(0, |(h, _)| h.handle);
    (r[0].0, handle)
}

/// A host-to-device copy of `len` bytes at `offset` of `region` into `dst`: its status.
fn copy_in(s: &mut UnixStream, dst: u64, region: u64, offset: u64, len: u64) -> u32 {
    let mut b = MessageBuilder::new();
    let req = MemcpyHtoDSharedReq {
        dst,
        dpitch: 0,
        width: len,
        height: 1,
        stream: 0,
        flags: 0,
        reserved: 0,
        region,
        offset,
    };
    b.push_op::<ops::MemcpyHtoDShared>(0, 3, &[], &req, &[]);
    s.write_all(b.finish(0)).unwrap();
    read_reply(s).unwrap()[0].0
}

fn malloc(s: &mut UnixStream, size: u64) -> u64 {
    let mut b = MessageBuilder::new();
    let req = MallocReq {
        device: 0,
        flags: 0,
        size,
    };
    b.push_op::<ops::Malloc>(0, 4, &[], &req, &[]);
    s.write_all(b.finish(0)).unwrap();
    let r = read_reply(s).unwrap();
    assert_eq!(r[0].0, status::SUCCESS);
    PtrResp::read_from_prefix(&r[0].1).unwrap().0.ptr
}

/// A 16-byte `Malloc` (which takes no descriptor) with `fds` beside it: its status.
fn malloc_with_fds(s: &mut UnixStream, fds: &[RawFd]) -> u32 {
    let mut m = MessageBuilder::new();
    let req = MallocReq {
        device: 0,
        flags: 0,
        size: 16,
    };
    m.push_op::<ops::Malloc>(0, 5, &[], &req, &[]);
    send_with_fds(s, m.finish(0), fds);
    read_reply(s).unwrap()[0].0
}

/// How many descriptors the backend holds open.
fn open_fds(b: &Backend) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", b.child.id()))
        .unwrap()
        .count()
}

/// The backend's descriptor count once it settles at `want` (other threads may hold a
/// descriptor for a moment: a session ending, a file read), or what it is after 5 s.
fn settled_fds(b: &Backend, want: usize) -> usize {
    let t = std::time::Instant::now();
    loop {
        let n = open_fds(b);
        if n == want || t.elapsed() > std::time::Duration::from_secs(5) {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// How many of the backend's mappings are of our memfds.
fn shared_mappings(b: &Backend) -> usize {
    std::fs::read_to_string(format!("/proc/{}/maps", b.child.id()))
        .unwrap()
        .lines()
        .filter(|l| l.contains("memfd:vcuda-hostile"))
        .count()
}

#[test]
fn shared_memory_is_checked_and_released() {
    let b = Backend::start(&[]);
    let idle_fds = open_fds(&b);
    let mut s = b.connect();
    assert_eq!(hello(&mut s).unwrap(), status::SUCCESS);
    // Once the new session's thread has settled.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let fds_before = open_fds(&b);
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;

    // Descriptors and lengths the backend must refuse.
    assert_eq!(share(&mut s, 4096, &[]).0, status::INVALID_VALUE, "no file");
    let unsealed = memfd(4096, 0, 4096);
    assert_eq!(
        share(&mut s, 4096, &[unsealed.as_raw_fd()]).0,
        status::INVALID_VALUE,
        "a file that can shrink under the backend"
    );
    let short = memfd(4096, seals, 4096);
    assert_eq!(
        share(&mut s, 1 << 30, &[short.as_raw_fd()]).0,
        status::INVALID_VALUE,
        "a region longer than its file"
    );
    let (sock, _peer) = UnixStream::pair().unwrap();
    assert_eq!(
        share(&mut s, 4096, &[sock.as_raw_fd()]).0,
        status::INVALID_VALUE,
        "a socket"
    );
    // Many descriptors with one request: the backend keeps none of them.
    let many: Vec<OwnedFd> = (0..64).map(|_| memfd(4096, seals, 0)).collect();
    let raw: Vec<RawFd> = many.iter().map(AsRawFd::as_raw_fd).collect();
    assert_eq!(malloc_with_fds(&mut s, &raw), status::SUCCESS);
    assert_eq!(
        settled_fds(&b, fds_before),
        fds_before,
        "the backend kept descriptors it did not take"
    );

    // A good region of three pages, only the first written by the client.
    let good = memfd(3 * 4096, seals, 4096);
    let (st, region) = share(&mut s, 3 * 4096, &[good.as_raw_fd()]);
    assert_eq!(st, status::SUCCESS);
    assert_eq!(
        settled_fds(&b, fds_before),
        fds_before,
        "a mapped file stays open"
    );
    assert_eq!(shared_mappings(&b), 1);
    let dev = malloc(&mut s, 3 * 4096);
    assert_eq!(copy_in(&mut s, dev, region, 0, 4096), status::SUCCESS);
    assert_eq!(
        copy_in(&mut s, dev, region, 0, 4097),
        status::INVALID_VALUE,
        "a page the client never populated"
    );
    assert_eq!(
        copy_in(&mut s, dev, region, 3 * 4096 - 1, 2),
        status::INVALID_VALUE,
        "past the region's end"
    );
    assert_eq!(
        copy_in(&mut s, dev, region, u64::MAX, 2),
        status::INVALID_VALUE
    );
    assert_eq!(
        copy_in(&mut s, dev, region + 1, 0, 1),
        status::INVALID_VALUE,
        "a region the session does not have"
    );

    // Unsharing, and the end of the session, unmap.
    let mut u = MessageBuilder::new();
    u.push_op::<ops::UnshareMemory>(0, 6, &[], &HandleReq { handle: region }, &[]);
    s.write_all(u.finish(0)).unwrap();
    assert_eq!(read_reply(&mut s).unwrap()[0].0, status::SUCCESS);
    assert_eq!(shared_mappings(&b), 0);
    assert_eq!(
        copy_in(&mut s, dev, region, 0, 1),
        status::INVALID_VALUE,
        "an unshared region"
    );
    let again = memfd(4096, seals, 4096);
    assert_eq!(share(&mut s, 4096, &[again.as_raw_fd()]).0, status::SUCCESS);
    assert_eq!(shared_mappings(&b), 1);
    drop(s);
    let start = std::time::Instant::now();
    // The session's regions are unmapped, and the backend holds what it held idle.
    while shared_mappings(&b) != 0 || open_fds(&b) > idle_fds {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "the session's regions or descriptors outlived it: {} mappings, {} descriptors \
             (had {idle_fds} idle)",
            shared_mappings(&b),
            open_fds(&b)
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// `MapHostMemory`: `len` bytes at `offset` of `region` at device address `addr`.
fn map(s: &mut UnixStream, region: u64, offset: u64, len: u64, addr: u64) -> u32 {
    let mut b = MessageBuilder::new();
    let req = MapHostMemoryReq {
        region,
        offset,
        len,
        addr,
    };
    b.push_op::<ops::MapHostMemory>(0, 7, &[], &req, &[]);
    s.write_all(b.finish(0)).unwrap();
    read_reply(s).unwrap()[0].0
}

/// `UnmapHostMemory` of the range at `addr`.
fn unmap(s: &mut UnixStream, addr: u64) -> u32 {
    let mut b = MessageBuilder::new();
    b.push_op::<ops::UnmapHostMemory>(0, 8, &[], &PtrReq { ptr: addr }, &[]);
    s.write_all(b.finish(0)).unwrap();
    read_reply(s).unwrap()[0].0
}

/// A device-side memset of `len` bytes at `dst` to `value`: its status.
fn memset(s: &mut UnixStream, dst: u64, len: u64, value: u32) -> u32 {
    let mut b = MessageBuilder::new();
    let req = MemsetReq {
        dst,
        pitch: len,
        width: len,
        height: 1,
        stream: 0,
        value,
        elem_size: 1,
        flags: 0,
    };
    b.push_op::<ops::Memset>(0, 9, &[], &req, &[]);
    s.write_all(b.finish(0)).unwrap();
    read_reply(s).unwrap()[0].0
}

/// The first byte of page `page` of a memfd, as the client sees it.
fn byte_at(fd: &OwnedFd, page: i64) -> u8 {
    let mut b = [0u8; 1];
    nix::sys::uio::pread(fd, &mut b, page * 4096).unwrap();
    b[0]
}

#[test]
fn mapped_host_memory_is_checked_and_released() {
    let b = Backend::start(&[]);
    let mut s = b.connect();
    assert_eq!(hello(&mut s).unwrap(), status::SUCCESS);
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
    // Three pages, the first two written by the client.
    let fd = memfd(3 * 4096, seals, 2 * 4096);
    let (st, region) = share(&mut s, 3 * 4096, &[fd.as_raw_fd()]);
    assert_eq!(st, status::SUCCESS);
    let dev = malloc(&mut s, 4096);
    // Outside the default device range, the PTX windows and user space's end.
    let at: u64 = 0x6000_0000_0000;
    assert_eq!(map(&mut s, region, 0, 4096, at), status::SUCCESS);

    // The backend writes the client's memory in place through the device address.
    assert_eq!(memset(&mut s, at + 1, 4095, 7), status::SUCCESS);
    assert_eq!(byte_at(&fd, 0), 9);
    let mut page = [0u8; 4096];
    nix::sys::uio::pread(&fd, &mut page, 0).unwrap();
    assert!(page[1..].iter().all(|&v| v == 7));
    assert_eq!(
        memset(&mut s, at + 4095, 2, 7),
        status::INVALID_VALUE,
        "past the mapped range"
    );

    let bad = status::INVALID_VALUE;
    let cases: [(&str, u64, u64, u64, u64); 12] = [
        ("overlaps a mapped range", region, 4096, 4096, at + 2048),
        ("overlaps it from below", region, 4096, 4096, at - 2048),
        ("the same address again", region, 4096, 4096, at),
        ("a device allocation", region, 4096, 4096, dev),
        (
            "the device heap's range",
            region,
            4096,
            4096,
            0x7f00_0000_0000,
        ),
        (
            "the shared-memory window",
            region,
            4096,
            4096,
            0x1000_0000_1000,
        ),
        ("the parameter window", region, 4096, 4096, 0x3000_0000_0000),
        (
            "beyond user space",
            region,
            4096,
            4096,
            0xffff_0000_0000_0000,
        ),
        ("an unknown region", region + 1, 0, 4096, at + 0x10000),
        (
            "past the region's end",
            region,
            2 * 4096,
            2 * 4096,
            at + 0x10000,
        ),
        (
            "a page never populated",
            region,
            2 * 4096,
            4096,
            at + 0x10000,
        ),
        (
            "an offset that overflows",
            region,
            u64::MAX,
            2,
            at + 0x10000,
        ),
    ];
    for (what, r, off, len, addr) in cases {
        assert_eq!(map(&mut s, r, off, len, addr), bad, "{what}");
    }
    assert_eq!(map(&mut s, region, 4096, 0, at + 0x10000), bad, "empty");
    assert_eq!(map(&mut s, region, 4096, 4096, 0), bad, "null");
    assert_eq!(byte_at(&fd, 1), 9, "refused mappings wrote nothing");

    // Unmapping: unknown addresses are refused; an unmapped range is no longer reachable.
    assert_eq!(unmap(&mut s, at + 1), bad, "not the start of a range");
    assert_eq!(unmap(&mut s, at), status::SUCCESS);
    assert_eq!(unmap(&mut s, at), bad, "twice");
    assert_eq!(memset(&mut s, at, 1, 1), bad, "an unmapped range");

    // Unsharing a region removes its mapped ranges first.
    assert_eq!(map(&mut s, region, 4096, 4096, at), status::SUCCESS);
    let mut u = MessageBuilder::new();
    u.push_op::<ops::UnshareMemory>(0, 6, &[], &HandleReq { handle: region }, &[]);
    s.write_all(u.finish(0)).unwrap();
    assert_eq!(read_reply(&mut s).unwrap()[0].0, status::SUCCESS);
    assert_eq!(shared_mappings(&b), 0);
    assert_eq!(
        memset(&mut s, at, 1, 1),
        bad,
        "a range of an unshared region"
    );
    assert_eq!(unmap(&mut s, at), bad);
}

/// The backend reads ahead (a read may hold the end of one message and the start of the
/// next), so descriptors go to the message holding the last byte of the read they came
/// with: a `ShareMemory` right behind posted messages gets its descriptor, and descriptors
/// sent along with an earlier message never reach a later `ShareMemory`.
#[test]
fn descriptors_reach_the_message_they_came_with() {
    let b = Backend::start(&[]);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let idle_fds = open_fds(&b);
    let mut s = b.connect();
    assert_eq!(hello(&mut s).unwrap(), status::SUCCESS);
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
    let dev = malloc(&mut s, 4096);

    // Posted memsets, then at once a ShareMemory with its descriptor: the backend may read
    // them together; the region is shared.
    let mut posted = MessageBuilder::new();
    for i in 0..8u64 {
        let req = MemsetReq {
            dst: dev,
            pitch: 4096,
            width: 4096,
            height: 1,
            stream: 0,
            value: 1,
            elem_size: 1,
            flags: 0,
        };
        posted.push_op::<ops::Memset>(vcuda_protocol::REQ_REPLY_ON_ERROR, 100 + i, &[], &req, &[]);
    }
    let mut m = MessageBuilder::new();
    let req = ShareMemoryReq {
        len: 4096,
        flags: 0,
        reserved: 0,
    };
    m.push_op::<ops::ShareMemory>(0, 2, &[], &req, &[]);
    // As the library sends them: the posted message, then the ShareMemory with its
    // descriptor, back to back (likely one read for the backend).
    let first = memfd(4096, seals, 4096);
    s.write_all(posted.finish(vcuda_protocol::MSG_NO_WAIT))
        .unwrap();
    send_with_fds(&mut s, m.finish(0), &[first.as_raw_fd()]);
    let r = read_reply(&mut s).unwrap();
    assert_eq!(r[0].0, status::SUCCESS, "{}", b.log());
    let good = memfd(4096, seals, 4096);
    let mut both = posted.finish(vcuda_protocol::MSG_NO_WAIT).to_vec();
    both.extend_from_slice(m.finish(0));
    // One write: the descriptor comes with the posted message's first byte, in the same
    // read as the ShareMemory, whose last byte ends the read.
    send_with_fds(&mut s, &both, &[good.as_raw_fd()]);
    let r = read_reply(&mut s).unwrap();
    assert_eq!(r[0].0, status::SUCCESS, "{}", b.log());
    let region = HandleResp::read_from_prefix(&r[0].1).unwrap().0.handle;
    assert_eq!(copy_in(&mut s, dev, region, 0, 4096), status::SUCCESS);

    // A descriptor sent with a Malloc (which takes none), then a ShareMemory without one:
    // refused, and the stray descriptor is closed.
    let stray = memfd(4096, seals, 4096);
    assert_eq!(
        malloc_with_fds(&mut s, &[stray.as_raw_fd()]),
        status::SUCCESS
    );
    assert_eq!(share(&mut s, 4096, &[]).0, status::INVALID_VALUE);
    drop(s);
    assert_eq!(
        settled_fds(&b, idle_fds),
        idle_fds,
        "the backend kept a descriptor after the session"
    );
}

/// The backend's CPU time (user + system), in clock ticks.
fn cpu_ticks(b: &Backend) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", b.child.id())).unwrap();
    let rest = stat.rsplit_once(')').unwrap().1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the command: state is field 3, utime 14 and stime 15 (1-based, whole line).
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn a_copy_naming_a_huge_unpopulated_range_costs_what_was_populated() {
    // Issue 38, finding 5: one copy naming 1 TiB of a sparse region made the backend ask
    // `mincore` about all of it at once (a 256 MiB vector, 12 s of CPU) before failing.
    let b = Backend::start(&[]);
    let mut s = b.connect();
    assert_eq!(hello(&mut s).unwrap(), status::SUCCESS);
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
    let len = 1u64 << 40;
    let sparse = memfd(len, seals, 4096);
    let (st, region) = share(&mut s, len, &[sparse.as_raw_fd()]);
    assert_eq!(st, status::SUCCESS);
    let dev = malloc(&mut s, 4096);
    let (rss, ticks) = (b.rss(), cpu_ticks(&b));
    // Four at once, as in the finding; each fails at the second page.
    for _ in 0..4 {
        assert_eq!(copy_in(&mut s, dev, region, 0, len), status::INVALID_VALUE);
    }
    let (grew, spent) = (b.rss().saturating_sub(rss), cpu_ticks(&b) - ticks);
    eprintln!(
        "4 copies naming 1 TiB with one page populated: refused; backend grew {} KiB, \
         used {spent} clock ticks of CPU",
        grew / 1024
    );
    assert!(
        grew < 16 * MIB,
        "the check's buffers grew the backend by {grew} bytes"
    );
    // A page each of the check is what a populated guest page costs the guest itself;
    // none of the 2^28 pages named but never written is looked at.
    assert!(spent < 100, "{spent} ticks");
}

/// The bytes of a file that are backed by pages.
fn allocated(fd: &OwnedFd) -> u64 {
    nix::sys::stat::fstat(fd).unwrap().st_blocks as u64 * 512
}

#[test]
fn holes_cannot_be_punched_in_shared_memory() {
    // Issue 38, finding 4: a client punched holes in its file after the population check,
    // during shared copies; the backend's copies created the pages again, charged to the
    // backend and held by its mapping (after 4 rounds ~1 GB, the client none).
    let b = Backend::start(&[]);
    let mut s = b.connect();
    assert_eq!(hello(&mut s).unwrap(), status::SUCCESS);
    let len = 64 * MIB;
    let fd = memfd(len, libc::F_SEAL_SHRINK | libc::F_SEAL_GROW, len as usize);
    // A writable mapping of the client's own, made before sharing (it stays writable).
    // SAFETY: a new shared mapping of the test's memfd, unmapped below.
    let view = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    assert_ne!(view, libc::MAP_FAILED);
    let (st, region) = share(&mut s, len, &[fd.as_raw_fd()]);
    assert_eq!(st, status::SUCCESS);
    let dev = malloc(&mut s, len);
    let before = allocated(&fd);
    let mut refused = 0;
    for round in 0..4u8 {
        let errno = || std::io::Error::last_os_error().raw_os_error();
        // SAFETY: plain calls on the test's own descriptor and mapping.
        let (punch, remove) = unsafe {
            let flags = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
            let punch = (
                libc::fallocate(fd.as_raw_fd(), flags, 0, len as i64),
                errno(),
            );
            let remove = (
                libc::madvise(view, len as usize, libc::MADV_REMOVE),
                errno(),
            );
            (punch, remove)
        };
        assert_eq!(
            punch,
            (-1, Some(libc::EPERM)),
            "round {round}: hole punched"
        );
        assert_eq!(
            remove,
            (-1, Some(libc::EPERM)),
            "round {round}: MADV_REMOVE"
        );
        refused += 2;
        // The client still writes through its own mapping; the backend copies it.
        // SAFETY: inside the test's live mapping.
        unsafe { view.cast::<u8>().add(4096).write_volatile(round) };
        assert_eq!(copy_in(&mut s, dev, region, 0, len), status::SUCCESS);
    }
    let after = allocated(&fd);
    eprintln!(
        "4 rounds of punching holes in a shared 64 MiB file during copies: {refused} of \
         {refused} refused (EPERM); the file held {} MiB before and {} MiB after, all of it \
         populated by the client",
        before / MIB,
        after / MIB
    );
    assert_eq!(before, len);
    assert_eq!(after, len);
    // A new writable mapping, or writing the file, is refused too.
    assert!(nix::unistd::write(&fd, b"x").is_err());
    // SAFETY: the test's mapping, made above.
    unsafe { libc::munmap(view, len as usize) };
    // A file the backend cannot seal (the client sealed it against sealing) is refused.
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
    let locked = memfd(4096, seals, 4096);
    let (st, _) = share(&mut s, 4096, &[locked.as_raw_fd()]);
    assert_eq!(st, status::INVALID_VALUE);
}
