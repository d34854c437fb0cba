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
//! The destination connected must be the migration's destination: a state whose blocks
//! are named by checksum loads only where they were received.
//!
//! The socket is the operator's: it gives whoever connects the VM's device memory. It is
//! made with mode 0600 (bound under a umask that allows no one else) at a path the
//! operator chooses, and a peer of another user is refused; between two hosts it is
//! forwarded through an authenticated channel (`ssh -L`, MIGRATION.md).

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use log::{info, warn};

use super::device::{Device, WeakDevice};
use crate::migrate::MigrateError;
use crate::migrate::precopy::{self, Block, Place, Received, Sent};
use crate::migrate::state::DeviceState;

/// How long a round may wait for a session's running call before it moves on (and takes
/// the session up where it stopped in the next round).
const SLOT_WAIT: Duration = Duration::from_millis(20);
/// Pause after a round that found nothing to send; it doubles after each such round, up
/// to [`MAX_IDLE_PAUSE`]. After a round that sent something the pause is as long as the
/// round took (at least this), so the rounds take at most about half a core.
const IDLE_PAUSE: Duration = Duration::from_millis(100);
/// The longest pause between rounds.
const MAX_IDLE_PAUSE: Duration = Duration::from_millis(800);
/// How long one write to, or the answer of, the destination may take; past it the
/// pre-copy is given up (at the stop: everything travels in the state).
const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a destination keeps trying to reach its source.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a destination may stay connected without a migration coming: the rounds
/// re-read all device memory, so a forgotten destination must not keep them going.
const MAX_CONNECTED: Duration = Duration::from_secs(30 * 60);
/// The destination's cap when the host's memory cannot be read.
const FALLBACK_CAP: u64 = 4 << 30;

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
    /// The stop came (source): the sender packs and sends nothing more.
    stopping: AtomicBool,
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
            spawn("vcuda-precopy", move || accept_loop(&listener, &weak))?;
        }
        if let (Some(path), Some(into)) = (config.from.clone(), received) {
            spawn("vcuda-precopy-in", move || receive_from(&path, &into))?;
        }
        Ok(p)
    }

    /// The VM connected: its device is what the source serves.
    pub fn attach(&self, device: &Device) {
        *lock(&self.device) = Some(device.downgrade());
        self.stopping.store(false, Ordering::SeqCst);
    }

    /// The VM disconnected.
    pub fn detach(&self) {
        *lock(&self.device) = None;
        *lock(&self.link) = None;
    }

    /// Blocks the destination holds (destination; 0 on a source).
    pub fn received_blocks(&self) -> usize {
        self.received.as_ref().map_or(0, |r| lock(r).len())
    }

    /// At the stop, on the source: ends the stream; what the destination holds, if it
    /// answered that it kept every block. Waits for a block being written (at most
    /// 2 s) and for the answer (as long).
    pub fn finish(&self) -> Option<Sent> {
        // The sender packs nothing more and ends after the block it may be writing.
        self.stopping.store(true, Ordering::SeqCst);
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

    /// On the destination: puts the blocks the state names by checksum back into it. What
    /// was received is forgotten either way (one migration).
    pub fn resolve(&self, state: &mut DeviceState) -> Result<(), MigrateError> {
        let Some(received) = &self.received else {
            return Ok(());
        };
        let mut r = lock(received);
        let used = r.resolve(state);
        r.clear();
        let used = used?;
        if used > 0 {
            info!("pre-copy: {used} bytes of device memory received ahead");
        }
        Ok(())
    }
}

