// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The child processes of a run (the backend and QEMU): stopping them on drop, tying them
//! to this process's life, the signals that ask a run to stop, and where the backend
//! listens.

use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// The signal that asked us to stop (0: none).
pub(super) static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
}

pub(super) fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: The handler only stores to an atomic (async-signal-safe).
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

/// A child process stopped (TERM, then KILL) when dropped.
pub(super) struct Guard {
    child: Option<Child>,
    name: &'static str,
}

impl Guard {
    pub(super) fn new(child: Child, name: &'static str) -> Self {
        Self {
            child: Some(child),
            name,
        }
    }

    pub(super) fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("child present until dropped")
    }

    pub(super) fn stop(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        if let Ok(Some(_)) = c.try_wait() {
            return;
        }
        // SAFETY: kill(2) on our own child's pid, which we have not reaped yet.
        unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(3) {
            if let Ok(Some(_)) = c.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("vcuda vm: {} did not stop; killing it", self.name);
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.stop();
    }
}

/// In a child between fork and exec: be killed if this process dies (even by SIGKILL), so that
/// no QEMU or backend outlives `vcuda vm run`.
pub(super) fn die_with_parent() -> io::Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes no pointers; async-signal-safe.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether some process listens on the Unix socket `path` (from /proc/net/unix), so that a
/// connection succeeds without us connecting (a vhost-user backend serves one connection).
pub(super) fn unix_listening(path: &Path) -> bool {
    let Ok(table) = fs::read_to_string("/proc/net/unix") else {
        return path.exists();
    };
    let want = path.as_os_str().as_bytes();
    table.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // Num RefCount Protocol Flags Type St Inode Path; Flags 00010000 = listening.
        f.len() >= 8 && f[3] == "00010000" && f[7].as_bytes() == want
    })
}

pub(super) fn backend_exe() -> io::Result<PathBuf> {
    if let Some(p) = std::env::var_os("VCUDA_BACKEND") {
        return Ok(PathBuf::from(p));
    }
    let p = std::env::current_exe()?.with_file_name("vcuda-backend");
    if p.exists() {
        Ok(p)
    } else {
        Err(io::Error::other(format!(
            "{} not found (build the workspace, or set VCUDA_BACKEND)",
            p.display()
        )))
    }
}

pub(super) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from)
}
