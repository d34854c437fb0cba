// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The library's end of the call ring (the `vcuda-ring` crate): once the backend took the
//! ring offered with `Hello`, the socket transport writes messages into it and reads
//! replies from it, and the Unix socket carries only wake-ups (and the descriptors of
//! `ShareMemory`, each with a note naming its message).
//!
//! While the backend polls (a private backend spins between messages), a call costs no
//! system call on either side: the reply shows in memory the library spins on. A side that
//! sleeps says so in the ring first, and the other wakes it with a byte on the socket.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use vcuda_ring::{Mapping, Ring, Side};

/// `VCUDA_CALL_RING=0` keeps messages on the socket.
pub fn wanted() -> bool {
    !matches!(
        std::env::var("VCUDA_CALL_RING").as_deref().map(str::trim),
        Ok("0" | "off" | "no" | "false")
    )
}

/// The socket and the ring of a session that switched to it.
pub struct ClientRing {
    sock: UnixStream,
    ring: Ring,
}

impl ClientRing {
    /// The ring in `map` on the connection `sock`.
    pub fn new(sock: UnixStream, map: Mapping) -> Self {
        Self {
            sock,
            ring: Ring::new(map, Side::Guest),
        }
    }

    /// The socket.
    pub fn socket(&self) -> &UnixStream {
        &self.sock
    }

    /// The request stream's offset (where the next message starts).
    pub fn out_offset(&self) -> u64 {
        self.ring.out_offset()
    }

    /// A descriptor note for the next message went out on the socket.
    pub fn note_sent(&self) {
        self.ring.note_sent();
    }

    /// Writes a message and its out data into the ring, waiting for room as needed, and
    /// wakes the backend if it sleeps.
    pub fn send(&mut self, msg: &[u8], out: &[&[u8]]) -> io::Result<()> {
        for b in std::iter::once(&msg).chain(out) {
            let mut rest: &[u8] = b;
            while !rest.is_empty() {
                let n = self.ring.write(rest)?;
                rest = &rest[n..];
                if n == 0 {
                    // Full: the backend must read first.
                    self.wake()?;
                    if !self.wait(Duration::from_micros(50), false, |r| Ok(r.writable()? > 0))? {
                        return Err(io::ErrorKind::BrokenPipe.into());
                    }
                }
            }
        }
        self.wake()
    }

    /// Reads reply bytes, spinning up to `budget` (giving the core away between polls if
    /// `yield_core`) before it sleeps on the socket. 0: the backend closed the connection.
    pub fn read(
        &mut self,
        buf: &mut [u8],
        budget: Duration,
        yield_core: bool,
    ) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let n = self.ring.read(buf)?;
            if n > 0 {
                // The backend may wait for room to write the rest.
                self.wake()?;
                return Ok(n);
            }
            if !self.wait(budget, yield_core, |r| Ok(r.readable()? > 0))? {
                return Ok(0);
            }
        }
    }

    /// Wakes the backend if it sleeps.
    fn wake(&self) -> io::Result<()> {
        use std::os::fd::AsFd;
        self.ring.wake_peer(self.sock.as_fd())
    }

    /// Spins up to `budget` until `ready`, then sleeps on the socket until the backend
    /// wakes us and `ready` holds. `Ok(false)`: the backend closed the connection.
    fn wait(
        &mut self,
        budget: Duration,
        yield_core: bool,
        ready: impl Fn(&Ring) -> io::Result<bool>,
    ) -> io::Result<bool> {
        let start = Instant::now();
        while start.elapsed() < budget {
            if ready(&self.ring)? {
                return Ok(true);
            }
            if yield_core {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        let mut sink = [0u8; 64];
        loop {
            self.ring.sleep_begin();
            let r = if ready(&self.ring)? {
                Ok(1)
            } else {
                // SAFETY: `sink` is valid for writes of its length.
                let n = unsafe {
                    libc::recv(
                        self.sock.as_raw_fd(),
                        sink.as_mut_ptr().cast(),
                        sink.len(),
                        0,
                    )
                };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(n)
                }
            };
            self.ring.sleep_end();
            if ready(&self.ring)? {
                return Ok(true);
            }
            match r {
                Ok(0) => return Ok(false),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}
