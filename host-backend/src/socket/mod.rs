// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The socket transport: one session per connection, on a Unix socket or TCP (for a GPU on
//! another machine).
//!
//! Framing on the stream, guest to host: `[MessageHeader][control area][out data]`; host to
//! guest: `[ReplyHeader][records][in data of each record, in record order]`. A message
//! flagged `MSG_NO_WAIT` gets no reply unless one of its requests failed.

use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use log::{debug, error, info};
use vcuda_protocol::{MessageHeader, ReplyBuilder};

use crate::data::DataSegs;
use crate::executor::Cancel;
use crate::session::{Backend, Outcome, Session, check_header};
use crate::worker::{ParentLink, Role, Workers};

mod access;
pub mod inbound;
mod limits;
pub mod tls;

pub use access::{
    AccessPolicy, PeerCred, SOCKET_DIR_NAME, SOCKET_FILE_NAME, bind_unix, bind_unix_private,
    check_tcp_listen, default_socket_path, default_socket_path_for, peer_cred, prepare_socket_dir,
    resolve_group,
};
pub use limits::{Bounds, Closer, PeerKey, Refusal, Ticket, Tracker};

use crate::log_limit::LogLimiter;

/// Where the socket transport listens.
#[derive(Debug, Clone)]
pub enum Listen {
    /// A Unix socket path.
    Unix(PathBuf),
    /// A TCP address (`host:port`).
    Tcp(String),
    /// A listening Unix socket inherited as this file descriptor (socket activation:
    /// `vcuda run` binds the socket and starts its program while the backend starts).
    Fd(i32),
}

impl Listen {
    /// Parses `tcp:HOST:PORT`, `fd:N` or a path.
    pub fn parse(s: &str) -> Self {
        if let Some(addr) = s.strip_prefix("tcp:") {
            return Listen::Tcp(addr.to_owned());
        }
        match s.strip_prefix("fd:").map(str::parse::<i32>) {
            Some(Ok(fd)) if fd >= 0 => Listen::Fd(fd),
            _ => Listen::Unix(PathBuf::from(s)),
        }
    }
}

/// How long a peer may keep the backend waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// The first message (the `Hello`) must have arrived completely this long after the
    /// connection was accepted.
    pub handshake: Duration,
    /// Once a message has started, each further read must bring bytes within this long;
    /// each reply write must make progress within it too. A session may stay idle between
    /// messages for as long as it likes.
    pub message: Duration,
    /// Between messages, spin this long (polling the socket) before sleeping, so that a
    /// client's next call, usually right behind the reply, costs no wake-up. Zero (the
    /// default) never spins; otherwise each gap between messages costs up to this much of
    /// a core.
    pub spin: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            handshake: Duration::from_secs(10),
            message: Duration::from_secs(30),
            spin: Duration::ZERO,
        }
    }
}

/// Polls `fd` (without taking anything) until bytes are ready or `budget` has passed.
fn spin_until_readable(fd: std::os::fd::BorrowedFd<'_>, budget: Duration) {
    use std::os::fd::AsRawFd;

    if budget.is_zero() {
        return;
    }
    let start = Instant::now();
    let mut b = 0u8;
    loop {
        // SAFETY: a one-byte peek into a local; MSG_DONTWAIT never blocks and MSG_PEEK
        // takes nothing (descriptors passed along stay queued too).
        let n = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                (&raw mut b).cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        if n >= 0 || start.elapsed() >= budget {
            return;
        }
        match io::Error::last_os_error().kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => std::hint::spin_loop(),
            _ => return,
        }
    }
}

