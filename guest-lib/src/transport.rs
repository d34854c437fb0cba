// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Transports: how messages reach the backend.
//!
//! A [`Transport`] carries one message and its data segments and returns the reply's
//! records. [`SocketTransport`] writes everything inline on a Unix or TCP stream; the virtio
//! transport hands the same message and the program's own buffers to `/dev/vcuda`, which
//! pins the pages and passes them to the host as scatter-gather lists. Both carry the same
//! wire format.

use std::io::{self, BufReader, IoSlice, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
#[cfg(test)]
use std::path::Path;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use vcuda_protocol::decode::{decode_reply_header, split_records};
use vcuda_protocol::{RecordKind, ReplyHeader};

use crate::ring::ClientRing;
use crate::tls::{TlsEnv, TlsStream};

/// One record of a reply, owned.
#[derive(Debug, Clone)]
pub struct Record {
    /// What it is.
    pub kind: RecordKind,
    /// The request it answers.
    pub seq: u64,
    /// Its status.
    pub status: u32,
    /// Its payload.
    pub payload: Vec<u8>,
}

/// How a transport shares page-locked memory with the backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// Memory files passed beside messages (`ShareMemory`, a Unix socket).
    Files,
    /// The program's own pages, in place ([`Transport::share_pages`], a VM's device).
    Pages,
    /// Not at all.
    Nothing,
}

/// Carries messages to the backend.
pub trait Transport: Send + Sync {
    /// Sends `msg` (a complete control area, header included) with the bytes of its out
    /// segments, in order, and waits for the reply to request `seq`. The reply's in data
    /// lands in `inp` (the message's in segments, in order). Returns every record received
    /// meanwhile, including asynchronous errors and device output.
    fn call(
        &self,
        msg: &[u8],
        out: &[&[u8]],
        inp: &mut [&mut [u8]],
        seq: u64,
    ) -> io::Result<Vec<Record>>;

    /// Sends a message whose requests are all reply-on-error, without waiting. Out data is
    /// consumed (copied or sent) before this returns.
    fn post(&self, msg: &[u8], out: &[&[u8]]) -> io::Result<Vec<Record>>;

    /// [`Transport::post`] unless another thread is using the connection (`None`: not
    /// sent). For the exit handler, which must never wait.
    fn try_post(&self, msg: &[u8], out: &[&[u8]]) -> Option<io::Result<Vec<Record>>> {
        Some(self.post(msg, out))
    }

    /// Like [`Transport::call`] for a message with no data, passing the file descriptor
    /// `fd` along with it (`SCM_RIGHTS`). Only a Unix socket can.
    fn call_with_fd(&self, msg: &[u8], fd: RawFd, seq: u64) -> io::Result<Vec<Record>> {
        let _ = (msg, fd, seq);
        Err(io::ErrorKind::Unsupported.into())
    }

    /// How this transport shares page-locked memory with a backend that offers it
    /// ([`vcuda_protocol::HELLO_FEATURE_SHARED_MEMORY`]).
    fn sharing(&self) -> Sharing {
        Sharing::Files
    }

    /// Shares the page-locked memory `[addr, addr + len)` (whole pages) with the backend
    /// in place until [`Transport::unshare_pages`]: the region's handle, which requests
    /// then name. The virtio transport's module pins the pages and names them to the
    /// device (`VCUDA_IOC_SHARE`).
    fn share_pages(&self, addr: u64, len: u64) -> io::Result<u64> {
        let _ = (addr, len);
        Err(io::ErrorKind::Unsupported.into())
    }

    /// Ends a region [`Transport::share_pages`] made; once this returns the backend no
    /// longer uses its memory.
    fn unshare_pages(&self, handle: u64) -> io::Result<()> {
        let _ = handle;
        Err(io::ErrorKind::Unsupported.into())
    }

