// SPDX-License-Identifier: Apache-2.0 OR MIT
//! A migration's pre-copy of device memory ([`crate::migrate::precopy`]) between two
//! vhost-user backends.
//!
//! The source (`--precopy-listen PATH`) listens on a Unix socket; a destination backend
//! started for an incoming migration (`--precopy-from PATH`) connects to it, and from then
//! on the source sends the connected VM's device memory, block by block, taking each
//! session's lock only between its calls, and sends again every block that changed, round
//! after round, until QEMU stops the VM and asks for the device state: the source then ends
//! the stream, and once the destination answered that it kept every block, the state names
//! those blocks by checksum instead of carrying them. Without a pre-copy, or when it broke,
//! the state carries every block, as before.
//!
//! The socket is the operator's: it gives whoever connects the VM's device memory. It is
//! made with mode 0600 in a directory the operator chooses; between two hosts it is
//! forwarded through an authenticated channel (`ssh -L`, MIGRATION.md).

use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use log::{info, warn};

use super::device::{Device, WeakDevice};
use crate::migrate::MigrateError;
use crate::migrate::precopy::{self, Block, Received, Sent};
use crate::migrate::state::DeviceState;

/// How long a round may wait for a session's running call before it moves on.
const SLOT_WAIT: Duration = Duration::from_millis(20);
/// Pause after a round that found nothing to send; it doubles after each such round, up
/// to [`MAX_IDLE_PAUSE`] (a round re-reads all device memory), and starts again after a
/// round that sent something.
const IDLE_PAUSE: Duration = Duration::from_millis(100);
/// The longest pause between rounds.
const MAX_IDLE_PAUSE: Duration = Duration::from_millis(800);
/// How long a write to, or the answer of, the destination may take.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a destination keeps trying to reach its source.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The pre-copy settings of a vhost-user backend.
#[derive(Debug, Clone, Default)]
pub struct PrecopyConfig {
    /// Serve this backend's device memory ahead of a migration on this Unix socket.
    pub listen: Option<PathBuf>,
    /// Receive an incoming migration's device memory ahead of it from this Unix socket.
    pub from: Option<PathBuf>,
}

/// A connection to a destination: the stream, and what it was sent.
struct Link {
    stream: UnixStream,
    sent: Sent,
    /// Which connection it is (a sender thread serves only its own).
    id: u64,
}

/// Both ends of the pre-copy, as configured.
#[derive(Default)]
pub struct Precopy {
    /// The device of the VM connected now (source).
    device: Mutex<Option<WeakDevice>>,
    /// The destination connected now (source).
    link: Mutex<Option<Link>>,
    /// What was received (destination).
    received: Option<Arc<Mutex<Received>>>,
}

impl std::fmt::Debug for Precopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Precopy")
            .field("receiving", &self.received.is_some())
            .finish()
    }
}

impl Precopy {
    /// Starts what `config` asks for: the source's listener (bound before this returns)
    /// and the destination's receiver (which connects in the background).
    pub fn start(config: &PrecopyConfig) -> io::Result<Arc<Self>> {
        let received = config
            .from
            .as_ref()
            .map(|_| Arc::new(Mutex::new(Received::default())));
        let p = Arc::new(Self {
            received: received.clone(),
            ..Self::default()
        });
        if let Some(path) = &config.listen {
            let listener = listen(path)?;
            info!("pre-copy: serving device memory on {}", path.display());
            let weak = Arc::downgrade(&p);
            spawn("vcuda-precopy", move || accept_loop(listener, weak))?;
        }
        if let (Some(path), Some(into)) = (config.from.clone(), received) {
            spawn("vcuda-precopy-in", move || receive_from(&path, &into))?;
        }
        Ok(p)
    }

    /// The VM connected: its device is what the source serves.
    pub fn attach(&self, device: &Device) {
        *lock(&self.device) = Some(device.downgrade());
    }

    /// The VM disconnected.
    pub fn detach(&self) {
        *lock(&self.device) = None;
        *lock(&self.link) = None;
    }

    /// At the stop, on the source: ends the stream; what the destination holds, if it
    /// answered that it kept every block.
    pub fn finish(&self) -> Option<Sent> {
        let mut link = lock(&self.link).take()?;
        match precopy::finish(&mut link.stream) {
            Ok(true) => Some(link.sent),
            Ok(false) => {
                warn!("pre-copy: the destination dropped blocks; all of them go now");
                None
            }
            Err(e) => {
                warn!("pre-copy: the destination did not answer ({e}); all blocks go now");
                None
            }
        }
    }

    /// On the destination: puts the blocks the state names by checksum back into it.
    pub fn resolve(&self, state: &mut DeviceState) -> Result<(), MigrateError> {
        let Some(received) = &self.received else {
            return Ok(());
        };
        let mut r = lock(received);
        let used = r.resolve(state)?;
        if used > 0 {
            info!("pre-copy: {used} bytes of device memory received ahead");
        }
        // One migration: what is left is stale.
        *r = Received::default();
        Ok(())
    }
}