/// Limits and access rules of the socket server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Most concurrent sessions (connections past their `Hello`).
    pub max_sessions: usize,
    /// Most connections per peer uid (Unix) or address (TCP).
    pub max_sessions_per_peer: usize,
    /// Most connections that have not completed their `Hello`; when full, the oldest is
    /// closed to make room.
    pub max_pending: usize,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Which Unix peers are served (and the socket's group).
    pub access: AccessPolicy,
    /// Create the socket's directory (mode 0700, or 0710 with a group) and check that this
    /// user owns it: for the default path.
    pub private_dir: bool,
    /// Mutual TLS on TCP (`--tls-*`): required for a non-loopback address.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Print `ready` on stdout once the socket accepts connections, so whoever started the
    /// backend waits for that line instead of polling (`vcuda run` does).
    pub notify_ready: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_sessions: 256,
            max_sessions_per_peer: 64,
            max_pending: 32,
            timeouts: Timeouts::default(),
            access: AccessPolicy::own_uid_and_root(),
            private_dir: false,
            tls: None,
            notify_ready: false,
        }
    }
}

/// Log lines about refused, timed-out and malformed connections: a flood of them cannot
/// flood the log.
static LIMITER: LazyLock<LogLimiter> =
    LazyLock::new(|| LogLimiter::new(module_path!(), 20, Duration::from_secs(10)));

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

/// Where the server's sessions run.
#[derive(Debug, Clone)]
pub enum Sessions {
    /// On threads of this process (`--isolation thread`).
    Threads(Arc<Backend>),
    /// Each in a worker process of its own (`--isolation process`; see [`crate::worker`]).
    Workers(Arc<Workers>),
}

impl Sessions {
    fn kind(&self) -> vcuda_protocol::ExecutorKind {
        match self {
            Sessions::Threads(b) => b.kind(),
            Sessions::Workers(w) => w.kind(),
        }
    }

    fn isolation(&self) -> &'static str {
        match self {
            Sessions::Threads(_) => "",
            Sessions::Workers(_) => ", a worker process per session",
        }
    }
}

/// What lets a connection's first message start a session: its place among the server's
/// bounds ([`Ticket`]), or, in a worker process, the backend's answer over the worker's
/// link.
#[derive(Debug)]
pub enum Admission {
    /// The connection's place in this process's [`Tracker`].
    Ticket(Ticket),
    /// The backend that started this worker holds the bounds.
    Parent(ParentLink),
}

impl Admission {
    fn promote(&mut self) -> io::Result<()> {
        let refused = |why: String| io::Error::new(io::ErrorKind::PermissionDenied, why);
        match self {
            Admission::Ticket(t) => t.promote().map_err(|e| refused(e.to_string())),
            Admission::Parent(link) => match link.admit()? {
                true => Ok(()),
                false => Err(refused(
                    "the backend refused the session (its bounds)".into(),
                )),
            },
        }
    }
}

