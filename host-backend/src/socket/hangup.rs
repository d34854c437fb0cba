// SPDX-License-Identifier: Apache-2.0 OR MIT
//! [`HangupWatch`]: cancels a session's running work when its peer hangs up mid-call.

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use log::debug;

use crate::executor::Cancel;

/// Cancels a session's running work when its peer hangs up in the middle of a call (a
/// program killed while its kernel runs): a thread that sleeps in `poll` on the connection
/// for a peer shutdown (`POLLRDHUP`; it never reads) and on a pipe that closes when the
/// session ends. The session thread itself is busy in the call and cannot notice.
pub(super) struct HangupWatch {
    done: Option<OwnedFd>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HangupWatch {
    pub(super) fn start(conn: OwnedFd, cancel: Cancel) -> io::Result<Self> {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

        let (done_rd, done_wr) = nix::unistd::pipe().map_err(io::Error::from)?;
        let thread = std::thread::Builder::new()
            .name("vcuda-hangup".into())
            .spawn(move || {
                // Linux's peer-shutdown event (nix does not name it, so its `revents` of
                // the socket read as unknown flags: the wake-up is told apart by the pipe).
                let rdhup = PollFlags::from_bits_retain(libc::POLLRDHUP);
                let mut fds = [
                    PollFd::new(conn.as_fd(), rdhup),
                    PollFd::new(done_rd.as_fd(), PollFlags::POLLIN),
                ];
                loop {
                    match poll(&mut fds, PollTimeout::NONE) {
                        Err(nix::errno::Errno::EINTR) => {}
                        Err(e) => {
                            debug!("hang-up watch: {e}");
                            return;
                        }
                        Ok(_) => break,
                    }
                }
                // The session ended (its end of the pipe closed): nothing to stop.
                if fds[1].revents().is_some_and(|r| !r.is_empty()) {
                    return;
                }
                debug!("peer hung up; stopping the session's work");
                cancel.cancel();
            })?;
        Ok(Self {
            done: Some(done_wr),
            thread: Some(thread),
        })
    }
}

impl Drop for HangupWatch {
    fn drop(&mut self) {
        // Closing the pipe's write end wakes the thread.
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
