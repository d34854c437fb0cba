// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The vhost-user transport: serves the request queues of QEMU's `vhost-user-cuda-pci`
//! device (DEVICE.md), reading and writing guest memory directly.
//!
//! - [`chain`]: validation of descriptor chains against guest memory.
//! - [`device`]: the session table and chain dispatch (one worker thread per session).
//! - [`pages`]: guest pages a VM shares with a session, resolved to guest RAM's files.
//! - [`short`]: which calls a queue thread may run itself.
//! - [`backend`]: the `VhostUserBackend` implementation (features, config space, memory
//!   table, vring events, ring stop/restart/reset).
//! - [`Server`]: accepts one frontend connection at a time on a Unix socket and serves it;
//!   a new connection (QEMU restarted or reconnected) starts from a clean state.
//!
//! Layout as in rust-vmm's vhost-device crates: `main.rs` parses arguments into a
//! [`VhostUserConfig`] and calls [`start_backend`].

pub mod backend;
pub mod chain;
pub mod device;
pub mod migrate;
pub mod pages;
pub mod precopy;
pub mod short;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use log::{info, warn};
use thiserror::Error;
use vcuda_protocol::virtio::MAX_REQUEST_QUEUES;
use vhost::vhost_user::{Error as VhostUserError, Listener};
use vhost_user_backend::VhostUserDaemon;
use vm_memory::{GuestMemoryAtomic, GuestMemoryMmap};

pub use self::backend::VhostUserCuda;
pub use self::device::{Device, DeviceConfig, QueueThreadCalls, Threading};
pub use self::precopy::{Precopy, PrecopyConfig};
use crate::session::Backend;
use crate::worker::{ParentLink, Role, Workers};

/// Errors of the vhost-user transport.
#[derive(Debug, Error)]
pub enum Error {
    /// The queue count is out of range.
    #[error("Queue count {0} outside 1..={MAX_REQUEST_QUEUES}")]
    BadQueueCount(u32),
    /// The socket cannot be created.
    #[error("Cannot listen on the vhost-user socket")]
    Listen(#[source] VhostUserError),
    /// The daemon cannot be created.
    #[error("Cannot create the vhost-user daemon: {0}")]
    Daemon(String),
    /// The migration pre-copy's socket cannot be made.
    #[error("Cannot start the migration pre-copy: {0}")]
    Precopy(#[source] std::io::Error),
}

/// Settings of the vhost-user transport.
#[derive(Debug, Clone)]
pub struct VhostUserConfig {
    /// The Unix socket QEMU's chardev connects to.
    pub socket: PathBuf,
    /// Request queues; must equal QEMU's `num-request-queues`.
    pub queues: u32,
    /// Most sessions per connection.
    pub max_sessions: usize,
    /// Which calls a queue thread runs itself instead of handing them to the session's
    /// worker.
    pub queue_thread_calls: QueueThreadCalls,
    /// How long a queue thread keeps polling its ring, with the guest's kicks suppressed,
    /// after the last chain it found, before it sleeps again; zero: it never polls. While
    /// the guest keeps posting chains a polling queue thread takes a whole core.
    pub poll: Duration,
    /// A migration's pre-copy of device memory ([`precopy`]); only a backend that serves
    /// VMs in its own process ([`start_backend`]) has one.
    pub precopy: PrecopyConfig,
}

impl VhostUserConfig {
    /// The defaults for a backend on `socket` with `queues` queues.
    pub fn new(socket: PathBuf, queues: u32) -> Self {
        Self {
            socket,
            queues,
            max_sessions: 256,
            queue_thread_calls: QueueThreadCalls::default(),
            poll: Duration::ZERO,
            precopy: PrecopyConfig::default(),
        }
    }
}

/// How one connection ended.
#[derive(Debug)]
pub struct ConnectionEnd {
    /// Whether a frontend was accepted (else the daemon failed to start).
    pub connected: bool,
    /// The daemon's error, if it ended with one other than a disconnect.
    pub error: Option<String>,
}

/// Serves vhost-user connections on a socket, one at a time.
pub struct Server {
    /// `None` once a one-connection server (a worker's) has accepted its frontend.
    listener: Option<Listener>,
    /// Serve one connection, and close the listening socket as soon as it is accepted.
    once: bool,
    config: VhostUserConfig,
    backend: Arc<Backend>,
    /// The migration pre-copy, if configured.
    precopy: Option<Arc<Precopy>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("config", &self.config)
            .finish()
    }
}

impl Server {
    /// Listens on `config.socket` (replacing a stale socket file); sessions run on
    /// `backend`.
    pub fn new(config: VhostUserConfig, backend: Arc<Backend>) -> Result<Self, Error> {
        if config.queues == 0 || config.queues > MAX_REQUEST_QUEUES {
            return Err(Error::BadQueueCount(config.queues));
        }
        let listener = Listener::new(&config.socket, true).map_err(Error::Listen)?;
        let p = &config.precopy;
        let precopy = if p.listen.is_some() || p.from.is_some() {
            Some(Precopy::start(p).map_err(Error::Precopy)?)
        } else {
            None
        };
        Ok(Self {
            listener: Some(listener),
            once: false,
            backend,
            config,
            precopy,
        })
    }