    /// Runs a pipeline of calls with no data: `next(i)` makes call `i` (its message and
    /// seq, or `None` when there are no more) and `done(i, seq, records)` takes its reply
    /// (returning `false` stops making calls). A transport may send call `i + 1` before the
    /// reply to call `i` arrives, so that making it overlaps the backend's work on call
    /// `i`; `next(i)` always comes after `done(i - 2)`. This one runs them one at a time.
    fn call_pipelined(
        &self,
        next: &mut dyn FnMut(usize) -> Option<(Vec<u8>, u64)>,
        done: &mut dyn FnMut(usize, u64, Vec<Record>) -> bool,
    ) -> io::Result<()> {
        let mut i = 0;
        while let Some((msg, seq)) = next(i) {
            let recs = self.call(&msg, &[], &mut [], seq)?;
            if !done(i, seq, recs) {
                break;
            }
            i += 1;
        }
        Ok(())
    }

    /// Whether the batch may travel in front of a call that waits for its reply, in one
    /// message. A message carrying batched requests holds the batch's order lock until the
    /// transport is done with it; where that is only once the host has run the whole
    /// message (virtio: one ioctl that returns when the device answered), a call that
    /// blocks on the host (a synchronize) would hold every other thread's calls back with
    /// it. There the batch goes as a message of its own first, which holds the lock only
    /// while the host runs posted calls, and the call follows.
    fn batch_rides_with_calls(&self) -> bool {
        true
    }

    /// A short description for logs.
    fn describe(&self) -> String;

    /// Whether the connection to the backend is lost for good: every later call fails.
    fn is_broken(&self) -> bool {
        false
    }

    /// Lets calls wait for the backend as long as they take again (after a pool member's
    /// bounded `Hello`).
    fn clear_timeouts(&self) {}

    /// Makes a call ring to offer with `Hello` (see [`crate::ring`]): the file to pass
    /// beside it. Only a Unix socket can.
    fn offer_call_ring(&self) -> Option<OwnedFd> {
        None
    }

    /// The `Hello` reply came: switches to the ring offered if `accepted`, else forgets it.
    fn start_call_ring(&self, accepted: bool) -> io::Result<()> {
        let _ = accepted;
        Ok(())
    }

    /// Most data bytes one request should carry. Larger copies are split into several
    /// requests; the virtio transport keeps each within one descriptor chain so the
    /// program's pages are used in place.
    fn max_request_data(&self) -> u64 {
        vcuda_protocol::MAX_SEGMENT_LEN
    }
}

/// Where the socket transport connects.
#[derive(Debug, Clone)]
pub enum Address {
    /// A Unix socket.
    Unix(PathBuf),
    /// `host:port`.
    Tcp(String),
}

impl Address {
    /// `VCUDA_SOCKET`, else `$XDG_RUNTIME_DIR/vcuda/vcuda.sock`, else
    /// `/run/vcuda/vcuda.sock` (a backend run by root); the backend's defaults too. Never a
    /// predictable path in a shared directory such as `/tmp`.
    pub fn from_env() -> Self {
        match std::env::var("VCUDA_SOCKET") {
            Ok(s) if !s.is_empty() => Address::parse(&s),
            _ => Address::Unix(default_socket_path(
                std::env::var_os("XDG_RUNTIME_DIR").as_deref(),
            )),
        }
    }

    /// One address: `tcp:HOST:PORT`, else a Unix socket path.
    pub fn parse(s: &str) -> Self {
        match s.strip_prefix("tcp:") {
            Some(a) => Address::Tcp(a.to_owned()),
            None => Address::Unix(PathBuf::from(s)),
        }
    }
}

/// The default socket for a given `$XDG_RUNTIME_DIR`: `$XDG_RUNTIME_DIR/vcuda/vcuda.sock`,
/// else `/run/vcuda/vcuda.sock`.
pub fn default_socket_path(xdg_runtime_dir: Option<&std::ffi::OsStr>) -> PathBuf {
    match xdg_runtime_dir {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("vcuda/vcuda.sock"),
        _ => PathBuf::from("/run/vcuda/vcuda.sock"),
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Address::Unix(p) => write!(f, "{}", p.display()),
            Address::Tcp(a) => write!(f, "tcp:{a}"),
        }
    }
}