/// Binds `path` (replacing a stale socket file), readable by this user only.
fn listen(path: &Path) -> io::Result<UnixListener> {
    if let Ok(m) = std::fs::symlink_metadata(path)
        && m.file_type().is_socket()
    {
        std::fs::remove_file(path)?;
    }
    let l = UnixListener::bind(path).map_err(|e| {
        io::Error::new(e.kind(), format!("pre-copy socket {}: {e}", path.display()))
    })?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(l)
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> io::Result<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map(drop)
}

/// Source: takes destinations as they connect (a new one replaces the last), each served
/// by a sender thread of its own.
fn accept_loop(listener: UnixListener, p: std::sync::Weak<Precopy>) {
    let mut id = 0;
    for stream in listener.incoming() {
        let Some(pre) = p.upgrade() else { return };
        let mut stream = match stream {
            Ok(s) => s,
            Err(e) => {
                warn!("pre-copy: accept: {e}");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let hello = stream
            .set_write_timeout(Some(IO_TIMEOUT))
            .and_then(|()| stream.set_read_timeout(Some(IO_TIMEOUT)))
            .and_then(|()| precopy::write_hello(&mut stream));
        if let Err(e) = hello {
            warn!("pre-copy: a destination connected but {e}");
            continue;
        }
        id += 1;
        info!("pre-copy: a destination connected");
        *lock(&pre.link) = Some(Link {
            stream,
            sent: Sent::default(),
            id,
        });
        let weak = p.clone();
        if let Err(e) = spawn("vcuda-precopy-out", move || send_rounds(&weak, id)) {
            warn!("pre-copy: no sender thread: {e}");
            *lock(&pre.link) = None;
        }
    }
}

/// Source: sends the device's blocks to connection `id`, round after round, until the
/// connection is ended or replaced.
fn send_rounds(p: &std::sync::Weak<Precopy>, id: u64) {
    let (mut blocks, mut bytes) = (0u64, 0u64);
    let t = Instant::now();
    let mut pause = IDLE_PAUSE;
    loop {
        let Some(pre) = p.upgrade() else { return };
        let device = lock(&pre.device).clone();
        let mut sent_any = false;
        for session in device
            .as_ref()
            .map(WeakDevice::session_ids)
            .unwrap_or_default()
        {
            let Some(device) = &device else { break };
            let mut after = None;
            // A chunk the destination holds unchanged is not even packed.
            let holds = |addr: u64, index: u32, sum: &[u8; 16]| {
                lock(&pre.link)
                    .as_ref()
                    .is_some_and(|l| l.sent.holds(session, addr, index, sum))
            };
            while let Some(c) =
                device.precopy_block(session, after, &holds, Instant::now() + SLOT_WAIT)
            {
                after = Some((c.addr, c.index));
                let Some(block) = c.packed else { continue };
                let place = (session, c.addr, c.index);
                let mut l = lock(&pre.link);
                let Some(link) = l.as_mut().filter(|l| l.id == id) else {
                    return;
                };
                let n = block.len() as u64;
                if let Err(e) = precopy::write_block(
                    &mut link.stream,
                    &Block {
                        place,
                        bytes: block,
                    },
                ) {
                    warn!("pre-copy: the destination went away ({e})");
                    *l = None;
                    return;
                }
                link.sent.0.insert(place, c.sum);
                sent_any = true;
                blocks += 1;
                bytes += n;
            }
        }
        if !sent_any {
            if lock(&pre.link).as_ref().is_none_or(|l| l.id != id) {
                info!(
                    "pre-copy: sent {blocks} blocks, {bytes} bytes, in {:.1} s",
                    t.elapsed().as_secs_f64()
                );
                return;
            }
            drop(pre);
            std::thread::sleep(pause);
            pause = (pause * 2).min(MAX_IDLE_PAUSE);
        } else {
            pause = IDLE_PAUSE;
        }
    }
}

/// Destination: connects to the source at `path` and receives its blocks.
fn receive_from(path: &Path, into: &Mutex<Received>) {
    let t = Instant::now();
    let mut stream = loop {
        match UnixStream::connect(path) {
            Ok(s) => break s,
            Err(e) if t.elapsed() > CONNECT_TIMEOUT => {
                warn!("pre-copy: cannot reach {}: {e}", path.display());
                return;
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    info!("pre-copy: receiving from {}", path.display());
    let cap = crate::memsize::host_memory().map_or(u64::MAX, |m| m / 2);
    let t = Instant::now();
    match precopy::receive(&mut stream, into, cap) {
        Ok(()) => {
            let r = lock(into);
            info!(
                "pre-copy: received {} blocks, {} bytes, in {:.1} s{}",
                r.len(),
                r.bytes(),
                t.elapsed().as_secs_f64(),
                if r.dropped { " (some dropped)" } else { "" }
            );
        }
        Err(e) => warn!("pre-copy: the stream from the source ended: {e}"),
    }
}
