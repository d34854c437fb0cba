// SPDX-License-Identifier: Apache-2.0 OR MIT
//! [`Wire`]: a session's connection, first the socket's bytes and, once the guest's `Hello`
//! brought a call ring the session took, the ring's (see the `vcuda-ring` crate).
//!
//! In ring mode the message loop reads requests from the ring and writes replies into it
//! through the same [`Conn`] interface, so framing, bounds and timeouts stay those of the
//! socket transport. The socket stays: the guest's wake-ups and descriptor notes come on it
//! (a descriptor for `ShareMemory` travels with a note naming the request-stream offset of
//! its message, see [`vcuda_ring::Notes`]), the backend's wake-ups go out on it, and a
//! hang-up still ends the session and cancels its work.
//!
//! Everything in the ring is the guest's and hostile: an index it cannot have, or a byte on
//! the socket that is no note, is an `InvalidData` error that closes the session.

use std::cell::Cell;
use std::collections::VecDeque;
use std::io::{self, IoSlice, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use vcuda_ring::{Mapping, Note, Notes, Ring, Side};

use super::conn::Conn;
use super::limits::Closer;

/// Most descriptors (with their notes) waiting for the bytes of their message.
const MAX_WAITING_FDS: usize = 16;
/// How long a write spins for room before it sleeps.
const WRITE_SPIN: Duration = Duration::from_micros(50);

/// A session's connection: the socket, and the call ring once the session took one.
pub struct Wire<S: Conn> {
    s: S,
    ring: Option<Box<RingLink>>,
}

/// The ring side of a [`Wire`].
struct RingLink {
    ring: Ring,
    notes: Notes,
    /// Notes seen so far (compared with what the guest says it sent).
    notes_seen: u64,
    /// Descriptors that came on the socket, not yet matched with their note.
    loose: VecDeque<OwnedFd>,
    /// Descriptors with the request-stream offset of their message, in order.
    waiting: VecDeque<(u64, OwnedFd)>,
    read_timeout: Cell<Option<Duration>>,
    write_timeout: Cell<Option<Duration>>,
}

impl<S: Conn> Wire<S> {
    /// The socket alone.
    pub fn new(s: S) -> Self {
        Self { s, ring: None }
    }

    /// From now on, messages come from and replies go to the ring in `map`.
    pub fn start_ring(&mut self, map: Mapping) {
        self.ring = Some(Box::new(RingLink {
            ring: Ring::new(map, Side::Host),
            notes: Notes::default(),
            notes_seen: 0,
            loose: VecDeque::new(),
            waiting: VecDeque::new(),
            read_timeout: Cell::new(None),
            write_timeout: Cell::new(None),
        }));
    }

    /// Whether messages go through a ring.
    pub fn has_ring(&self) -> bool {
        self.ring.is_some()
    }
}

impl RingLink {
    /// Reads what the guest sent on the socket without waiting: wake-ups, notes and their
    /// descriptors. `Ok(false)`: the guest closed the socket.
    fn drain<S: Conn>(&mut self, s: &mut S) -> io::Result<bool> {
        let mut buf = [0u8; 256];
        loop {
            let mut fds = Vec::new();
            let got = match s.try_read_with_fds(&mut buf, &mut fds) {
                Some(r) => r,
                None => return Err(io::ErrorKind::Unsupported.into()),
            };
            self.loose.extend(fds);
            match got {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    let mut notes = Vec::new();
                    self.notes.feed(&buf[..n], &mut notes)?;
                    for Note::Fd(at) in notes {
                        self.notes_seen += 1;
                        if let Some(fd) = self.loose.pop_front() {
                            self.waiting.push_back((at, fd));
                        }
                    }
                    while self.waiting.len() > MAX_WAITING_FDS {
                        log::debug!("too many descriptors waiting for their messages: closed");
                        self.waiting.pop_front();
                    }
                    // Descriptors without a note are closed.
                    self.loose.clear();
                    if n < buf.len() {
                        return Ok(true);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Wakes the guest if it sleeps.
    fn wake(&self, fd: BorrowedFd<'_>) {
        // A peer that is gone shows at the next read.
        let _ = self.ring.wake_peer(fd);
    }

    /// Sleeps on the socket until the guest wakes us, `ready` holds, or `timeout` passes
    /// (`WouldBlock`). `Ok(false)`: the guest closed the socket.
    fn wait<S: Conn>(
        &mut self,
        s: &mut S,
        timeout: Option<Duration>,
        ready: impl Fn(&Ring) -> io::Result<bool>,
    ) -> io::Result<bool> {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            self.ring.sleep_begin();
            let r = (|| {
                if ready(&self.ring)? {
                    return Ok(true);
                }
                let left = match deadline {
                    Some(d) => match d.checked_duration_since(Instant::now()) {
                        Some(l) => PollTimeout::try_from(l).unwrap_or(PollTimeout::MAX),
                        None => return Err(io::ErrorKind::WouldBlock.into()),
                    },
                    None => PollTimeout::NONE,
                };
                let mut fds = [PollFd::new(s.as_fd(), PollFlags::POLLIN)];
                match poll(&mut fds, left) {
                    Ok(0) => Err(io::ErrorKind::WouldBlock.into()),
                    Ok(_) => self.drain(s),
                    Err(nix::errno::Errno::EINTR) => Ok(true),
                    Err(e) => Err(e.into()),
                }
            })();
            self.ring.sleep_end();
            // Bytes that came before a hang-up are still served.
            if ready(&self.ring)? {
                return Ok(true);
            }
            match r {
                Ok(true) => continue,
                r => return r,
            }
        }
    }

    fn read<S: Conn>(
        &mut self,
        s: &mut S,
        buf: &mut [u8],
        mut fds: Option<&mut Vec<OwnedFd>>,
        block: bool,
    ) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            // The index first: a note sent before the bytes it names is on the socket by
            // the time those bytes show.
            let avail = self.ring.readable()?;
            let open = self.ring.notes_sent() == self.notes_seen || self.drain(s)?;
            if avail > 0 {
                let at = self.ring.in_offset();
                let mut n = avail.min(buf.len());
                // A read that reaches a descriptor's message ends at its first byte, so
                // the descriptor belongs to the message holding the read's last byte
                // (the read-ahead's rule, `inbound`).
                if fds.is_some()
                    && let Some(&(start, _)) = self.waiting.front()
                    && start >= at
                {
                    n = n.min((start - at + 1).min(usize::MAX as u64) as usize);
                }
                let n = self.ring.read(&mut buf[..n])?;
                let end = self.ring.in_offset();
                if let Some(fds) = fds.as_deref_mut() {
                    while self.waiting.front().is_some_and(|&(start, _)| start < end) {
                        if let Some((_, fd)) = self.waiting.pop_front() {
                            fds.push(fd);
                        }
                    }
                }
                self.wake(s.as_fd());
                return Ok(n);
            }
            if !open {
                return Ok(0);
            }
            if !block {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let timeout = self.read_timeout.get();
            if !self.wait(s, timeout, |r| Ok(r.readable()? > 0))? {
                return Ok(0);
            }
        }
    }

    fn write<S: Conn>(&mut self, s: &mut S, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total == 0 {
            return Ok(0);
        }
        let mut spun = None;
        loop {
            let mut done = 0;
            for b in bufs {
                let n = self.ring.write(b)?;
                done += n;
                if n < b.len() {
                    break;
                }
            }
            if done > 0 {
                return Ok(done);
            }
            // Full: the guest must read before we can go on.
            self.wake(s.as_fd());
            let start = *spun.get_or_insert_with(Instant::now);
            if start.elapsed() < WRITE_SPIN {
                std::hint::spin_loop();
                continue;
            }
            if !self.wait(s, self.write_timeout.get(), |r| Ok(r.writable()? > 0))? {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
        }
    }
}

impl<S: Conn> Read for Wire<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.ring {
            Some(r) => r.read(&mut self.s, buf, None, true),
            None => self.s.read(buf),
        }
    }
}

impl<S: Conn> Write for Wire<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match &mut self.ring {
            Some(r) => r.write(&mut self.s, bufs),
            None => self.s.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &self.ring {
            Some(r) => {
                r.wake(self.s.as_fd());
                Ok(())
            }
            None => self.s.flush(),
        }
    }
}

impl<S: Conn> AsFd for Wire<S> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.s.as_fd()
    }
}

impl<S: Conn> Conn for Wire<S> {
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match &self.ring {
            Some(r) => {
                r.read_timeout.set(t);
                Ok(())
            }
            None => self.s.set_read_timeout(t),
        }
    }

    fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        if let Some(r) = &self.ring {
            r.write_timeout.set(t);
        }
        self.s.set_write_timeout(t)
    }

    fn closer(&self) -> io::Result<Closer> {
        self.s.closer()
    }

    fn passes_fds(&self) -> bool {
        self.s.passes_fds()
    }

    fn read_with_fds(&mut self, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> io::Result<usize> {
        match &mut self.ring {
            Some(r) => r.read(&mut self.s, buf, Some(fds), true),
            None => self.s.read_with_fds(buf, fds),
        }
    }

    fn try_read_with_fds(
        &mut self,
        buf: &mut [u8],
        fds: &mut Vec<OwnedFd>,
    ) -> Option<io::Result<usize>> {
        match &mut self.ring {
            Some(r) => Some(r.read(&mut self.s, buf, Some(fds), false)),
            None => self.s.try_read_with_fds(buf, fds),
        }
    }
}
