// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Capturing device `printf` (opt-in: `--cuda-capture-printf`).
//!
//! The driver writes a kernel's `printf` output to the process's stdout when the context
//! synchronizes. With capture on, the backend's fd 1 is a pipe drained by a thread; after a
//! request that may have flushed device output, the session collects everything written so
//! far: it flushes C stdio, writes a unique marker into the pipe and takes the bytes before
//! the marker once the reader has seen it, so output produced during a request comes back in
//! that request's reply, as with a local GPU.
//!
//! The pipe is one per process, so output cannot be told apart by context. The executor
//! returns it to a guest only while exactly one session is live (the `vcuda run` case);
//! with several, it goes to the backend's stderr rather than to a guest that did not
//! produce it.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::FromRawFd;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Most bytes kept between collections (more is dropped, as a full printf FIFO drops).
const MAX_BUFFERED: usize = 16 << 20;
/// How long a collection waits for its marker.
const MARK_TIMEOUT: Duration = Duration::from_secs(2);
/// Start of every marker; a marker is this, a decimal sequence number and a NUL.
const MARK: &[u8] = b"\0vcuda-printf-mark:";

#[derive(Default)]
struct Sink {
    buf: Mutex<Vec<u8>>,
    more: Condvar,
}

/// The process-wide stdout capture.
pub struct Capture {
    sink: Arc<Sink>,
    seq: Mutex<u64>,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture").finish_non_exhaustive()
    }
}

static GLOBAL: OnceLock<Result<Capture, String>> = OnceLock::new();

impl Capture {
    /// The capture, installed on first call (fd 1 becomes a pipe).
    pub fn global() -> Result<&'static Capture, String> {
        GLOBAL
            .get_or_init(|| Capture::install().map_err(|e| e.to_string()))
            .as_ref()
            .map_err(Clone::clone)
    }

    fn install() -> io::Result<Capture> {
        // What the backend itself prints keeps going to the real stdout.
        crate::stdout::save();
        let mut fds = [0; 2];
        // SAFETY: `fds` is an array of two ints, as pipe2 requires.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let (r, w) = (fds[0], fds[1]);
        // SAFETY: fcntl, fflush and dup2 on descriptors we own (the pipe) and on fd 1, which
        // we mean to replace; fflush(NULL) flushes every C output stream first so nothing
        // written before goes into the pipe. A larger pipe (best effort) means fewer wakeups.
        let ok = unsafe {
            libc::fcntl(w, libc::F_SETPIPE_SZ, 1 << 20);
            libc::fflush(std::ptr::null_mut());
            libc::dup2(w, 1) >= 0
        };
        let err = io::Error::last_os_error();
        // SAFETY: `w` is our pipe end; fd 1 now refers to the pipe on its own.
        unsafe { libc::close(w) };
        // SAFETY: `r` is our pipe's read end, owned by nothing else.
        let mut reader = unsafe { File::from_raw_fd(r) };
        if !ok {
            return Err(err);
        }
        let sink = Arc::new(Sink::default());
        let s = sink.clone();
        std::thread::Builder::new()
            .name("vcuda-printf".into())
            .spawn(move || {
                let mut chunk = vec![0u8; 64 << 10];
                loop {
                    match reader.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(n) => {
                            let mut b = s.buf.lock().unwrap_or_else(|e| e.into_inner());
                            let room = MAX_BUFFERED.saturating_sub(b.len());
                            // Markers must get through even when the buffer is full.
                            let keep = if chunk[..n].windows(MARK.len()).any(|w| w == MARK) {
                                n
                            } else {
                                n.min(room)
                            };
                            b.extend_from_slice(&chunk[..keep]);
                            s.more.notify_all();
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
            })?;
        Ok(Capture {
            sink,
            seq: Mutex::new(0),
        })
    }

    /// Everything written to stdout (by the driver or anyone) up to now.
    pub fn collect(&self) -> Vec<u8> {
        let mut seq = self.seq.lock().unwrap_or_else(|e| e.into_inner());
        *seq += 1;
        let mut mark = MARK.to_vec();
        mark.extend_from_slice(seq.to_string().as_bytes());
        mark.push(0);
        // SAFETY: fflush(NULL) flushes every C output stream; `write` writes our buffer to
        // fd 1 (the pipe), retried until done.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            let mut at = 0;
            while at < mark.len() {
                let n = libc::write(1, mark[at..].as_ptr().cast(), mark.len() - at);
                if n > 0 {
                    at += n as usize;
                } else if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
        }
        let deadline = Instant::now() + MARK_TIMEOUT;
        let mut buf = self.sink.buf.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(pos) = find(&buf, &mark) {
                let out = strip_marks(&buf[..pos]);
                buf.drain(..pos + mark.len());
                return out;
            }
            let now = Instant::now();
            if now >= deadline {
                // The marker comes later and is stripped then.
                return strip_marks(&std::mem::take(&mut *buf));
            }
            buf = self
                .sink
                .more
                .wait_timeout(buf, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `bytes` without markers (left over from collections that timed out).
fn strip_marks(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while let Some(pos) = find(rest, MARK) {
        out.extend_from_slice(&rest[..pos]);
        let after = &rest[pos + MARK.len()..];
        match after.iter().position(|&c| c == 0) {
            Some(end) => rest = &after[end + 1..],
            None => {
                rest = &[];
            }
        }
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_stripped() {
        assert_eq!(strip_marks(b"abc"), b"abc");
        assert_eq!(strip_marks(b"a\0vcuda-printf-mark:12\0b"), b"ab");
        assert_eq!(
            strip_marks(b"\0vcuda-printf-mark:1\0\0vcuda-printf-mark:2\0x\0y"),
            b"x\0y"
        );
        assert_eq!(strip_marks(b"a\0vcuda-printf-mark:3"), b"a");
        assert_eq!(find(b"hello", b"ll"), Some(2));
        assert_eq!(find(b"he", b"hello"), None);
    }

    /// Runs in a child process (it takes over fd 1): C stdio output, buffered in libc,
    /// comes back from `collect`, in order, and nothing twice.
    #[test]
    fn capture_in_a_child_process() {
        if std::env::var_os("VCUDA_PRINTF_CHILD").is_some() {
            let c = Capture::global().expect("install");
            // SAFETY: NUL-terminated literals; puts writes to C stdout (buffered: fd 1
            // is a pipe).
            unsafe { libc::puts(c"first".as_ptr()) };
            let a = c.collect();
            // SAFETY: a NUL-terminated literal, alive for the call; puts only reads it.
            unsafe { libc::puts(c"second".as_ptr()) };
            let b = c.collect();
            let empty = c.collect();
            eprintln!(
                "RESULT {:?} {:?} {:?}",
                String::from_utf8_lossy(&a),
                String::from_utf8_lossy(&b),
                String::from_utf8_lossy(&empty)
            );
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "executor::cuda::printf::tests::capture_in_a_child_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("VCUDA_PRINTF_CHILD", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(r#"RESULT "first\n" "second\n" """#),
            "child said: {err}"
        );
    }
}