/// Checks the uid a Unix-socket backend runs as (`SO_PEERCRED`): the library's own uid,
/// root, or the uid `allowed` names (`VCUDA_ALLOW_BACKEND_UID`). Anyone else could have
/// created the socket first to receive the program's calls and data.
pub fn check_backend_uid(backend: u32, own: u32, allowed: Option<&str>) -> io::Result<()> {
    if backend == own || backend == 0 {
        return Ok(());
    }
    if allowed.and_then(|a| a.trim().parse::<u32>().ok()) == Some(backend) {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "the backend socket belongs to a process of uid {backend}, not this user ({own}) \
             or root; refusing to send it anything (set VCUDA_ALLOW_BACKEND_UID={backend} if \
             you trust it)"
        ),
    ))
}

/// The uid of the process at the other end of a Unix stream.
fn peer_uid(s: &UnixStream) -> io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `s` is an open socket for the call's duration; `cred` and `len` are valid,
    // writable, and `len` holds the size of `cred`, the most the kernel writes for
    // SO_PEERCRED.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// A connected stream socket.
enum Conn {
    Unix(UnixStream),
    /// A Unix socket whose messages go through the call ring.
    Ring(Box<ClientRing>),
    Tcp(TcpStream),
    /// TCP with mutual TLS (`crate::tls`).
    Tls(Box<TlsStream>),
}

impl Conn {
    /// Sends `msg` then every out buffer; never raises SIGPIPE.
    fn send(&mut self, msg: &[u8], out: &[&[u8]]) -> io::Result<()> {
        match self {
            Conn::Unix(s) => send_all(s.as_raw_fd(), msg, out, None),
            Conn::Ring(r) => r.send(msg, out),
            Conn::Tcp(s) => send_all(s.as_raw_fd(), msg, out, None),
            Conn::Tls(s) => {
                // rustls seals records of up to 16 KiB as it goes and writes them through
                // `NoSigPipe`.
                s.write_all(msg)?;
                for b in out {
                    s.write_all(b)?;
                }
                s.flush()
            }
        }
    }

    fn shutdown(&self) {
        let _ = match self {
            Conn::Unix(u) => u.shutdown(Shutdown::Both),
            Conn::Ring(r) => r.socket().shutdown(Shutdown::Both),
            Conn::Tcp(t) => t.shutdown(Shutdown::Both),
            Conn::Tls(t) => t.sock.0.shutdown(Shutdown::Both),
        };
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => {
                if let Some(n) = spin_read(s, buf, spin_budget())? {
                    return Ok(n);
                }
                s.read(buf)
            }
            Conn::Ring(r) => {
                let (budget, yield_core) = wait_policy(spin_budget());
                r.read(buf, budget, yield_core)
            }
            Conn::Tcp(s) => s.read(buf),
            Conn::Tls(s) => s.read(buf),
        }
    }
}

/// Default of `VCUDA_SPIN_US`.
const DEFAULT_SPIN_US: u64 = 100;

/// How long a wait for the backend spins before it sleeps: `VCUDA_SPIN_US` microseconds
/// (default [`DEFAULT_SPIN_US`]; 0: never). Like CUDA's default scheduling, which spins
/// while it waits for the GPU: a reply that comes within it costs no sleep and wake-up
/// (tens of microseconds on a virtual CPU); a longer wait costs that much CPU time once.
fn spin_budget() -> Duration {
    static SPIN: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *SPIN.get_or_init(|| {
        let us = std::env::var("VCUDA_SPIN_US")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(DEFAULT_SPIN_US);
        Duration::from_micros(us.min(1_000_000))
    })
}

