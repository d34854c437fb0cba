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
    /// Held by that thread from each read of the pipe to the end of its write to our
    /// stderr: with it held, an empty pipe means every byte read has been written.
    copying: std::sync::Arc<std::sync::Mutex<()>>,
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
            // At most 100 ms: the copying thread may be stuck writing to a stderr nobody
            // reads.
            for _ in 0..100 {
                let held = match self.copying.try_lock() {
                    Ok(g) => Some(g),
                    Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
                    Err(std::sync::TryLockError::WouldBlock) => None,
                };
                if held.is_some() {
                    let mut pending: libc::c_int = 0;
                    // SAFETY: FIONREAD on a pipe descriptor we own writes one int.
                    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut pending) };
                    if r != 0 || pending <= 0 {
                        break;
                    }
                }
                drop(held);
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
        // One program: the context the backend makes at start (checking the device, while
        // the program starts too) becomes its session's; none is made after it.
        .args(["--warm-context", "first"])
        .args(memcheck.then_some("--memcheck"))
        .env("RUST_LOG", log)
        // The private backend serves one program: the CUDA executor may hand the GPU's
        // device printf output back to it.
        .env("VCUDA_CUDA_CAPTURE_PRINTF", "1")
        .env_remove("VCUDA_SOCKET")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec the closure only calls sigprocmask, dup2, fcntl and prctl
    // (async-signal-safe) on descriptors this process owns.
    unsafe {
        cmd.pre_exec(move || {
            unblock_forwarded()?;
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
    let copying = std::sync::Arc::new(std::sync::Mutex::new(()));
    let held = copying.clone();
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
                forward(&mut e, &held);
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
        copying,
        reported,
    })
}

/// Copies the backend's stderr to ours until it ends, holding `copying` from each read to
/// the end of its write (see [`PrivateBackend::copying`]): a line read just before this
/// process exits is not lost between the pipe and our stderr.
fn forward(e: &mut std::process::ChildStderr, copying: &std::sync::Mutex<()>) {
    use std::io::Write;
    let mut buf = [0u8; 8192];
    loop {
        // Wait for data without the lock, then read (at once) and write with it.
        let mut pfd = libc::pollfd {
            fd: e.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd of ours, for the pipe we own.
        if unsafe { libc::poll(&mut pfd, 1, -1) } < 0
            && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted
        {
            return;
        }
        let _held = copying.lock().unwrap_or_else(|e| e.into_inner());
        match e.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let _ = io::stderr().write_all(&buf[..n]);
            }
            Err(x) if x.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

fn prepend(var: &str, dir: &Path) -> String {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => format!("{}:{v}", dir.display()),
        _ => dir.display().to_string(),
    }
}

/// The signals `vcuda run` passes on to the program: sent to `vcuda run` by another
/// process (`kill`, `timeout`, a service manager), they reach the program too. The terminal's
/// own (Ctrl-C, hang-up) reach both already, the program being in the terminal's foreground
/// process group with `vcuda run`, so they are not sent twice.
const FORWARDED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

fn forwarded_set() -> libc::sigset_t {
    // SAFETY: sigemptyset and sigaddset initialize and fill the set they are given.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in FORWARDED {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks the forwarded signals in the calling thread (threads started after inherit it), so
/// only [`Forwarding`]'s thread takes them.
fn block_forwarded() -> io::Result<()> {
    let set = forwarded_set();
    // SAFETY: a valid set; the old mask is not wanted.
    match unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) } {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Unblocks them again: in a child, before it runs another program. Async-signal-safe.
fn unblock_forwarded() -> io::Result<()> {
    let set = forwarded_set();
    // SAFETY: a valid set; sigprocmask is async-signal-safe.
    if unsafe { libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A thread that takes the forwarded signals: while the program runs, it sends it those
/// another process sent; before the program starts (the backend starting) or once it has
/// exited, any of them ends `vcuda run` as it would have without the thread (status 128 +
/// the signal; the private backend dies with it).
struct Forwarding {
    child: std::sync::Arc<std::sync::Mutex<Option<libc::pid_t>>>,
}

impl Forwarding {
    fn start() -> Self {
        let child = std::sync::Arc::new(std::sync::Mutex::new(None));
        let target = child.clone();
        let r = std::thread::Builder::new()
            .name("vcuda-signals".into())
            .spawn(move || {
                let set = forwarded_set();
                loop {
                    // SAFETY: an all-zero siginfo_t is valid; sigwaitinfo fills it.
                    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
                    // SAFETY: a valid set (blocked in every thread) and a valid out pointer.
                    let sig = unsafe { libc::sigwaitinfo(&set, &mut info) };
                    if sig < 0 {
                        continue; // EINTR
                    }
                    let Some(pid) = *target.lock().unwrap_or_else(|e| e.into_inner()) else {
                        std::process::exit(128 + sig);
                    };
                    // Sent by a process (kill, sigqueue, tkill), not by the terminal (the
                    // kernel), which signals the whole foreground group itself.
                    if info.si_code <= 0 {
                        // SAFETY: kill has no memory-safety preconditions; `pid` is the
                        // program, not yet reaped (see `wait_exited`).
                        unsafe { libc::kill(pid, sig) };
                    }
                }
            });
        if let Err(e) = r {
            eprintln!("vcuda: cannot start the thread that passes signals on: {e}");
        }
        Forwarding { child }
    }

    /// Signals go to the program `pid` from now on.
    fn to(&self, pid: libc::pid_t) {
        *self.child.lock().unwrap_or_else(|e| e.into_inner()) = Some(pid);
    }

    /// The program has exited (it is reaped next): a signal now ends `vcuda run`.
    fn stop(&self) {
        *self.child.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// Waits until process `pid` (a child) exits, leaving it to be reaped.
fn wait_exited(pid: libc::pid_t) -> io::Result<()> {
    loop {
        // SAFETY: an all-zero siginfo_t is valid; waitid fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: a child's pid and a valid out pointer; WNOWAIT leaves it unreaped.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Runs `program` through vcuda; returns its exit code (128 + signal if killed).
pub fn run(executor: &str, memcheck: bool, program: &[String]) -> io::Result<u8> {
    // Before any thread or child starts: the forwarding thread alone takes these.
    block_forwarded()?;
    let forwarding = Forwarding::start();
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
            // libvcuda.so, and the nvJitLink shim: loaders that look for an already-loaded
            // libnvJitLink.so.13 before the one in a wheel (cuda-pathfinder, for Numba) take
            // vcuda's, which keeps PTX (see guest-lib/src/abi/nvjitlink.rs).
            let libs = format!(
                "{}:{}",
                lib_dir.join("libvcuda.so").display(),
                lib_dir.join("libnvJitLink.so.13").display()
            );
            match std::env::var("LD_PRELOAD") {
                Ok(v) if !v.is_empty() => format!("{libs}:{v}"),
                _ => libs,
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
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: between fork and exec the closure only calls sigprocmask, prctl and getppid
    // (async-signal-safe).
    unsafe {
        cmd.pre_exec(move || {
            // The program takes signals as it would without vcuda.
            unblock_forwarded()?;
            // It dies with `vcuda run`, however that ends (its backend goes too).
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                // `vcuda run` died before the line above took effect.
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot run {}: {e}", program[0])))?;
    forwarding.to(child.id() as libc::pid_t);
    // Waits without reaping, so the forwarding thread never signals a reused pid.
    let waited = wait_exited(child.id() as libc::pid_t);
    forwarding.stop();
    waited?;
    let status = child.wait()?;
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