/// Binds `path` (replacing a stale socket file) under a umask that leaves it to this
/// user only, so that no one else can connect between the bind and the chmod.
fn listen(path: &Path) -> io::Result<UnixListener> {
    use nix::sys::stat::{Mode, umask};
    if let Ok(m) = std::fs::symlink_metadata(path)
        && m.file_type().is_socket()
    {
        std::fs::remove_file(path)?;
    }
    let old = umask(Mode::from_bits_truncate(0o077));
    let l = UnixListener::bind(path);
    umask(old);
    let l = l.map_err(|e| {
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

/// Whether the peer of `s` runs as this process's user.
fn same_user(s: &UnixStream) -> bool {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    getsockopt(s, PeerCredentials).is_ok_and(|c| c.uid() == nix::unistd::geteuid().as_raw())
}

/// Source: takes destinations as they connect (a new one replaces the last), each served
/// by a sender thread of its own.
fn accept_loop(listener: &UnixListener, p: &Weak<Precopy>) {
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
        if !same_user(&stream) {
            warn!("pre-copy: refused a peer of another user");
            continue;
        }
        let hello = stream
            .set_write_timeout(Some(IO_TIMEOUT))
            .and_then(|()| stream.set_read_timeout(Some(IO_TIMEOUT)))
            .and_then(|()| precopy::write_hello(&mut stream));
        if let Err(e) = hello {
            warn!("pre-copy: a destination connected but {e}");
            continue;
        }
        id += 1;
        let mut link = lock(&pre.link);
        if link.is_some() {
            warn!("pre-copy: a new destination connected; the last one is dropped");
        } else {
            info!("pre-copy: a destination connected");
        }
        *link = Some(Link {
            stream,
            sent: Sent::default(),
            id,
        });
        drop(link);
        let weak = p.clone();
        if let Err(e) = spawn("vcuda-precopy-out", move || send_rounds(&weak, id)) {
            warn!("pre-copy: no sender thread: {e}");
            *lock(&pre.link) = None;
        }
    }
}

/// A sender's progress through one session's chunks, across rounds.
#[derive(Default)]
struct Walk {
    /// The device's token for the session.
    token: u64,
    /// Where the walk stopped (a call of the session ran too long): it goes on from there.
    after: Option<(u64, u32)>,
    /// The chunks seen since the walk began at the first chunk.
    seen: HashSet<(u64, u32)>,
}

/// What one round did.
enum Round {
    /// It sent this many blocks and bytes.
    Sent(u64, u64),
    /// The connection is gone, replaced or stopping: the sender ends.
    Over,
}

/// Source: sends the device's blocks to connection `id`, round after round, until the
/// connection is ended or replaced.
fn send_rounds(p: &Weak<Precopy>, id: u64) {
    let (mut blocks, mut bytes) = (0u64, 0u64);
    let t = Instant::now();
    let mut pause = IDLE_PAUSE;
    let mut walks: HashMap<u64, Walk> = HashMap::new();
    loop {
        let Some(pre) = p.upgrade() else { return };
        if t.elapsed() > MAX_CONNECTED {
            warn!("pre-copy: no migration came in {MAX_CONNECTED:?}; the destination is dropped");
            let mut l = lock(&pre.link);
            if l.as_ref().is_some_and(|l| l.id == id) {
                *l = None;
            }
            return;
        }
        let started = Instant::now();
        match round(&pre, id, &mut walks) {
            Round::Over => {
                info!(
                    "pre-copy: sent {blocks} blocks, {bytes} bytes, in {:.1} s",
                    t.elapsed().as_secs_f64()
                );
                return;
            }
            Round::Sent(0, _) => {
                drop(pre);
                std::thread::sleep(pause);
                pause = (pause * 2).min(MAX_IDLE_PAUSE);
            }
            Round::Sent(n, b) => {
                blocks += n;
                bytes += b;
                drop(pre);
                pause = IDLE_PAUSE;
                std::thread::sleep(started.elapsed().clamp(IDLE_PAUSE, MAX_IDLE_PAUSE));
            }
        }
    }
}

/// Runs `f` on connection `id`'s link; [`Round::Over`] if it is gone, replaced or
/// stopping, or `f` fails to write (the link is then dropped).
fn with_link(pre: &Precopy, id: u64, f: impl FnOnce(&mut Link) -> io::Result<()>) -> Option<()> {
    let mut l = lock(&pre.link);
    let link = l.as_mut().filter(|l| l.id == id)?;
    if pre.stopping.load(Ordering::SeqCst) {
        return None;
    }
    if let Err(e) = f(link) {
        warn!("pre-copy: the destination went away ({e})");
        *l = None;
        return None;
    }
    Some(())
}

/// One round over the device's sessions.
fn round(pre: &Precopy, id: u64, walks: &mut HashMap<u64, Walk>) -> Round {
    let device = lock(&pre.device).clone();
    let sessions = device
        .as_ref()
        .map(WeakDevice::sessions)
        .unwrap_or_default();
    // Sessions that ended, or whose id the guest reused: the destination forgets them.
    let live: HashMap<u64, u64> = sessions.iter().copied().collect();
    let ended: Vec<u64> = walks
        .iter()
        .filter(|(s, w)| live.get(s) != Some(&w.token))
        .map(|(&s, _)| s)
        .collect();
    for s in ended {
        walks.remove(&s);
        let ok = with_link(pre, id, |l| {
            l.sent.places.retain(|p, _| p.0 != s);
            l.sent.tokens.remove(&s);
            precopy::write_gone(&mut l.stream, s)
        });
        if ok.is_none() {
            return Round::Over;
        }
    }
    let (mut blocks, mut bytes) = (0, 0);
    let Some(device) = device else {
        return Round::Sent(0, 0);
    };
    for (session, token) in sessions {
        let walk = walks.entry(session).or_insert_with(|| Walk {
            token,
            ..Walk::default()
        });
        if with_link(pre, id, |l| {
            l.sent.tokens.insert(session, token);
            Ok(())
        })
        .is_none()
        {
            return Round::Over;
        }
        // A chunk the destination holds unchanged is not even packed; at the stop nothing
        // more is.
        let holds = |addr: u64, index: u32, sum: &[u8; 16]| {
            pre.stopping.load(Ordering::SeqCst)
                || lock(&pre.link)
                    .as_ref()
                    .is_some_and(|l| l.sent.holds(session, token, addr, index, sum))
        };
        let end = loop {
            let c =
                match device.precopy_block(session, walk.after, &holds, Instant::now() + SLOT_WAIT)
                {
                    Some(Some(c)) => c,
                    Some(None) => break true,
                    // Busy (or gone): the walk goes on where it stopped next round.
                    None => break false,
                };
            walk.after = Some((c.addr, c.index));
            walk.seen.insert((c.addr, c.index));
            let Some(block) = c.packed else { continue };
            let place = (session, c.addr, c.index);
            let n = block.len() as u64;
            let ok = with_link(pre, id, |l| {
                precopy::write_block(
                    &mut l.stream,
                    &Block {
                        place,
                        bytes: block,
                    },
                )?;
                l.sent.places.insert(place, c.sum);
                Ok(())
            });
            if ok.is_none() {
                return Round::Over;
            }
            blocks += 1;
            bytes += n;
        };
        if end {
            // The walk covered every chunk: what it did not see was freed.
            let seen = std::mem::take(&mut walk.seen);
            walk.after = None;
            let ok = with_link(pre, id, |l| {
                let gone: Vec<Place> = l
                    .sent
                    .places
                    .keys()
                    .filter(|p| p.0 == session && !seen.contains(&(p.1, p.2)))
                    .copied()
                    .collect();
                for p in gone {
                    l.sent.places.remove(&p);
                    precopy::write_forget(&mut l.stream, p)?;
                }
                Ok(())
            });
            if ok.is_none() {
                return Round::Over;
            }
        }
    }
    Round::Sent(blocks, bytes)
}

/// Destination: connects to the source at `path` and receives its blocks; forgets them if
/// the stream breaks or some were dropped (they can no longer be used).
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
    let cap = crate::memsize::host_memory().map_or(FALLBACK_CAP, |m| m / 2);
    let t = Instant::now();
    match precopy::receive(&mut stream, into, cap) {
        Ok(()) => {
            let mut r = lock(into);
            info!(
                "pre-copy: received {} blocks, {} bytes, in {:.1} s{}",
                r.len(),
                r.bytes(),
                t.elapsed().as_secs_f64(),
                if r.dropped { " (some dropped)" } else { "" }
            );
            if r.dropped {
                r.clear();
            }
        }
        Err(e) => {
            warn!("pre-copy: the stream from the source ended: {e}");
            lock(into).clear();
        }
    }
}