    /// Serves one connection on `listener`, a listening Unix socket this server owns (a
    /// worker process's, handed over by the backend; its file is not removed at the end),
    /// which is closed as soon as the frontend is accepted: the worker can accept no other
    /// VM.
    pub fn from_listener(
        listener: std::os::unix::net::UnixListener,
        config: VhostUserConfig,
        backend: Arc<Backend>,
    ) -> Result<Self, Error> {
        if config.queues == 0 || config.queues > MAX_REQUEST_QUEUES {
            return Err(Error::BadQueueCount(config.queues));
        }
        Ok(Self {
            listener: Some(Listener::from(listener)),
            once: true,
            backend,
            config,
            precopy: None,
        })
    }

    /// The migration pre-copy, if configured.
    pub fn precopy(&self) -> Option<Arc<Precopy>> {
        self.precopy.clone()
    }

    /// Waits for a frontend, serves it until it disconnects and cleans up after it: every
    /// session of the connection is destroyed.
    pub fn serve_one(&mut self) -> Result<ConnectionEnd, Error> {
        self.serve_one_then(|| {})
    }

    /// [`Server::serve_one`], calling `disconnected` once the frontend is gone, before the
    /// clean-up.
    pub fn serve_one_then(&mut self, disconnected: impl FnOnce()) -> Result<ConnectionEnd, Error> {
        let mem = GuestMemoryAtomic::new(GuestMemoryMmap::new());
        let cuda = Arc::new(
            VhostUserCuda::new(
                self.backend.clone(),
                self.config.queues,
                DeviceConfig {
                    max_sessions: self.config.max_sessions,
                    threading: Threading::PerSession,
                    queue_thread_calls: self.config.queue_thread_calls,
                },
                mem.clone(),
            )
            .with_poll(self.config.poll)
            .with_precopy(self.precopy.clone()),
        );
        let mut daemon = VhostUserDaemon::new("vcuda-vhost".into(), cuda.clone(), mem)
            .map_err(|e| Error::Daemon(e.to_string()))?;
        let Some(listener) = self.listener.as_mut() else {
            return Err(Error::Daemon(
                "this server served its one connection".into(),
            ));
        };
        let started = daemon.start(listener);
        if self.once {
            self.listener = None;
        }
        let end = match started {
            Ok(()) => {
                info!("vhost-user frontend connected");
                if let Some(p) = &self.precopy {
                    p.attach(cuda.device());
                }
                let error = match daemon.wait() {
                    Ok(())
                    | Err(vhost_user_backend::Error::HandleRequest(
                        VhostUserError::Disconnected | VhostUserError::PartialMessage,
                    )) => None,
                    Err(e) => Some(e.to_string()),
                };
                ConnectionEnd {
                    connected: true,
                    error,
                }
            }
            Err(e) => ConnectionEnd {
                connected: false,
                error: Some(e.to_string()),
            },
        };
        disconnected();
        if let Some(p) = &self.precopy {
            p.detach();
        }
        for h in daemon.get_epoll_handlers() {
            h.send_exit_event();
        }
        drop(daemon);
        cuda.disconnect();
        Ok(end)
    }
}

/// Serves vhost-user connections on `config.socket` forever, each in a worker process of
/// its own (see [`crate::worker`]): one VM is one tenant.
pub fn start_workers(config: VhostUserConfig, workers: Workers) -> Result<(), Error> {
    use std::os::fd::{AsRawFd, BorrowedFd};

    if config.queues == 0 || config.queues > MAX_REQUEST_QUEUES {
        return Err(Error::BadQueueCount(config.queues));
    }
    let listener = Listener::new(&config.socket, true).map_err(Error::Listen)?;
    info!(
        "vhost-user backend listening on {} ({} request queues, {:?} executor, a worker \
         process per connection, queue-thread calls {:?}, polling {} µs)",
        config.socket.display(),
        config.queues,
        workers.kind(),
        config.queue_thread_calls,
        config.poll.as_micros()
    );
    loop {
        // SAFETY: the listener stays open for the whole loop.
        let fd = unsafe { BorrowedFd::borrow_raw(listener.as_raw_fd()) }.try_clone_to_owned();
        let started = Instant::now();
        let r = fd.and_then(|fd| workers.spawn(Role::VhostUser, Some(fd)));
        let ok = match r {
            Ok(w) => {
                let pid = w.pid();
                match w.supervise(None, workers.grace(), || None) {
                    Ok(st) if st.success() => {
                        info!("vhost-user worker {pid} exited");
                        true
                    }
                    Ok(st) => {
                        warn!("vhost-user worker {pid} ended: {st}");
                        false
                    }
                    Err(e) => {
                        warn!("supervising vhost-user worker {pid}: {e}");
                        false
                    }
                }
            }
            Err(e) => {
                warn!("cannot start a vhost-user worker: {e}");
                false
            }
        };
        // A worker that keeps failing at once must not make this loop spin.
        if !ok && started.elapsed() < Duration::from_secs(1) {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

/// In a worker process: serves one frontend from `listener` (handed over by the backend),
/// saying on `link` when it disconnected.
pub fn serve_worker(
    config: VhostUserConfig,
    backend: Arc<Backend>,
    listener: std::os::fd::OwnedFd,
    mut link: ParentLink,
) -> Result<(), Error> {
    let mut server = Server::from_listener(listener.into(), config, backend)?;
    let end = server.serve_one_then(|| link.ended())?;
    match end.error {
        None => info!("vhost-user frontend disconnected"),
        // No frontend served (the accept failed, say): the worker's failure, so that the
        // backend waits before it starts the next one instead of spinning.
        Some(e) if !end.connected => {
            return Err(Error::Daemon(format!("no frontend was served: {e}")));
        }
        Some(e) => warn!("vhost-user connection ended: {e}"),
    }
    Ok(())
}

/// Serves vhost-user connections on `config.socket` forever.
pub fn start_backend(config: VhostUserConfig, backend: Arc<Backend>) -> Result<(), Error> {
    let mut server = Server::new(config, backend)?;
    info!(
        "vhost-user backend listening on {} ({} request queues, queue-thread calls {:?}, \
         polling {} µs)",
        server.config.socket.display(),
        server.config.queues,
        server.config.queue_thread_calls,
        server.config.poll.as_micros()
    );
    loop {
        let end = server.serve_one()?;
        match end.error {
            None => info!("vhost-user frontend disconnected"),
            Some(e) => warn!("vhost-user connection ended: {e}"),
        }
    }
}