/// The program's scheduling choice (`cudaSetDeviceFlags`' `cudaDeviceSchedule*` bits:
/// 0 auto, 1 spin, 2 yield, 4 blocking sync), which shapes [`spin_read`].
static SCHEDULE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Most a `cudaDeviceScheduleSpin` wait spins before it sleeps anyway.
const SPIN_SCHEDULE_MAX: Duration = Duration::from_millis(10);

/// Sets how waits for the backend behave, from `cudaSetDeviceFlags`' scheduling bits:
/// auto spins `VCUDA_SPIN_US`; spin spins longer (up to 10 ms); yield gives the core away
/// between polls; blocking sync sleeps at once.
pub fn set_schedule(flags: u32) {
    SCHEDULE.store(flags & 0x07, std::sync::atomic::Ordering::Relaxed);
}

/// How long a wait spins, and whether it yields the core between polls, as the program's
/// scheduling choice shapes the `VCUDA_SPIN_US` budget.
fn wait_policy(budget: Duration) -> (Duration, bool) {
    match SCHEDULE.load(std::sync::atomic::Ordering::Relaxed) {
        4 => (Duration::ZERO, false),
        1 => (budget.max(SPIN_SCHEDULE_MAX), false),
        2 => (budget, true),
        _ => (budget, false),
    }
}