/// Serves on `listen` until the process ends.
pub fn serve(listen: &Listen, sessions: Sessions, config: ServerConfig) -> io::Result<()> {
    let tracker = Tracker::new(Bounds {
        max_sessions: config.max_sessions,
        max_per_peer: config.max_sessions_per_peer,
        max_pending: config.max_pending,
    });
    match listen {
        Listen::Unix(_) | Listen::Fd(_) => {
            let (listener, name) = match listen {
                Listen::Unix(path) => (listen_unix(path, &config)?, path.display().to_string()),
                Listen::Fd(fd) => (
                    inherited_listener(*fd)?,
                    format!("inherited socket fd {fd}"),
                ),
                Listen::Tcp(_) => unreachable!("matched above"),
            };
            info!(
                "serving {:?} executor on {} (uids {:?}{}{})",
                sessions.kind(),
                name,
                config.access.allowed_uids,
                match config.access.group {
                    Some(g) => format!(", group {g}"),
                    None => String::new(),
                },
                sessions.isolation()
            );
            notify_ready(&config)?;
            for stream in listener.incoming() {
                let s = match stream {
                    Ok(s) => s,
                    Err(e) => {
                        LIMITER.warn(format_args!("accept: {e}"));
                        continue;
                    }
                };
                let cred = match peer_cred(&s) {
                    Ok(c) => c,
                    Err(e) => {
                        LIMITER.warn(format_args!(
                            "connection refused: no peer credentials ({e})"
                        ));
                        continue;
                    }
                };
                if !config.access.allows(&cred) {
                    LIMITER.warn(format_args!(
                        "connection from uid {} (pid {}) refused: not an allowed uid (--allow-uid, --socket-group)",
                        cred.uid, cred.pid
                    ));
                    continue;
                }
                let key = PeerKey::Uid(cred.uid);
                match &sessions {
                    Sessions::Threads(backend) => {
                        spawn(s, Ok, key, backend, &tracker, config.timeouts)
                    }
                    Sessions::Workers(w) => spawn_worker(s, key, w, &tracker),
                }
            }
        }
        Listen::Tcp(addr) => {
            check_tcp_listen(addr, config.tls.is_some()).map_err(io::Error::other)?;
            if config.tls.is_none() {
                log::warn!(
                    "serving tcp:{addr} without TLS: any local user can connect; prefer the \
                     Unix socket, or --tls-cert/--tls-key/--tls-client-ca"
                );
            }
            let listener = TcpListener::bind(addr)?;
            info!(
                "serving {:?} executor on tcp:{}{}{}",
                sessions.kind(),
                listener.local_addr()?,
                if config.tls.is_some() {
                    " (mutual TLS)"
                } else {
                    ""
                },
                sessions.isolation()
            );
            notify_ready(&config)?;
            for stream in listener.incoming() {
                let s = match stream {
                    Ok(s) => s,
                    Err(e) => {
                        LIMITER.warn(format_args!("accept: {e}"));
                        continue;
                    }
                };
                let Ok(peer) = s.peer_addr() else { continue };
                let _ = s.set_nodelay(true);
                let key = PeerKey::Ip(peer.ip());
                let backend = match &sessions {
                    Sessions::Threads(b) => b,
                    Sessions::Workers(w) => {
                        // The worker makes the TLS handshake itself.
                        spawn_worker(s, key, w, &tracker);
                        continue;
                    }
                };
                match &config.tls {
                    Some(tls) => {
                        let tls = tls.clone();
                        let deadline = Instant::now() + config.timeouts.handshake;
                        let accept = move |s| tls::TlsConn::accept(tls, s, deadline);
                        spawn(s, accept, key, backend, &tracker, config.timeouts);
                    }
                    None => spawn(s, Ok, key, backend, &tracker, config.timeouts),
                }
            }
        }
    }
    Ok(())
}

/// The listening Unix stream socket inherited as `fd` (checked: a socket, listening, Unix,
/// stream), owned from here on.
fn inherited_listener(fd: i32) -> io::Result<UnixListener> {
    use nix::sys::socket::{AddressFamily, SockType, getsockname, getsockopt, sockopt};
    use std::os::fd::{BorrowedFd, FromRawFd};

    let bad = |why: String| io::Error::new(io::ErrorKind::InvalidInput, format!("fd:{fd}: {why}"));
    // SAFETY: fcntl(F_GETFD) only asks whether `fd` is open.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(bad("not an open file descriptor".into()));
    }
    // SAFETY: `fd` is open (checked above) and stays open while borrowed here.
    let b = unsafe { BorrowedFd::borrow_raw(fd) };
    let stream =
        getsockopt(&b, sockopt::SockType).map_err(|e| bad(format!("not a socket ({e})")))?;
    let listening = getsockopt(&b, sockopt::AcceptConn).map_err(|e| bad(e.to_string()))?;
    let family = getsockname::<nix::sys::socket::UnixAddr>(fd)
        .ok()
        .map(|_| AddressFamily::Unix);
    if stream != SockType::Stream || !listening || family != Some(AddressFamily::Unix) {
        return Err(bad("not a listening Unix stream socket".into()));
    }
    // SAFETY: checked to be an open listening socket; the caller hands it over (it was
    // inherited for this purpose), and nothing else in this process uses it.
    let l = unsafe { UnixListener::from_raw_fd(fd) };
    // The descriptor was inherited without close-on-exec; sessions never exec, but keep
    // it from leaking anyway.
    let _ = nix::fcntl::fcntl(
        &l,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    );
    Ok(l)
}

