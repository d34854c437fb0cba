// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The listening side: accepting connections on a Unix socket (a path, or one inherited as a
//! file descriptor) or TCP, checking peers against the access policy and the connection
//! bounds, and serving each on a thread ([`Sessions::Threads`]) or in a worker process of
//! its own ([`Sessions::Workers`]).

use crate::executor::Tenant;
use std::io::{self, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use log::{debug, error, info};

use super::access::{bind_unix_private, check_tcp_listen, peer_cred, prepare_socket_dir};
use super::config::{Listen, ServerConfig, Timeouts};
use super::conn::Conn;
use super::connection::{Admission, serve_connection_with};
use super::limits::{Bounds, Closer, PeerKey, Ticket, Tracker};
use super::tls;
use crate::log_limit::LogLimiter;
use crate::metrics::{self, Refusal};
use crate::session::Backend;
use crate::worker::{ParentLink, Role, Workers};

/// Log lines about refused, timed-out and malformed connections: a flood of them cannot
/// flood the log.
static LIMITER: LazyLock<LogLimiter> =
    LazyLock::new(|| LogLimiter::new(module_path!(), 20, Duration::from_secs(10)));

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
            if let Sessions::Workers(w) = &sessions {
                w.refill_warm();
            }
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
                    metrics::refused(Refusal::Access);
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
            if let Sessions::Workers(w) = &sessions {
                w.refill_warm();
            }
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
        .inspect_err(|e| {
            metrics::refused(Refusal::Bounds);
            LIMITER.warn(format_args!("connection from {peer} refused: {e}"))
        })
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
                let tenant = match peer {
                    // A local client's sessions share with its uid's; a TCP client's with
                    // none (an address is no identity).
                    PeerKey::Uid(uid) => Tenant::uid(uid),
                    PeerKey::Ip(_) => Tenant::unique(),
                };
                serve_connection_with(
                    stream,
                    &backend,
                    tenant,
                    timeouts,
                    Some(Admission::Ticket(ticket)),
                )
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
    // The worker started ahead of this connection, else a new one.
    let conn: OwnedFd = stream.into();
    let handed = match workers.take_warm() {
        Some(w) => w.hand(conn),
        None => Err(conn),
    };
    let worker = match handed {
        Ok(w) => Ok(w),
        Err(conn) => workers.spawn(Role::Socket, Some(conn)),
    };
    // The next one for the next connection (on this thread, the accept loop's).
    workers.refill_warm();
    let worker = match worker {
        Ok(w) => w,
        Err(e) => {
            metrics::refused(Refusal::Workers);
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
                Ok(()) => Some(u32::try_from(ticket.sessions()).unwrap_or(u32::MAX)),
                Err(e) => {
                    metrics::refused(Refusal::Bounds);
                    LIMITER.warn(format_args!("session from {peer} refused: {e}"));
                    None
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
            let mut tenant = Tenant::unique();
            if let Ok(c) = peer_cred(&s) {
                peer = PeerKey::Uid(c.uid).to_string();
                tenant = Tenant::uid(c.uid);
            }
            serve_connection_with(s, backend, tenant, config.timeouts, admission)
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
                    tls::TlsConn::accept(tls.clone(), s, deadline).and_then(|t| {
                        serve_connection_with(
                            t,
                            backend,
                            Tenant::unique(),
                            config.timeouts,
                            admission,
                        )
                    })
                }
                None => {
                    serve_connection_with(s, backend, Tenant::unique(), config.timeouts, admission)
                }
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