/// Reads without blocking until bytes come or the spin budget (`budget`, as the program's
/// scheduling choice shapes it) has passed: `Some(n)` bytes read (0 at end of file), `None`
/// if nothing came (then the caller blocks).
fn spin_read(s: &UnixStream, buf: &mut [u8], budget: Duration) -> io::Result<Option<usize>> {
    let (budget, yield_core) = wait_policy(budget);
    if budget.is_zero() || buf.is_empty() {
        return Ok(None);
    }
    let start = std::time::Instant::now();
    loop {
        // SAFETY: `buf` is valid for writes of its length; MSG_DONTWAIT never blocks.
        let n = unsafe {
            libc::recv(
                s.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock if start.elapsed() < budget => {
                if yield_core {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
            io::ErrorKind::WouldBlock => return Ok(None),
            io::ErrorKind::Interrupted => {}
            _ => return Err(e),
        }
    }
}

/// The socket transport. One connection per process; calls from many threads take turns
/// on it (the backend runs a session's calls in order anyway).
///
/// Writes use `sendmsg(MSG_NOSIGNAL)`, so a backend that went away is an error, never a
/// SIGPIPE that kills the program. After any I/O error the stream's framing is lost: the
/// transport is broken and every later call fails at once.
pub struct SocketTransport {
    addr: Address,
    /// The connection, with replies read through a buffer: a small reply (header, records
    /// and small in data) takes one `read`, large in data goes straight to its buffer.
    stream: Mutex<BufReader<Conn>>,
    broken: AtomicBool,
    /// The call ring offered with `Hello`, until the reply says whether it was taken.
    offered_ring: Mutex<Option<vcuda_ring::Mapping>>,
}

impl SocketTransport {
    /// Connects; on a Unix socket, first checks who serves it ([`check_backend_uid`]).
    pub fn connect(addr: Address) -> io::Result<Self> {
        Self::connect_within(addr, None)
    }

    /// [`SocketTransport::connect`], giving up on a TCP connection (each address the name
    /// resolves to) after `timeout`.
    pub fn connect_within(addr: Address, timeout: Option<Duration>) -> io::Result<Self> {
        let stream = match &addr {
            Address::Unix(p) => {
                let s = UnixStream::connect(p)?;
                // SAFETY: geteuid has no preconditions and cannot fail.
                let own = unsafe { libc::geteuid() };
                let allowed = std::env::var("VCUDA_ALLOW_BACKEND_UID").ok();
                check_backend_uid(peer_uid(&s)?, own, allowed.as_deref())?;
                Conn::Unix(s)
            }
            Address::Tcp(a) => {
                let tls = TlsEnv::from_env()?;
                let s = match timeout {
                    None => TcpStream::connect(a)?,
                    Some(t) => connect_tcp_within(a, t)?,
                };
                s.set_nodelay(true)?;
                match tls {
                    Some(t) => Conn::Tls(Box::new(t.connect(a, s)?)),
                    None => Conn::Tcp(s),
                }
            }
        };
        Ok(Self {
            addr,
            stream: Mutex::new(BufReader::with_capacity(READ_BUFFER, stream)),
            broken: AtomicBool::new(false),
            offered_ring: Mutex::new(None),
        })
    }

    /// Bounds each read from the backend (`None`: none), e.g. while a pool member is asked
    /// for its `Hello`.
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self.lock().get_ref() {
            Conn::Unix(s) => s.set_read_timeout(t),
            Conn::Ring(r) => r.socket().set_read_timeout(t),
            Conn::Tcp(s) => s.set_read_timeout(t),
            Conn::Tls(s) => s.sock.0.set_read_timeout(t),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BufReader<Conn>> {
        self.stream.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the stream unless the transport is broken; breaks it on error.
    fn with_stream<T>(
        &self,
        f: impl FnOnce(&mut BufReader<Conn>) -> io::Result<T>,
    ) -> io::Result<T> {
        let mut s = self.lock();
        if self.broken.load(Ordering::Relaxed) {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "the connection to the backend was lost earlier",
            ));
        }
        let r = f(&mut s);
        if r.is_err() {
            self.broken.store(true, Ordering::Relaxed);
            s.get_ref().shutdown();
        }
        r
    }
}

/// Connects to `addr` (`HOST:PORT`), trying each address it resolves to for at most
/// `timeout`.
fn connect_tcp_within(addr: &str, timeout: Duration) -> io::Result<TcpStream> {
    use std::net::ToSocketAddrs;
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{addr}: no address"));
    for a in addr.to_socket_addrs()? {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Bytes of replies read ahead.
const READ_BUFFER: usize = 16 << 10;

/// Most iovecs one `sendmsg` takes here (Linux's IOV_MAX is 1024).
const MAX_IOV: usize = 1024;

/// Sends `msg` then every out buffer with `sendmsg(MSG_NOSIGNAL)`: a closed peer is an
/// `EPIPE` error, not a signal. `pass` goes along with the first byte (`SCM_RIGHTS`).
fn send_all(fd: RawFd, msg: &[u8], out: &[&[u8]], mut pass: Option<RawFd>) -> io::Result<()> {
    let mut iov: Vec<IoSlice<'_>> = Vec::with_capacity(1 + out.len());
    iov.push(IoSlice::new(msg));
    iov.extend(
        out.iter()
            .filter(|b| !b.is_empty())
            .map(|b| IoSlice::new(b)),
    );
    let mut bufs = &mut iov[..];
    while !bufs.is_empty() {
        let n = bufs.len().min(MAX_IOV);
        // SAFETY: an all-zero msghdr is valid (no name, no control data).
        let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
        // IoSlice is ABI-compatible with struct iovec on Unix; the kernel only reads them.
        hdr.msg_iov = bufs.as_ptr() as *mut libc::iovec;
        hdr.msg_iovlen = n as _;
        // Room for one cmsghdr holding one descriptor, aligned for cmsghdr.
        let mut cbuf = [0u64; 4];
        if let Some(p) = pass {
            // SAFETY: CMSG_SPACE only computes a size.
            let space = unsafe { libc::CMSG_SPACE(size_of::<RawFd>() as u32) } as usize;
            debug_assert!(space <= size_of_val(&cbuf));
            hdr.msg_control = cbuf.as_mut_ptr().cast();
            hdr.msg_controllen = space as _;
            // SAFETY: msg_control points to `space` zeroed, aligned bytes, enough for one
            // header (CMSG_FIRSTHDR is non-null) and one descriptor of data.
            unsafe {
                let c = libc::CMSG_FIRSTHDR(&hdr);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as _;
                libc::CMSG_DATA(c).cast::<RawFd>().write_unaligned(p);
            }
        }
        // SAFETY: `fd` is the open socket the caller holds locked; `hdr` points to `n`
        // iovecs that describe live, readable buffers borrowed for this call.
        let r = unsafe { libc::sendmsg(fd, &hdr, libc::MSG_NOSIGNAL) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        // The descriptor went with the first bytes.
        pass = None;
        IoSlice::advance_slices(&mut bufs, r as usize);
    }
    Ok(())
}

/// Reads one reply frame; in data of records for `seq` goes into `inp` in order, the rest
/// is discarded. Returns the records and whether one of them answered `seq`.
fn read_reply(
    s: &mut impl Read,
    seq: Option<u64>,
    inp: &mut [&mut [u8]],
    in_pos: &mut (usize, usize),
) -> io::Result<(Vec<Record>, bool)> {
    let bad =
        |e: vcuda_protocol::DecodeError| io::Error::new(io::ErrorKind::InvalidData, e.to_string());
    let mut hdr = [0u8; size_of::<ReplyHeader>()];
    s.read_exact(&mut hdr)?;
    let h = decode_reply_header(&hdr).map_err(bad)?;
    let mut ctrl = vec![0u8; h.ctrl_len as usize];
    s.read_exact(&mut ctrl)?;
    let raw = split_records(&h, &ctrl).map_err(bad)?;
    let mut recs = Vec::with_capacity(raw.len());
    let mut answered = false;
    for r in &raw {
        let kind = RecordKind::from_u16(r.header.kind).unwrap_or(RecordKind::Reply);
        let mine = kind == RecordKind::Reply && Some(r.header.seq) == seq;
        answered |= mine;
        let mut left = r.header.in_len as usize;
        while left > 0 {
            if mine && in_pos.0 < inp.len() {
                let buf = &mut inp[in_pos.0][in_pos.1..];
                let n = buf.len().min(left);
                s.read_exact(&mut buf[..n])?;
                left -= n;
                in_pos.1 += n;
                if in_pos.1 == inp[in_pos.0].len() {
                    *in_pos = (in_pos.0 + 1, 0);
                }
            } else {
                // Not ours, or more than we asked for: drain it.
                let mut sink = [0u8; 4096];
                let n = sink.len().min(left);
                s.read_exact(&mut sink[..n])?;
                left -= n;
            }
        }
        recs.push(Record {
            kind,
            seq: r.header.seq,
            status: r.header.status,
            payload: r.payload.to_vec(),
        });
    }
    Ok((recs, answered))
}

impl Transport for SocketTransport {
    fn clear_timeouts(&self) {
        if let Err(e) = self.set_read_timeout(None) {
            log::warn!("{e}");
        }
    }

    fn call(
        &self,
        msg: &[u8],
        out: &[&[u8]],
        inp: &mut [&mut [u8]],
        seq: u64,
    ) -> io::Result<Vec<Record>> {
        self.with_stream(|s| {
            s.get_mut().send(msg, out)?;
            wait_reply(s, inp, seq)
        })
    }

    fn call_with_fd(&self, msg: &[u8], fd: RawFd, seq: u64) -> io::Result<Vec<Record>> {
        if !matches!(self.lock().get_ref(), Conn::Unix(_) | Conn::Ring(_)) {
            return Err(io::ErrorKind::Unsupported.into());
        }
        self.with_stream(|s| {
            match s.get_mut() {
                Conn::Unix(u) => send_all(u.as_raw_fd(), msg, &[], Some(fd))?,
                Conn::Ring(r) => {
                    // The descriptor goes on the socket first, with a note naming where
                    // its message starts in the ring; then the message.
                    let note = vcuda_ring::fd_note(r.out_offset());
                    send_all(r.socket().as_raw_fd(), &note, &[], Some(fd))?;
                    r.note_sent();
                    r.send(msg, &[])?;
                }
                _ => return Err(io::ErrorKind::Unsupported.into()),
            }
            wait_reply(s, &mut [], seq)
        })
    }

    fn offer_call_ring(&self) -> Option<OwnedFd> {
        if !matches!(self.lock().get_ref(), Conn::Unix(_)) || !crate::ring::wanted() {
            return None;
        }
        match vcuda_ring::Mapping::create() {
            Ok((map, fd)) => {
                *self.offered_ring.lock().unwrap_or_else(|e| e.into_inner()) = Some(map);
                Some(fd)
            }
            Err(e) => {
                log::warn!("no call ring: {e}");
                None
            }
        }
    }

    fn start_call_ring(&self, accepted: bool) -> io::Result<()> {
        let offered = self
            .offered_ring
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(map) = offered.filter(|_| accepted) else {
            return Ok(());
        };
        self.with_stream(|s| {
            // The backend sends nothing after the Hello reply until the next call.
            if !s.buffer().is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "bytes after the Hello reply",
                ));
            }
            let Conn::Unix(u) = s.get_ref() else {
                return Err(io::ErrorKind::Unsupported.into());
            };
            let ring = ClientRing::new(u.try_clone()?, map);
            *s.get_mut() = Conn::Ring(Box::new(ring));
            log::debug!("calls go through the call ring");
            Ok(())
        })
    }

    fn post(&self, msg: &[u8], out: &[&[u8]]) -> io::Result<Vec<Record>> {
        self.with_stream(|s| s.get_mut().send(msg, out))?;
        Ok(Vec::new())
    }

    fn try_post(&self, msg: &[u8], out: &[&[u8]]) -> Option<io::Result<Vec<Record>>> {
        let mut s = match self.stream.try_lock() {
            Ok(s) => s,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        if self.broken.load(Ordering::Relaxed) {
            return Some(Err(io::ErrorKind::NotConnected.into()));
        }
        Some(s.get_mut().send(msg, out).map(|()| Vec::new()))
    }

    /// Two calls in flight: call `i + 1` is made and sent while the backend works on
    /// call `i` (the backend answers in order).
    fn call_pipelined(
        &self,
        next: &mut dyn FnMut(usize) -> Option<(Vec<u8>, u64)>,
        done: &mut dyn FnMut(usize, u64, Vec<Record>) -> bool,
    ) -> io::Result<()> {
        self.with_stream(|s| {
            let mut in_flight = std::collections::VecDeque::with_capacity(2);
            let (mut i, mut more) = (0, true);
            loop {
                if more && in_flight.len() < 2 {
                    match next(i) {
                        Some((msg, seq)) => {
                            s.get_mut().send(&msg, &[])?;
                            in_flight.push_back((i, seq));
                            i += 1;
                            continue;
                        }
                        None => more = false,
                    }
                }
                let Some((j, seq)) = in_flight.pop_front() else {
                    return Ok(());
                };
                let recs = wait_reply(s, &mut [], seq)?;
                if !done(j, seq, recs) {
                    more = false;
                }
            }
        })
    }

    fn describe(&self) -> String {
        let ring = self
            .stream
            .try_lock()
            .is_ok_and(|s| matches!(s.get_ref(), Conn::Ring(_)));
        if ring {
            format!("socket {} with a call ring", self.addr)
        } else {
            format!("socket {}", self.addr)
        }
    }

    fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }
}

/// Reads reply frames until one answers `seq`; returns every record read.
fn wait_reply(s: &mut impl Read, inp: &mut [&mut [u8]], seq: u64) -> io::Result<Vec<Record>> {
    let mut all = Vec::new();
    let mut pos = (0, 0);
    loop {
        let (recs, answered) = read_reply(s, Some(seq), inp, &mut pos)?;
        all.extend(recs);
        if answered {
            return Ok(all);
        }
        if all.iter().any(|r| r.seq == u64::MAX) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the backend rejected a message",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;

    use super::*;

    #[test]
    fn a_wait_spins_then_gives_up_or_reads() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut buf = [0u8; 8];
        let t = std::time::Instant::now();
        assert_eq!(
            spin_read(&a, &mut buf, Duration::from_millis(2)).unwrap(),
            None
        );
        assert!(t.elapsed() >= Duration::from_millis(2));
        assert_eq!(spin_read(&a, &mut buf, Duration::ZERO).unwrap(), None);
        b.write_all(b"hi").unwrap();
        assert_eq!(
            spin_read(&a, &mut buf, Duration::from_millis(2)).unwrap(),
            Some(2)
        );
        assert_eq!(&buf[..2], b"hi");
        // cudaDeviceScheduleBlockingSync: no spin at all (one test, as the choice is
        // process-wide).
        set_schedule(4);
        let t = std::time::Instant::now();
        let r = spin_read(&a, &mut buf, Duration::from_millis(50)).unwrap();
        set_schedule(0);
        assert_eq!(r, None);
        assert!(t.elapsed() < Duration::from_millis(50));
        drop(b);
        assert_eq!(
            spin_read(&a, &mut buf, Duration::from_millis(2)).unwrap(),
            Some(0)
        );
    }

    #[test]
    fn default_path_is_never_in_tmp() {
        use std::ffi::OsStr;
        assert_eq!(
            default_socket_path(Some(OsStr::new("/run/user/7"))),
            Path::new("/run/user/7/vcuda/vcuda.sock")
        );
        assert_eq!(
            default_socket_path(Some(OsStr::new(""))),
            Path::new("/run/vcuda/vcuda.sock")
        );
        assert_eq!(
            default_socket_path(None),
            Path::new("/run/vcuda/vcuda.sock")
        );
    }

    #[test]
    fn backend_uid_must_be_ours_or_root_or_allowed() {
        assert!(check_backend_uid(1000, 1000, None).is_ok());
        assert!(check_backend_uid(0, 1000, None).is_ok());
        let e = check_backend_uid(1001, 1000, None).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("uid 1001"), "{e}");
        assert!(e.to_string().contains("VCUDA_ALLOW_BACKEND_UID"), "{e}");
        assert!(check_backend_uid(1001, 1000, Some("1001")).is_ok());
        assert!(check_backend_uid(1001, 1000, Some("1002")).is_err());
        assert!(check_backend_uid(1001, 1000, Some("x")).is_err());
    }

    fn socket_path(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!(
            "vcuda-guest-test-{}-{tag}.sock",
            std::process::id()
        ))
    }

    #[test]
    fn own_backend_passes_the_peer_check() {
        let path = socket_path("peer");
        let _ = std::fs::remove_file(&path);
        let l = UnixListener::bind(&path).unwrap();
        let t = SocketTransport::connect(Address::Unix(path.clone()));
        let _ = std::fs::remove_file(&path);
        drop(l);
        assert!(t.is_ok());
    }

    /// A backend that dies mid-copy: the write fails with an error instead of raising
    /// SIGPIPE (restored to its default action here, as in a C program, so a regression
    /// kills this test binary), and every later call fails at once.
    #[test]
    fn lost_backend_is_an_error_not_sigpipe() {
        // SAFETY: SIG_DFL is a valid disposition for SIGPIPE; no handler is involved.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        let path = socket_path("lost");
        let _ = std::fs::remove_file(&path);
        let l = UnixListener::bind(&path).unwrap();
        let backend = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            // Dies mid-copy.
        });
        let t = SocketTransport::connect(Address::Unix(path.clone())).unwrap();
        let _ = std::fs::remove_file(&path);
        let data = vec![7u8; 64 << 20];
        let e = t.post(b"hdr", &[&data]).unwrap_err();
        backend.join().unwrap();
        assert!(t.is_broken(), "{e}");
        let e = t.call(b"x", &[], &mut [], 1).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotConnected);
        // A write on the socket itself would have raised SIGPIPE; the flag stays set.
        let c = UnixStream::pair().unwrap();
        drop(c.1);
        assert!(send_all(c.0.as_raw_fd(), b"x", &[], None).is_err());
    }
}