/// Binds the Unix socket of `config`: its directory private when `config.private_dir`, the
/// file 0600 (0660 with the access policy's group).
fn listen_unix(path: &std::path::Path, config: &ServerConfig) -> io::Result<UnixListener> {
    if config.private_dir
        && let Some(dir) = path.parent()
    {
        prepare_socket_dir(dir, config.access.group)?;
    }
    bind_unix_private(path, config.access.group)
}

/// A place for a new connection among `tracker`'s bounds, closable from there while it has
/// not sent its `Hello`; `None` (logged) when refused.
fn admit<S: Conn>(stream: &S, peer: PeerKey, tracker: &Arc<Tracker>) -> Option<Ticket> {
    let closer = match stream.closer() {
        Ok(c) => c,
        Err(e) => {
            LIMITER.warn(format_args!("connection from {peer} dropped: {e}"));
            return None;
        }
    };
    let closer: Closer = Box::new(move || {
        LIMITER.warn(format_args!(
            "too many connections without a Hello; closing the oldest (from {peer})"
        ));
        closer();
    });
    tracker
        .admit(peer, closer)
        .inspect_err(|e| LIMITER.warn(format_args!("connection from {peer} refused: {e}")))
        .ok()
}

/// Serves a new connection on a thread of its own: first `prepare` (a TLS handshake, or
/// nothing), then the session. The connection holds a pending slot of `tracker` until its
/// `Hello`.
fn spawn<S: Conn, T: Conn>(
    stream: S,
    prepare: impl FnOnce(S) -> io::Result<T> + Send + 'static,
    peer: PeerKey,
    backend: &Arc<Backend>,
    tracker: &Arc<Tracker>,
    timeouts: Timeouts,
) {
    let Some(ticket) = admit(&stream, peer, tracker) else {
        return;
    };
    let backend = backend.clone();
    let r = std::thread::Builder::new()
        .name("vcuda-session".into())
        .spawn(move || {
            // A bug in a session must not take the daemon or other sessions down.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let stream = prepare(stream)?;
                serve_connection_with(stream, &backend, timeouts, Some(Admission::Ticket(ticket)))
            }));
            match r {
                Ok(r) => log_end(&peer, r),
                Err(_) => error!("session thread panicked; session dropped"),
            }
        });
    if let Err(e) = r {
        error!("cannot start a session thread: {e}");
    }
}

/// Logs how a connection ended: what a client did wrong (timeouts, malformed messages,
/// refusals, failed TLS handshakes) as a rate-limited warning.
fn log_end(peer: &dyn std::fmt::Display, r: io::Result<()>) {
    match r {
        Ok(()) => debug!("session from {peer} closed"),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::TimedOut
                    | io::ErrorKind::InvalidData
                    | io::ErrorKind::PermissionDenied
                    | io::ErrorKind::UnexpectedEof
            ) =>
        {
            LIMITER.warn(format_args!("connection from {peer} closed: {e}"))
        }
        Err(e) => debug!("session from {peer} ended: {e}"),
    }
}

/// Serves a new connection in a worker process of its own ([`crate::worker`]): the
/// connection holds a pending slot of `tracker` until the worker asks to start its session,
/// and its place until the worker has exited.
fn spawn_worker<S: Conn + Into<OwnedFd>>(
    stream: S,
    peer: PeerKey,
    workers: &Arc<Workers>,
    tracker: &Arc<Tracker>,
) {
    let watch = match stream.as_fd().try_clone_to_owned() {
        Ok(w) => w,
        Err(e) => {
            LIMITER.warn(format_args!("connection from {peer} dropped: {e}"));
            return;
        }
    };
    let Some(mut ticket) = admit(&stream, peer, tracker) else {
        return;
    };
    let worker = match workers.spawn(Role::Socket, Some(stream.into())) {
        Ok(w) => w,
        Err(e) => {
            error!("cannot start a worker process for {peer}: {e}");
            return;
        }
    };
    let grace = workers.grace();
    let r = std::thread::Builder::new()
        .name("vcuda-worker".into())
        .spawn(move || {
            let pid = worker.pid();
            debug!("worker {pid} serves {peer}");
            let admit = || match ticket.promote() {
                Ok(()) => true,
                Err(e) => {
                    LIMITER.warn(format_args!("session from {peer} refused: {e}"));
                    false
                }
            };
            match worker.supervise(Some(watch), grace, admit) {
                Ok(st) if st.success() => debug!("worker {pid} ({peer}) exited"),
                Ok(st) => LIMITER.warn(format_args!("worker {pid} ({peer}) ended: {st}")),
                Err(e) => error!("supervising worker {pid}: {e}"),
            }
        });
    if let Err(e) = r {
        // The worker is killed with this process; it cannot be supervised now.
        error!("cannot start a thread to supervise a worker: {e}");
    }
}

