// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The socket transport: one session per connection, on a Unix socket or TCP (for a GPU on
//! another machine).
//!
//! Framing on the stream, guest to host: `[MessageHeader][control area][out data]`; host to
//! guest: `[ReplyHeader][records][in data of each record, in record order]`. A message
//! flagged `MSG_NO_WAIT` gets no reply unless one of its requests failed.
//!
//! - `config`: where to listen ([`Listen`]), limits, timeouts and access rules; [`connect`].
//! - `conn`: [`Conn`], the streams served (file descriptors from a Unix socket).
//! - `server`: accepting, admitting and dispatching connections ([`serve`], [`serve_worker`]).
//! - `connection`: one session's message loop ([`serve_connection_with`]).
//! - `timed`, `hangup`: reads with timeouts; cancelling work when the peer hangs up.
//! - [`inbound`]: read-ahead of messages and their descriptors; `access`: who may connect
//!   and the socket's file; `limits`: connection bounds; [`tls`]: mutual TLS over TCP.
//! - `ring`: `Wire`, the connection as the message loop sees it: the socket,
//!   then the call ring a `Hello` brought (the `vcuda-ring` crate).

mod access;
mod config;
mod conn;
mod connection;
mod hangup;
pub mod inbound;
mod limits;
mod ring;
mod server;
mod timed;
pub mod tls;

pub use access::{
    AccessPolicy, PeerCred, SOCKET_DIR_NAME, SOCKET_FILE_NAME, bind_unix, bind_unix_private,
    check_tcp_listen, default_socket_path, default_socket_path_for, peer_cred, prepare_socket_dir,
    resolve_group,
};
pub use config::{Listen, ReadWrite, ServerConfig, Timeouts, connect};
pub use conn::{Conn, MAX_FDS_PER_READ};
pub use connection::{Admission, serve_connection, serve_connection_with};
pub use limits::{Bounds, Closer, PeerKey, Refusal, Ticket, Tracker};
pub use server::{Sessions, serve, serve_worker};
