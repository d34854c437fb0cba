// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `vcuda run`.

use std::io::{self, BufRead, Read};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::libdir;

/// A backend started for one program; stopped when dropped.
struct PrivateBackend {
    child: Child,
    _dir: tempfile::TempDir,
    socket: PathBuf,
    /// Our own descriptor of the backend's stderr pipe, to see whether the thread copying
    /// it has caught up.
    stderr: Option<std::os::fd::OwnedFd>,
    /// Says when the thread watching the backend has decided whether it started (and, if
    /// not, has said why).
    reported: std::sync::mpsc::Receiver<()>,
}

impl Drop for PrivateBackend {
    fn drop(&mut self) {
        // SIGKILL: nothing of the backend's is worth waiting for. It is not reaped here
        // (that would wait for the kernel to tear down its address space, a millisecond
        // or more on the program's critical path); this process exits right after, and
        // init reaps it.
        let exited = matches!(self.child.try_wait(), Ok(Some(_)));
        let _ = self.child.kill();
        if exited {
            // It stopped by itself: the watching thread says why ("did not start") once it
            // has read the backend's stderr to its end, which is there already.
            let _ = self
                .reported
                .recv_timeout(std::time::Duration::from_millis(500));
        }
        // What the backend already said (a kernel's fault, say) still reaches our stderr:
        // wait, briefly, until the copying thread has drained the pipe.
        if let Some(fd) = &self.stderr {
            for _ in 0..100 {
                let mut pending: libc::c_int = 0;
                // SAFETY: FIONREAD on a pipe descriptor we own writes one int.
                let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut pending) };
                if r != 0 || pending <= 0 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }
}

fn backend_exe() -> io::Result<PathBuf> {
    if let Some(p) = std::env::var_os("VCUDA_BACKEND") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe()?;
    let p = exe.with_file_name("vcuda-backend");
    if p.exists() {
        Ok(p)
    } else {
        Err(io::Error::other(format!(
            "{} not found (set VCUDA_BACKEND)",
            p.display()
        )))
    }
}

