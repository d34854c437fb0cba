// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Where the socket transport listens ([`Listen`]), its limits, timeouts and access rules
//! ([`ServerConfig`]), and connecting to it ([`connect`]).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::access::AccessPolicy;

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