/// In a worker process: serves the one connection the backend handed over (see
/// [`crate::worker`]), a Unix or TCP stream (with a TLS handshake first if `config.tls`),
/// and logs how it ended.
pub fn serve_worker(
    conn: OwnedFd,
    backend: &Arc<Backend>,
    config: &ServerConfig,
    mut link: ParentLink,
) -> io::Result<()> {
    use nix::sys::socket::{AddressFamily, SockaddrLike, SockaddrStorage, getsockname};
    use std::os::fd::AsRawFd;

    let family = getsockname::<SockaddrStorage>(conn.as_raw_fd())
        .map_err(io::Error::from)?
        .family();
    let admission = Some(Admission::Parent(link.try_clone()?));
    let mut peer = String::from("the client");
    let r = match family {
        Some(AddressFamily::Unix) => {
            let s = UnixStream::from(conn);
            if let Ok(c) = peer_cred(&s) {
                peer = PeerKey::Uid(c.uid).to_string();
            }
            serve_connection_with(s, backend, config.timeouts, admission)
        }
        Some(AddressFamily::Inet | AddressFamily::Inet6) => {
            let s = TcpStream::from(conn);
            let _ = s.set_nodelay(true);
            if let Ok(a) = s.peer_addr() {
                peer = PeerKey::Ip(a.ip()).to_string();
            }
            match &config.tls {
                Some(tls) => {
                    let deadline = Instant::now() + config.timeouts.handshake;
                    tls::TlsConn::accept(tls.clone(), s, deadline)
                        .and_then(|t| serve_connection_with(t, backend, config.timeouts, admission))
                }
                None => serve_connection_with(s, backend, config.timeouts, admission),
            }
        }
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the worker's connection is neither a Unix nor a TCP stream",
        )),
    };
    link.ended();
    log_end(&peer, r);
    Ok(())
}

/// Reads from a stream with timeouts: each read waits at most `idle` (if set) and never
/// past `deadline` (if set).
struct TimedReader<'a, S: Conn> {
    stream: &'a mut S,
    idle: Option<Duration>,
    deadline: Option<Instant>,
    what: &'static str,
    /// The read timeout last set on the socket (`None`: not set yet), kept by the
    /// connection so that messages read in many pieces, one after another, cost no
    /// `setsockopt` while the timeout stays the same.
    applied: &'a mut Option<Option<Duration>>,
}

impl<'a, S: Conn> TimedReader<'a, S> {
    fn new(
        stream: &'a mut S,
        applied: &'a mut Option<Option<Duration>>,
        idle: Option<Duration>,
        deadline: Option<Instant>,
        what: &'static str,
    ) -> Self {
        Self {
            stream,
            idle,
            deadline,
            what,
            applied,
        }
    }
}

impl<S: Conn> inbound::FdRead for TimedReader<'_, S> {
    fn read_with_fds(&mut self, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> io::Result<usize> {
        self.timed(|s| s.read_with_fds(buf, fds))
    }
    fn try_read_with_fds(
        &mut self,
        buf: &mut [u8],
        fds: &mut Vec<OwnedFd>,
    ) -> Option<io::Result<usize>> {
        self.stream.try_read_with_fds(buf, fds)
    }
}

