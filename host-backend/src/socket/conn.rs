// SPDX-License-Identifier: Apache-2.0 OR MIT
//! [`Conn`]: a connected stream (Unix, TCP, or TLS over TCP) the server can time out, close
//! from another thread, and read file descriptors from (`SCM_RIGHTS` on a Unix socket).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use log::debug;

use super::limits::Closer;

/// A connected stream the server can time out and close from another thread.
pub trait Conn: Read + Write + Send + AsFd + 'static {
    /// `set_read_timeout` of the socket.
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()>;
    /// `set_write_timeout` of the socket.
    fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()>;
    /// A handle that shuts the connection down.
    fn closer(&self) -> io::Result<Closer>;
    /// Whether file descriptors can come with messages (a Unix socket).
    fn passes_fds(&self) -> bool {
        false
    }
    /// Reads like `read`, adding the file descriptors that came with the bytes (at most
    /// [`MAX_FDS_PER_READ`]; the kernel closes any beyond) to `fds`.
    fn read_with_fds(&mut self, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> io::Result<usize> {
        let _ = fds;
        self.read(buf)
    }
    /// Like [`Conn::read_with_fds`] without waiting (`WouldBlock` when nothing is there),
    /// or `None` where the stream cannot (TLS: the caller peeks at the socket instead).
    fn try_read_with_fds(
        &mut self,
        buf: &mut [u8],
        fds: &mut Vec<OwnedFd>,
    ) -> Option<io::Result<usize>> {
        let _ = (buf, fds);
        None
    }
}

/// Most file descriptors taken from one read.
pub const MAX_FDS_PER_READ: usize = 4;

/// `recvmsg` on a Unix stream, keeping the `SCM_RIGHTS` descriptors that came along.
///
/// There is room for [`MAX_FDS_PER_READ`]; the kernel closes any beyond (and says so with
/// `MSG_CTRUNC`, which is why this reads the control area itself: nix refuses to walk a
/// truncated one, and the descriptors that did arrive must still be owned and closed).
fn recv_with_fds(
    s: &UnixStream,
    buf: &mut [u8],
    fds: &mut Vec<OwnedFd>,
    flags: libc::c_int,
) -> io::Result<usize> {
    use std::os::fd::{AsRawFd, FromRawFd};

    const FD_BYTES: u32 = (MAX_FDS_PER_READ * size_of::<libc::c_int>()) as u32;
    // u64s keep the control area aligned for `cmsghdr`.
    let mut space = [0u64; 16];
    // SAFETY: CMSG_SPACE only computes a size.
    let space_len = unsafe { libc::CMSG_SPACE(FD_BYTES) } as usize;
    debug_assert!(space_len <= size_of_val(&space));
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: an all-zero msghdr is valid (no name, no buffers); the fields are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space.as_mut_ptr().cast();
    msg.msg_controllen = space_len as _;
    // SAFETY: `msg` points at `buf` (through `iov`) and at `space`, both live and writable
    // for the lengths given.
    let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC | flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `msg` is the header recvmsg filled in; CMSG_FIRSTHDR/CMSG_NXTHDR stay inside
    // its control area (msg_controllen is what the kernel wrote) or return null.
    let mut c = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    while !c.is_null() {
        // SAFETY: a non-null header inside the control area.
        let h = unsafe { &*c };
        if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_RIGHTS {
            // SAFETY: the data of the header `c`.
            let data = unsafe { libc::CMSG_DATA(c) };
            let head = data as usize - c as usize;
            let count = (h.cmsg_len as usize).saturating_sub(head) / size_of::<libc::c_int>();
            for i in 0..count.min(MAX_FDS_PER_READ) {
                // SAFETY: the kernel wrote `count` descriptors at `data` (cmsg_len covers
                // them), possibly unaligned.
                let fd = unsafe { data.cast::<libc::c_int>().add(i).read_unaligned() };
                // SAFETY: the kernel just installed `fd` in this process for us; nothing
                // else owns it.
                fds.push(unsafe { OwnedFd::from_raw_fd(fd) });
            }
        }
        // SAFETY: as for CMSG_FIRSTHDR.
        c = unsafe { libc::CMSG_NXTHDR(&msg, c) };
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        debug!("more than {MAX_FDS_PER_READ} file descriptors with one message: the rest closed");
    }
    Ok(n as usize)
}

/// `Conn` for the standard library's socket streams, which have the same methods.
macro_rules! impl_conn {
    ($($t:ty),*) => {$(
        impl Conn for $t {
            fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
                <$t>::set_read_timeout(self, t)
            }
            fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
                <$t>::set_write_timeout(self, t)
            }
            fn closer(&self) -> io::Result<Closer> {
                let s = self.try_clone()?;
                Ok(Box::new(move || {
                    let _ = s.shutdown(Shutdown::Both);
                }))
            }
            fn passes_fds(&self) -> bool {
                FdConn::passes(self)
            }
            fn read_with_fds(
                &mut self,
                buf: &mut [u8],
                fds: &mut Vec<OwnedFd>,
            ) -> io::Result<usize> {
                FdConn::recv(self, buf, fds, 0)
            }
            fn try_read_with_fds(
                &mut self,
                buf: &mut [u8],
                fds: &mut Vec<OwnedFd>,
            ) -> Option<io::Result<usize>> {
                Some(FdConn::recv(self, buf, fds, libc::MSG_DONTWAIT))
            }
        }
    )*};
}

impl_conn!(UnixStream, TcpStream);

/// A Unix stream passes file descriptors.
impl FdConn for UnixStream {
    fn passes(&self) -> bool {
        true
    }
    fn recv(
        &mut self,
        buf: &mut [u8],
        fds: &mut Vec<OwnedFd>,
        flags: libc::c_int,
    ) -> io::Result<usize> {
        recv_with_fds(self, buf, fds, flags)
    }
}

impl FdConn for TcpStream {
    fn recv(
        &mut self,
        buf: &mut [u8],
        _fds: &mut Vec<OwnedFd>,
        flags: libc::c_int,
    ) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        loop {
            // SAFETY: `buf` is valid for writes of its length.
            let n =
                unsafe { libc::recv(self.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), flags) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// What [`Conn`]'s descriptor methods do for the standard library's streams.
trait FdConn: Read {
    fn passes(&self) -> bool {
        false
    }
    fn recv(
        &mut self,
        buf: &mut [u8],
        fds: &mut Vec<OwnedFd>,
        flags: libc::c_int,
    ) -> io::Result<usize>;
}