/// Like mkdtemp: a fresh directory (created, never reused) with an unpredictable name and
/// mode 0700, so no other user can take the socket's place or connect to it. (tempfile's
/// default mode would be 0777 less the umask.)
fn private_dir() -> io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("vcuda-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

/// The descriptor the backend inherits its listening socket as (`--socket fd:3`), the
/// first after stdio, as in systemd's socket activation.
const LISTEN_FD: i32 = 3;

/// Starts a backend for one program. The socket is bound here and handed over (socket
/// activation), so the program starts at once: its connection waits in the socket's
/// backlog until the backend, starting meanwhile, accepts it. Should the backend fail to
/// start, the socket closes with it (this process keeps no copy), the program's calls fail
/// with `cudaErrorDevicesUnavailable`, and the backend's own message is shown.
fn start_backend(executor: &str, memcheck: bool) -> io::Result<PrivateBackend> {
    let dir = private_dir()?;
    let socket = dir.path().join("backend.sock");
    let listener = UnixListener::bind(&socket)?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
    let fd = listener.as_raw_fd();
    let log = std::env::var("VCUDA_BACKEND_LOG").unwrap_or_else(|_| "warn".into());
    let mut cmd = Command::new(backend_exe()?);
    cmd.args(["serve", "--notify-ready", "--socket"])
        .arg(format!("fd:{LISTEN_FD}"))
        .args(["--executor", executor])
        // One program, which may hold all of the executor's memory (the default share
        // protects tenants of a shared backend from each other).
        .args(["--session-mem-limit", "100%"])
        // One program: a session that spins briefly between its calls answers the next
        // one without a wake-up, at up to 50 us of a core per gap.
        .args(["--spin-us", "50"])
        // One program of this user: its sessions need no worker processes of their own.
        .args(["--isolation", "thread"])
        .args(memcheck.then_some("--memcheck"))
        .env("RUST_LOG", log)
        // The private backend serves one program: the CUDA executor may hand the GPU's
        // device printf output back to it.
        .env("VCUDA_CUDA_CAPTURE_PRINTF", "1")
        .env_remove("VCUDA_SOCKET")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec the closure only calls dup2, fcntl and prctl
    // (async-signal-safe) on descriptors this process owns.
    unsafe {
        cmd.pre_exec(move || {
            // dup2 onto itself would keep close-on-exec, so clear it then.
            let r = if fd == LISTEN_FD {
                libc::fcntl(fd, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, LISTEN_FD)
            };
            if r < 0 {
                return Err(io::Error::last_os_error());
            }
            // Not outlive this process, even if it is killed.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot start vcuda-backend: {e}")))?;
    drop(listener);
    // The backend says `ready` on stdout once it accepts (then nothing more; the rest is
    // drained so it can never block on it). Until then its stderr is held back; if it
    // stops without `ready`, that is shown as the reason. After it, its warnings go to
    // our stderr.
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let stderr = err
        .as_ref()
        .and_then(|e| e.as_fd().try_clone_to_owned().ok());
    let (tx, reported) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut ready = false;
        let mut out = out.map(io::BufReader::new);
        if let Some(o) = out.as_mut() {
            let mut line = String::new();
            ready = o.read_line(&mut line).is_ok() && line.trim_end() == "ready";
        }
        if let Some(mut e) = err {
            if ready {
                let _ = tx.send(());
                let _ = io::copy(&mut e, &mut io::stderr());
            } else {
                let mut msg = String::new();
                let _ = e.read_to_string(&mut msg);
                match msg.trim_end() {
                    "" => eprintln!("vcuda: the backend did not start (it said nothing)"),
                    m => eprintln!("vcuda: the backend did not start:\n{m}"),
                }
            }
        }
        let _ = tx.send(());
        if let Some(mut o) = out {
            let _ = io::copy(&mut o, &mut io::sink());
        }
    });
    Ok(PrivateBackend {
        child,
        _dir: dir,
        socket,
        stderr,
        reported,
    })
}

fn prepend(var: &str, dir: &Path) -> String {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => format!("{}:{v}", dir.display()),
        _ => dir.display().to_string(),
    }
}

/// Runs `program` through vcuda; returns its exit code (128 + signal if killed).
pub fn run(executor: &str, memcheck: bool, program: &[String]) -> io::Result<u8> {
    let lib_dir = libdir::lib_dir()?;
    let backend = match std::env::var_os("VCUDA_SOCKET") {
        Some(s) if !s.is_empty() => {
            if memcheck {
                eprintln!(
                    "vcuda: --memcheck applies to a private backend; the one VCUDA_SOCKET names \
                     checks memory if it was started with --memcheck"
                );
            }
            None
        }
        _ => Some(start_backend(executor, memcheck)?),
    };
    let mut cmd = Command::new(&program[0]);
    cmd.args(&program[1..])
        .env("LD_LIBRARY_PATH", prepend("LD_LIBRARY_PATH", &lib_dir))
        .env("LD_PRELOAD", {
            let lib = lib_dir.join("libvcuda.so");
            match std::env::var("LD_PRELOAD") {
                Ok(v) if !v.is_empty() => format!("{}:{v}", lib.display()),
                _ => lib.display().to_string(),
            }
        });
    if let Some(b) = &backend {
        cmd.env("VCUDA_SOCKET", &b.socket);
    }
    // The CPU executor runs PTX: CuPy, which compiles its kernels with NVRTC, should keep
    // PTX rather than a cubin for the GPU it believes it has (unless the user said).
    if executor == "cpu" && std::env::var_os("CUPY_COMPILE_WITH_PTX").is_none() {
        cmd.env("CUPY_COMPILE_WITH_PTX", "1");
    }
    // Let the program own the terminal's signals; we only wait for it.
    let status = cmd
        .status()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot run {}: {e}", program[0])))?;
    drop(backend);
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(s)) => 128u8.wrapping_add(s as u8),
        _ => 1,
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    #[test]
    fn private_backend_dir_is_0700() {
        let a = private_dir().unwrap();
        let b = private_dir().unwrap();
        assert_ne!(a.path(), b.path());
        assert_eq!(std::fs::metadata(a.path()).unwrap().mode() & 0o7777, 0o700);
    }
}