impl<S: Conn> TimedReader<'_, S> {
    fn timed(&mut self, f: impl FnOnce(&mut S) -> io::Result<usize>) -> io::Result<usize> {
        let left = match self.deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(l) if !l.is_zero() => Some(l),
                _ => return Err(timed_out(self.what)),
            },
            None => None,
        };
        let t = match (self.idle, left) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if *self.applied != Some(t) {
            self.stream.set_read_timeout(t)?;
            *self.applied = Some(t);
        }
        match f(self.stream) {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Err(timed_out(self.what))
            }
            r => r,
        }
    }
}

impl<S: Conn> Read for TimedReader<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.timed(|s| s.read(buf))
    }
}

fn timed_out(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("timed out waiting for {what}"),
    )
}

/// A session keeps its message buffers between messages (a stream of large copies reuses
/// them); buffers above this size go back to the allocator once the session has been idle
/// for [`IDLE_RELEASE`], so idle sessions hold little.
const KEEP_BUFFER: usize = 1 << 20;
/// How long a session with large buffers may idle before they are released.
const IDLE_RELEASE: Duration = Duration::from_secs(1);

/// The in-data area of a complete message: the first `len` bytes of `buf`, which grows
/// (fresh memory from the allocator: calloc's untouched zero pages) when it is too short.
/// Reused bytes are not cleared. A reply returns each request's in segments, which the
/// executor fills; where a request declares a longer segment than it writes (a copy's
/// segment longer than its width times height), the rest holds earlier in data of this
/// same connection (its own device data), never another session's: the buffer is the
/// connection's own.
fn in_area(buf: &mut Vec<u8>, len: usize) -> &mut [u8] {
    if len > buf.len() {
        if len <= buf.capacity() {
            buf.resize(len, 0);
        } else {
            *buf = vec![0u8; len];
        }
    }
    &mut buf[..len]
}

/// Runs one session on a connected stream until the peer closes it, with the default
/// [`Timeouts`] and no connection bounds. Everything the session owns is freed when this
/// returns.
pub fn serve_connection<S: Conn>(stream: S, backend: &Arc<Backend>) -> io::Result<()> {
    serve_connection_with(stream, backend, Timeouts::default(), None)
}

