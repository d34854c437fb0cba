// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The socket transport: one session per connection, on a Unix socket or TCP (for a GPU on
//! another machine).
//!
//! Framing on the stream, guest to host: `[MessageHeader][control area][out data]`; host to
//! guest: `[ReplyHeader][records][in data of each record, in record order]`. A message
//! flagged `MSG_NO_WAIT` gets no reply unless one of its requests failed.

use std::io::{self, IoSlice, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use log::{debug, error, info, warn};
use vcuda_protocol::{MessageHeader, ReplyBuilder};
use zerocopy::FromBytes;

use crate::data::DataSegs;
use crate::session::{Backend, Outcome, check_header};

/// Where the socket transport listens.
#[derive(Debug, Clone)]
pub enum Listen {
    /// A Unix socket path.
    Unix(PathBuf),
    /// A TCP address (`host:port`).
    Tcp(String),
}

impl Listen {
    /// Parses `tcp:HOST:PORT` or a path.
    pub fn parse(s: &str) -> Self {
        match s.strip_prefix("tcp:") {
            Some(addr) => Listen::Tcp(addr.to_owned()),
            None => Listen::Unix(PathBuf::from(s)),
        }
    }
}

/// The socket path guest and backend use when nothing says otherwise:
/// `$XDG_RUNTIME_DIR/vcuda.sock`, else `/tmp/vcuda-$UID.sock`.
pub fn default_socket_path() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => Path::new(&d).join("vcuda.sock"),
        _ => PathBuf::from(format!("/tmp/vcuda-{}.sock", nix::unistd::getuid())),
    }
}

/// Limits of the socket server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Most concurrent sessions; further connections are closed at once.
    pub max_sessions: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self { max_sessions: 256 }
    }
}

/// Serves `backend` on `listen` until the process ends.
pub fn serve(listen: &Listen, backend: Arc<Backend>, config: ServerConfig) -> io::Result<()> {
    let active = Arc::new(AtomicUsize::new(0));
    match listen {
        Listen::Unix(path) => {
            let listener = bind_unix(path)?;
            info!(
                "serving {:?} executor on {}",
                backend.kind(),
                path.display()
            );
            for stream in listener.incoming() {
                match stream {
                    Ok(s) => spawn(s, &backend, &active, &config),
                    Err(e) => warn!("accept: {e}"),
                }
            }
        }
        Listen::Tcp(addr) => {
            let listener = TcpListener::bind(addr)?;
            info!(
                "serving {:?} executor on tcp:{}",
                backend.kind(),
                listener.local_addr()?
            );
            for stream in listener.incoming() {
                match stream {
                    Ok(s) => {
                        let _ = s.set_nodelay(true);
                        spawn(s, &backend, &active, &config)
                    }
                    Err(e) => warn!("accept: {e}"),
                }
            }
        }
    }
    Ok(())
}

/// Binds a Unix socket, replacing a stale socket file nobody listens on.
pub fn bind_unix(path: &Path) -> io::Result<UnixListener> {
    match UnixListener::bind(path) {
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
            if UnixStream::connect(path).is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("{} is in use by a running backend", path.display()),
                ));
            }
            std::fs::remove_file(path)?;
            UnixListener::bind(path)
        }
        r => r,
    }
}

fn spawn<S: Read + Write + Send + 'static>(
    stream: S,
    backend: &Arc<Backend>,
    active: &Arc<AtomicUsize>,
    config: &ServerConfig,
) {
    if active.fetch_add(1, Ordering::SeqCst) >= config.max_sessions {
        active.fetch_sub(1, Ordering::SeqCst);
        warn!(
            "session limit {} reached; connection refused",
            config.max_sessions
        );
        return;
    }
    let backend = backend.clone();
    let active = active.clone();
    let r = std::thread::Builder::new()
        .name("vcuda-session".into())
        .spawn(move || {
            // A bug in a session must not take the daemon or other sessions down.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                serve_connection(stream, &backend)
            }));
            match r {
                Ok(Ok(())) => debug!("session closed"),
                Ok(Err(e)) => debug!("session ended: {e}"),
                Err(_) => error!("session thread panicked; session dropped"),
            }
            active.fetch_sub(1, Ordering::SeqCst);
        });
    if let Err(e) = r {
        error!("cannot start a session thread: {e}");
    }
}

/// Runs one session on a connected stream until the peer closes it. Everything the session
/// owns is freed when this returns.
pub fn serve_connection<S: Read + Write>(mut stream: S, backend: &Arc<Backend>) -> io::Result<()> {
    let mut session = backend
        .new_session()
        .map_err(|s| io::Error::other(format!("cannot start a session: {s}")))?;
    let mut hdr = [0u8; size_of::<MessageHeader>()];
    let (mut ctrl, mut out, mut inp) = (Vec::new(), Vec::new(), Vec::new());
    let mut reply = ReplyBuilder::new();
    loop {
        match stream.read_exact(&mut hdr) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let header = match check_header(&hdr) {
            Ok(h) => h,
            Err(e) => {
                // Framing is lost: answer once and hang up.
                warn!("bad message header: {e}");
                reply.clear();
                reply.push(
                    vcuda_protocol::RecordKind::Reply,
                    crate::session::SEQ_MALFORMED,
                    crate::session::malformed_status(),
                    &[],
                    0,
                );
                let _ = stream.write_all(reply.finish());
                return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string()));
            }
        };
        let _ = MessageHeader::read_from_bytes(&hdr);
        // Lengths are bounded by check_header (MAX_CTRL_LEN, MAX_DATA_LEN).
        read_into(&mut stream, &mut ctrl, header.ctrl_len as usize)?;
        read_into(&mut stream, &mut out, header.out_len as usize)?;
        inp.clear();
        inp.resize(header.in_len as usize, 0);
        let outcome = {
            let out_segs = DataSegs::from_slice(&mut out);
            let in_segs = DataSegs::from_slice(&mut inp);
            session.handle(&header, &ctrl, &out_segs, &in_segs, &mut reply, usize::MAX)
        };
        if outcome == Outcome::Silent {
            continue;
        }
        let mut iov = vec![IoSlice::new(reply.finish())];
        for &(off, len) in session.in_ranges() {
            // Ranges come from split_requests and lie inside `inp` (in_len bytes).
            if let Some(s) = inp.get(off as usize..(off + len) as usize) {
                iov.push(IoSlice::new(s));
            }
        }
        write_all_vectored(&mut stream, &mut iov)?;
        if outcome == Outcome::Malformed {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "malformed message",
            ));
        }
    }
}

fn read_into<S: Read>(stream: &mut S, buf: &mut Vec<u8>, len: usize) -> io::Result<()> {
    buf.clear();
    buf.resize(len, 0);
    stream.read_exact(buf)
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
