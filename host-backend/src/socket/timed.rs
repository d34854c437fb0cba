// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Reading a connection with timeouts ([`TimedReader`]: an idle limit per read and an overall
//! deadline), and spinning on a socket until bytes are ready.

use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use super::conn::Conn;
use super::inbound;

/// Reads from a stream with timeouts: each read waits at most `idle` (if set) and never
/// past `deadline` (if set).
pub(super) struct TimedReader<'a, S: Conn> {
    pub(super) stream: &'a mut S,
    idle: Option<Duration>,
    deadline: Option<Instant>,
    what: &'static str,
    /// The read timeout last set on the socket (`None`: not set yet), kept by the
    /// connection so that messages read in many pieces, one after another, cost no
    /// `setsockopt` while the timeout stays the same.
    applied: &'a mut Option<Option<Duration>>,
}

impl<'a, S: Conn> TimedReader<'a, S> {
    pub(super) fn new(
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

/// Polls `fd` (without taking anything) until bytes are ready or `budget` has passed.
pub(super) fn spin_until_readable(fd: std::os::fd::BorrowedFd<'_>, budget: Duration) {
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