/// Runs one session on a connected stream until the peer closes it, a timeout expires or
/// framing is lost. The first message must be a successful `Hello` and arrive within
/// `timeouts.handshake`; it promotes `admission` to a session. The session's executor is
/// created only then.
pub fn serve_connection_with<S: Conn>(
    mut stream: S,
    backend: &Arc<Backend>,
    timeouts: Timeouts,
    mut admission: Option<Admission>,
) -> io::Result<()> {
    stream.set_write_timeout(Some(timeouts.message))?;
    let hello_deadline = Instant::now() + timeouts.handshake;
    let mut session: Option<Session> = None;
    let mut _hangup: Option<HangupWatch> = None;
    let mut hdr = [0u8; size_of::<MessageHeader>()];
    let (mut ctrl, mut out, mut inp) = (Vec::new(), Vec::new(), Vec::new());
    let mut reply = ReplyBuilder::new();
    // Header and control area usually come in one read (see `inbound`).
    let mut ahead = inbound::Inbound::new();
    let mut applied = None;
    loop {
        let greeted = session.as_ref().is_some_and(Session::has_hello);
        let deadline = (!greeted).then_some(hello_deadline);
        // Between messages a session may idle (then its large buffers go back after
        // IDLE_RELEASE); a message that has started must flow.
        let large = [&ctrl, &out, &inp]
            .iter()
            .any(|b| b.capacity() > KEEP_BUFFER);
        let mut release = large;
        // Between messages the socket keeps the message timeout (or the shorter idle
        // release), so that steady traffic costs no `setsockopt`; a greeted session that
        // times out here just waits again. Bytes of the next message may be buffered
        // already.
        while ahead.buffered() == 0 {
            let idle = if release {
                IDLE_RELEASE.min(timeouts.message)
            } else {
                timeouts.message
            };
            let mut first = TimedReader::new(
                &mut stream,
                &mut applied,
                Some(idle),
                deadline,
                "the first message (Hello)",
            );
            // Spin first (the program's next call usually comes right behind the reply),
            // reading straight into the buffer where the stream can; else peek, then wait.
            let polled = if greeted && !timeouts.spin.is_zero() {
                ahead.spin_fill(&mut first, timeouts.spin)
            } else {
                inbound::Spin::Nothing
            };
            let got = match polled {
                inbound::Spin::Read(r) => r,
                inbound::Spin::Nothing => ahead.fill(&mut first),
                inbound::Spin::Unsupported => {
                    spin_until_readable(first.stream.as_fd(), timeouts.spin);
                    ahead.fill(&mut first)
                }
            };
            match got {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::TimedOut && greeted => {
                    if release {
                        for b in [&mut ctrl, &mut out, &mut inp] {
                            *b = Vec::new();
                        }
                        release = false;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        let mut r = TimedReader::new(
            &mut stream,
            &mut applied,
            Some(timeouts.message),
            deadline,
            if greeted {
                "the rest of a message"
            } else {
                "the rest of the first message (Hello)"
            },
        );
        let start = ahead.offset();
        ahead.read_exact(&mut r, &mut hdr)?;
        let header = match check_header(&hdr) {
            Ok(h) => h,
            Err(e) => {
                // Framing is lost: answer once and hang up.
                reply.clear();
                reply.push(
                    vcuda_protocol::RecordKind::Reply,
                    crate::session::SEQ_MALFORMED,
                    crate::session::malformed_status(),
                    &[],
                    0,
                );
                let _ = stream.write_all(reply.finish());
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("bad message header: {e}"),
                ));
            }
        };
        // Lengths are bounded by check_header (MAX_CTRL_LEN, MAX_DATA_LEN), and the buffers
        // grow only as the bytes arrive.
        ahead.read_vec(&mut r, &mut ctrl, header.ctrl_len as usize)?;
        ahead.read_vec(&mut r, &mut out, header.out_len as usize)?;
        let fds = ahead.claim(start, ahead.offset());
        if session.is_none() {
            // A complete first message: the connection takes a session slot now.
            if let Some(a) = &mut admission {
                a.promote()?;
            }
            let cancel = Cancel::default();
            let s = backend
                .new_session_with(cancel.clone())
                .map_err(|s| io::Error::other(format!("cannot start a session: {s}")))?;
            session = Some(s);
            if stream.passes_fds()
                && let Some(s) = session.as_mut()
            {
                s.pass_fds();
            }
            _hangup = Some(HangupWatch::start(
                stream.as_fd().try_clone_to_owned()?,
                cancel,
            )?);
        }
        let Some(session) = session.as_mut() else {
            return Err(io::Error::other("no session"));
        };
        let outcome = {
            let out_segs = DataSegs::from_slice(&mut out);
            let in_segs = DataSegs::from_slice(in_area(&mut inp, header.in_len as usize));
            session.handle_with_fds(
                &header,
                &ctrl,
                &out_segs,
                &in_segs,
                &mut reply,
                usize::MAX,
                fds,
            )
        };
        if outcome != Outcome::Silent {
            let mut iov = vec![IoSlice::new(reply.finish())];
            for &(off, len) in session.in_ranges() {
                // Ranges come from split_requests and lie inside `inp` (in_len bytes).
                if let Some(s) = inp.get(off as usize..(off + len) as usize) {
                    iov.push(IoSlice::new(s));
                }
            }
            write_all_vectored(&mut stream, &mut iov)?;
        }
        if outcome == Outcome::Malformed {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "malformed message",
            ));
        }
        if !session.has_hello() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the first message was not a successful Hello",
            ));
        }
    }
}

/// Says `ready` on stdout (see [`ServerConfig::notify_ready`]).
fn notify_ready(config: &ServerConfig) -> io::Result<()> {
    if config.notify_ready {
        // The real stdout, even while device printf is being captured.
        let mut o = crate::stdout::original()?;
        o.write_all(b"ready\n")?;
        o.flush()?;
    }
    Ok(())
}

/// Cancels a session's running work when its peer hangs up in the middle of a call (a
/// program killed while its kernel runs): a thread that sleeps in `poll` on the connection
/// for a peer shutdown (`POLLRDHUP`; it never reads) and on a pipe that closes when the
/// session ends. The session thread itself is busy in the call and cannot notice.
struct HangupWatch {
    done: Option<OwnedFd>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HangupWatch {
    fn start(conn: OwnedFd, cancel: Cancel) -> io::Result<Self> {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

        let (done_rd, done_wr) = nix::unistd::pipe().map_err(io::Error::from)?;
        let thread = std::thread::Builder::new()
            .name("vcuda-hangup".into())
            .spawn(move || {
                // Linux's peer-shutdown event (nix does not name it, so its `revents` of
                // the socket read as unknown flags: the wake-up is told apart by the pipe).
                let rdhup = PollFlags::from_bits_retain(libc::POLLRDHUP);
                let mut fds = [
                    PollFd::new(conn.as_fd(), rdhup),
                    PollFd::new(done_rd.as_fd(), PollFlags::POLLIN),
                ];
                loop {
                    match poll(&mut fds, PollTimeout::NONE) {
                        Err(nix::errno::Errno::EINTR) => {}
                        Err(e) => {
                            debug!("hang-up watch: {e}");
                            return;
                        }
                        Ok(_) => break,
                    }
                }
                // The session ended (its end of the pipe closed): nothing to stop.
                if fds[1].revents().is_some_and(|r| !r.is_empty()) {
                    return;
                }
                debug!("peer hung up; stopping the session's work");
                cancel.cancel();
            })?;
        Ok(Self {
            done: Some(done_wr),
            thread: Some(thread),
        })
    }
}

impl Drop for HangupWatch {
    fn drop(&mut self) {
        // Closing the pipe's write end wakes the thread.
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn write_all_vectored<S: Write>(stream: &mut S, mut bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
    while !bufs.is_empty() {
        match stream.write_vectored(bufs) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    stream.flush()
}

/// Connects to a backend (for tests and tools).
pub fn connect(listen: &Listen) -> io::Result<Box<dyn ReadWrite>> {
    Ok(match listen {
        Listen::Unix(p) => Box::new(UnixStream::connect(p)?),
        Listen::Fd(_) => return Err(io::ErrorKind::Unsupported.into()),
        Listen::Tcp(a) => {
            let s = TcpStream::connect(a)?;
            s.set_nodelay(true)?;
            Box::new(s)
        }
    })
}

/// A byte stream.
pub trait ReadWrite: Read + Write + Send {}
impl<T: Read + Write + Send> ReadWrite for T {}

#[cfg(test)]
mod tests {
    use std::os::fd::{AsRawFd, IntoRawFd};

    use super::*;

    #[test]
    fn an_inherited_descriptor_must_be_a_listening_unix_stream_socket() {
        assert!(matches!(Listen::parse("fd:3"), Listen::Fd(3)));
        assert!(matches!(Listen::parse("fd:x"), Listen::Unix(_)));
        assert!(inherited_listener(1 << 20).is_err(), "not open");
        let f = tempfile::tempfile().unwrap();
        assert!(inherited_listener(f.as_raw_fd()).is_err(), "a file");
        let (a, _b) = UnixStream::pair().unwrap();
        assert!(inherited_listener(a.as_raw_fd()).is_err(), "connected");
        let t = TcpListener::bind("127.0.0.1:0").unwrap();
        assert!(inherited_listener(t.as_raw_fd()).is_err(), "TCP");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let fd = UnixListener::bind(&path).unwrap().into_raw_fd();
        let l = inherited_listener(fd).unwrap();
        let _c = UnixStream::connect(&path).unwrap();
        assert!(l.accept().is_ok());
    }
}
