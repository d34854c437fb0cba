// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Per-tenant worker processes (`--isolation process`, the default for the CUDA executor).
//!
//! A CUDA context does not isolate tenants of one process: where kernels can reach pageable
//! memory (HMM, ATS) they read any address of the process, and faults such as 700 or
//! 716–719 leave the whole process in an undefined state. So each tenant gets a process of
//! its own, in the style of firecracker's jailer:
//!
//! - **Socket transport:** the backend accepts a connection, checks the peer and the
//!   connection bounds, and starts a worker (this program again, `vcuda-backend worker
//!   --role socket … -- ARGS`, with the backend's own arguments) that receives the
//!   connection as its standard input and serves that one session: TLS handshake, `Hello`,
//!   executor, everything. Calls go straight from the client to the worker; the backend
//!   is not on the data path.
//! - **vhost-user:** one VM is one tenant. The worker receives the listening socket, accepts
//!   one frontend and serves it; when the VM disconnects the worker exits and the backend
//!   starts a fresh one for the next connection.
//!
//! Every worker enters [`crate::sandbox`] before it touches the driver, dies with the
//! backend (`PR_SET_PDEATHSIG`), and is reaped by a supervising thread of the backend,
//! which also kills it ([`TEARDOWN_GRACE`] after its client hung up, or after it said its
//! connection ended) if it does not exit by itself: a kernel that never ends, a wedged
//! context or a library call that does not return cannot hold the tenant's GPU resources.
//!
//! With `--warm-context always` (the default) the backend keeps one socket worker started
//! ahead of the next connection ([`WarmWorker`]): it enters the sandbox and starts its
//! executor (a CUDA context made) with no client yet, then waits on its standard input, a
//! socket pair, for the connection the backend passes it (`SCM_RIGHTS`) when one comes;
//! the backend starts the next one behind it, on the accept loop's thread.
//!
//! The worker and the backend talk over a socket pair (the worker's standard output), one
//! byte at a time: [`ADMIT`] asks whether a new session may start (the backend holds the
//! session bounds; it answers [`ADMITTED`] or [`REFUSED`]), [`ENDED`] says the connection is
//! over. A worker's own standard output is its standard error (device `printf` it does not
//! capture lands in the backend's log).

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

use log::debug;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use vcuda_protocol::ExecutorKind;

use crate::log_limit::LogLimiter;
use crate::metrics::WorkerExit;

/// Warnings about workers (a flood of connections must not flood the log).
static LIMITER: LazyLock<LogLimiter> =
    LazyLock::new(|| LogLimiter::new(module_path!(), 20, std::time::Duration::from_secs(10)));

/// Worker to backend: a session wants to start.
pub const ADMIT: u8 = b'H';
/// Backend to worker: the session may start (followed by the number of sessions the
/// backend serves with it, a little-endian `u32`).
pub const ADMITTED: u8 = b'Y';
/// Backend to worker: the session bounds are full.
pub const REFUSED: u8 = b'N';
/// Worker to backend: the connection ended; the worker is tearing its session down.
pub const ENDED: u8 = b'E';

/// The descriptor a worker finds its metrics block on (see [`crate::metrics`]).
pub const METRICS_FD: i32 = 3;

/// How long a worker may take to exit once its client hung up or its connection ended,
/// before the backend kills it.
pub const TEARDOWN_GRACE: Duration = Duration::from_secs(5);

/// What a worker does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Serves one socket connection (its standard input).
    Socket,
    /// Serves one vhost-user frontend from the listening socket (its standard input).
    VhostUser,
    /// Starts the CUDA executor, says whether it works, and exits (the backend itself never
    /// loads the driver when its sessions run in workers).
    Probe,
}

impl Role {
    /// The name on the worker's command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Socket => "socket",
            Role::VhostUser => "vhost-user",
            Role::Probe => "probe",
        }
    }
}

/// Starts worker processes: this program, with the backend's own arguments.
#[derive(Debug, Clone)]
pub struct Workers {
    exe: PathBuf,
    kind: ExecutorKind,
    args: Vec<OsString>,
    grace: Duration,
    /// Workers alive (started and not yet reaped), and how many may be.
    live: Arc<AtomicUsize>,
    max_live: usize,
    /// Keep a socket worker started ahead of the next connection ([`Workers::refill_warm`]).
    warm: bool,
    /// That worker, waiting for its connection.
    ready: Arc<std::sync::Mutex<Option<WarmWorker>>>,
    /// CUDA workers share the driver's JIT cache ([`Workers::share_jit_cache`]).
    share_jit_cache: bool,
}

/// A socket worker started before its connection: it entered the sandbox and started its
/// executor (a CUDA context made), and waits on its standard input, a socket pair, for the
/// connection ([`WarmWorker::hand`]).
#[derive(Debug)]
pub struct WarmWorker {
    worker: Worker,
    handoff: UnixStream,
}

impl WarmWorker {
    /// Passes `conn` to the worker, which serves it as if it had been started with it.
    /// Gives `conn` back if the worker is gone.
    pub fn hand(self, conn: OwnedFd) -> Result<Worker, OwnedFd> {
        use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
        let fds = [conn.as_raw_fd()];
        let iov = [io::IoSlice::new(&[HANDOFF])];
        let sent = sendmsg::<()>(
            self.handoff.as_raw_fd(),
            &iov,
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::MSG_NOSIGNAL,
            None,
        );
        match sent {
            Ok(1) => Ok(self.worker),
            r => {
                debug!(
                    "warm worker {} gone ({r:?}); starting one",
                    self.worker.pid()
                );
                Err(conn)
            }
        }
    }
}

/// Backend to a warm worker, on its standard input, with the connection it serves.
const HANDOFF: u8 = b'C';

/// In a warm worker: waits for the connection the backend hands over on `stdin` (the socket
/// pair the backend made). `None`: the backend closed it (it exits, or has no
/// connection for this worker).
pub fn receive_handoff(stdin: &OwnedFd) -> io::Result<Option<OwnedFd>> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    let mut byte = [0u8; 1];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
    loop {
        let mut iov = [io::IoSliceMut::new(&mut byte)];
        let msg = match recvmsg::<()>(
            stdin.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(m) => m,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        };
        if msg.bytes == 0 {
            return Ok(None);
        }
        let mut got = None;
        for c in msg.cmsgs().map_err(io::Error::from)? {
            if let ControlMessageOwned::ScmRights(fds) = c {
                for fd in fds {
                    // SAFETY: the kernel just installed `fd` in this process for us;
                    // nothing else owns it.
                    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
                    got.get_or_insert(owned);
                }
            }
        }
        return match got {
            Some(fd) if byte[0] == HANDOFF => Ok(Some(fd)),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the backend handed over no connection",
            )),
        };
    }
}

impl Workers {
    /// Workers running executor `kind`, started with `args` (the backend's arguments after
    /// the program name: the subcommand and its options). At most `max_live` run at once
    /// (reaped ones count until they are reaped, so connections closed early cannot pile
    /// up processes).
    pub fn new(kind: ExecutorKind, args: Vec<OsString>, max_live: usize) -> io::Result<Self> {
        Ok(Self {
            // The running binary even if its file was replaced or removed since (an
            // upgrade): workers always match the backend.
            exe: PathBuf::from("/proc/self/exe"),
            kind,
            args,
            grace: TEARDOWN_GRACE,
            live: Arc::default(),
            max_live: max_live.max(1),
            warm: false,
            ready: Arc::default(),
            share_jit_cache: false,
        })
    }

    /// Lets CUDA workers share the driver's JIT cache (on disk, per user:
    /// `--share-cuda-jit-cache`). By default each runs with `CUDA_CACHE_DISABLE=1`, so that
    /// no tenant can tell from a fast module load that another loaded the same PTX before.
    pub fn share_jit_cache(&mut self) {
        self.share_jit_cache = true;
    }

    /// The environment a worker starts with beyond the backend's own: what it must not
    /// share with other tenants' workers.
    fn worker_env(&self) -> Vec<(&'static str, &'static str)> {
        match self.kind {
            ExecutorKind::Cuda if !self.share_jit_cache => vec![("CUDA_CACHE_DISABLE", "1")],
            _ => Vec::new(),
        }
    }

    /// Keeps a socket worker started ahead of each connection (`--warm-context always`), so
    /// a new session does not wait for a process to start and its executor (a CUDA
    /// context) to be made.
    pub fn keep_warm(&mut self) {
        self.warm = true;
    }

    /// The worker started ahead of this connection, if one waits.
    pub fn take_warm(&self) -> Option<WarmWorker> {
        self.ready.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Starts the next warm worker unless one waits, warm workers are off, or a new one
    /// would leave no room for a worker started for a connection. Call it on the thread
    /// that lives as long as the backend (the accept loop): a worker dies with the thread
    /// that started it.
    pub fn refill_warm(&self) {
        if !self.warm {
            return;
        }
        let mut ready = self.ready.lock().unwrap_or_else(|e| e.into_inner());
        if ready.is_some() || self.live() + 1 >= self.max_live {
            return;
        }
        match self.spawn_warm() {
            Ok(w) => *ready = Some(w),
            Err(e) => LIMITER.warn(format_args!("cannot start a warm worker: {e}")),
        }
    }

    fn spawn_warm(&self) -> io::Result<WarmWorker> {
        let (handoff, theirs) = UnixStream::pair()?;
        let worker = self.spawn_as(Role::Socket, Some(OwnedFd::from(theirs)), true)?;
        Ok(WarmWorker { worker, handoff })
    }

    /// Workers alive now.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    /// The executor kind.
    pub fn kind(&self) -> ExecutorKind {
        self.kind
    }

    /// How long a worker may take to exit after its session ended.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// Starts a worker in `role` with `stdin` (a connection or a listening socket), unless
    /// `max_live` workers are alive already (`WouldBlock`).
    pub fn spawn(&self, role: Role, stdin: Option<OwnedFd>) -> io::Result<Worker> {
        self.spawn_as(role, stdin, false)
    }

    /// [`Workers::spawn`]; `warm`: a socket worker whose standard input is a socket pair the
    /// connection will come on ([`WarmWorker`]).
    fn spawn_as(&self, role: Role, stdin: Option<OwnedFd>, warm: bool) -> io::Result<Worker> {
        let taken = self
            .live
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max_live).then_some(n + 1)
            });
        if taken.is_err() {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} worker processes alive already", self.max_live),
            ));
        }
        let live = Live(self.live.clone());
        let (link, theirs) = UnixStream::pair()?;
        // The worker's session counters (see `crate::metrics`), as its descriptor 3.
        let (block, metrics) = match role {
            Role::Probe => (None, None),
            _ => {
                let (fd, ticket) = crate::metrics::workers().starting()?;
                (fd, Some(ticket))
            }
        };
        let block_fd = block.as_ref().map(|b| b.as_raw_fd());
        let mut cmd = Command::new(&self.exe);
        cmd.arg("worker")
            .args(["--role", role.as_str(), "--executor"])
            .arg(match self.kind {
                ExecutorKind::Cpu => "cpu",
                ExecutorKind::Cuda => "cuda",
            });
        if block.is_some() {
            cmd.args(["--metrics-fd", &METRICS_FD.to_string()]);
        }
        if warm {
            cmd.arg("--warm");
        }
        cmd.arg("--")
            .args(&self.args)
            .envs(self.worker_env())
            .stdin(stdin.map_or_else(Stdio::null, Stdio::from))
            .stdout(Stdio::from(OwnedFd::from(theirs)))
            .stderr(Stdio::inherit());
        let parent = std::process::id();
        // SAFETY: between fork and exec the closure only calls setsid, prctl, getppid,
        // close_range, dup2 and fcntl (async-signal-safe) and allocates nothing on success.
        unsafe {
            cmd.pre_exec(move || {
                // No controlling terminal (no TIOCSTI into the backend's), its own process
                // group.
                libc::setsid();
                // The worker dies with the backend (with the thread that started it: the
                // accept loop, which lives as long as the backend).
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The backend may have died before the line above.
                if libc::getppid() as u32 != parent {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                // Nothing but stdin, stdout and stderr crosses into the worker, not even a
                // descriptor the backend inherited without close-on-exec (Linux 5.11+;
                // older kernels: the backend's own descriptors are close-on-exec anyway).
                libc::syscall(
                    libc::SYS_close_range,
                    3u32,
                    u32::MAX,
                    libc::CLOSE_RANGE_CLOEXEC,
                );
                // Except the metrics block, as descriptor 3 (dup2 clears close-on-exec;
                // if it is 3 already, clear it by hand).
                if let Some(fd) = block_fd {
                    let r = if fd == METRICS_FD {
                        libc::fcntl(fd, libc::F_SETFD, 0)
                    } else {
                        libc::dup2(fd, METRICS_FD)
                    };
                    if r < 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        drop(block);
        Ok(Worker {
            child,
            link,
            reaped: false,
            metrics,
            _live: live,
        })
    }

    /// Starts the CUDA executor in a probe worker: `Ok(pageable)` (whether kernels can reach
    /// pageable memory) if it works, else why not (the worker's own log says more).
    pub fn probe(&self) -> Result<bool, String> {
        let mut w = self
            .spawn(Role::Probe, None)
            .map_err(|e| format!("cannot start a worker process: {e}"))?;
        let mut said = String::new();
        let _ = (&w.link).take(256).read_to_string(&mut said);
        let st = w.child.wait().map_err(|e| e.to_string())?;
        w.reaped = true;
        match said.trim().strip_prefix("cuda pageable=") {
            Some(p) if st.success() => Ok(p == "1"),
            _ => Err(format!(
                "the CUDA executor did not start in a worker ({st})"
            )),
        }
    }
}

/// Gives a live worker's place back when dropped.
#[derive(Debug)]
struct Live(Arc<AtomicUsize>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A running worker. Dropped before it was reaped ([`Worker::supervise`]), it is killed and
/// reaped then.
#[derive(Debug)]
pub struct Worker {
    child: Child,
    link: UnixStream,
    reaped: bool,
    /// Its session counters' place (retired once it is reaped: after `child`).
    metrics: Option<crate::metrics::WorkerTicket>,
    _live: Live,
}

impl Drop for Worker {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Worker {
    fn exited(&self, how: WorkerExit) {
        if let Some(m) = &self.metrics {
            m.exited(how);
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Serves the worker's requests until it exits, and reaps it: `admit` answers each
    /// [`ADMIT`] (`Some(sessions)`: admitted, and how many sessions the backend now serves). Once `hangup` (the worker's connection, watched for a peer shutdown and
    /// never read) hangs up, or the worker says [`ENDED`] or closes its link, it has `grace`
    /// to exit before it is killed.
    pub fn supervise(
        mut self,
        hangup: Option<OwnedFd>,
        grace: Duration,
        mut admit: impl FnMut() -> Option<u32>,
    ) -> io::Result<ExitStatus> {
        let pid = self.pid();
        let mut hangup = hangup;
        let mut link_open = true;
        let mut deadline: Option<Instant> = None;
        self.link.set_nonblocking(true)?;
        let rdhup = PollFlags::from_bits_retain(libc::POLLRDHUP);
        loop {
            if let Some(st) = self.child.try_wait()? {
                self.reaped = true;
                self.exited(if st.success() {
                    WorkerExit::Clean
                } else {
                    WorkerExit::Failed
                });
                return Ok(st);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                LIMITER.warn(format_args!(
                    "worker {pid} still runs {} s after its session ended; killing it",
                    grace.as_secs_f32()
                ));
                let _ = self.child.kill();
                let st = self.child.wait();
                self.reaped = st.is_ok();
                self.exited(WorkerExit::Killed);
                return st;
            }
            let (link_ev, hangup_ev) = {
                let mut fds = Vec::with_capacity(2);
                if link_open {
                    fds.push(PollFd::new(self.link.as_fd(), PollFlags::POLLIN));
                }
                if let Some(h) = &hangup {
                    fds.push(PollFd::new(h.as_fd(), rdhup));
                }
                // Without a deadline, sleep until something happens (an exiting worker
                // closes its link); with one, look at the clock and the child often.
                let timeout = if deadline.is_none() && link_open {
                    PollTimeout::NONE
                } else {
                    PollTimeout::from(100u8)
                };
                match poll(&mut fds, timeout) {
                    Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                    Err(e) => return Err(e.into()),
                }
                // nix does not name Linux's POLLRDHUP: `revents` is `None` for a peer
                // shutdown (unknown bits), `Some(empty)` for no event.
                let ev = |i: usize| {
                    fds.get(i)
                        .is_some_and(|f| f.revents().is_none_or(|r| !r.is_empty()))
                };
                if link_open {
                    (ev(0), ev(1))
                } else {
                    (false, ev(0))
                }
            };
            if hangup_ev {
                debug!("worker {pid}: its client hung up");
                hangup = None;
                deadline.get_or_insert(Instant::now() + grace);
            }
            if link_ev {
                let mut buf = [0u8; 16];
                match (&self.link).read(&mut buf) {
                    Ok(0) => {
                        link_open = false;
                        deadline.get_or_insert(Instant::now() + grace);
                    }
                    Ok(n) => {
                        for &b in &buf[..n] {
                            match b {
                                ADMIT => {
                                    let mut a = [REFUSED, 0, 0, 0, 0];
                                    if let Some(n) = admit() {
                                        a[0] = ADMITTED;
                                        a[1..].copy_from_slice(&n.to_le_bytes());
                                    }
                                    let len = if a[0] == ADMITTED { 5 } else { 1 };
                                    let _ = (&self.link).write_all(&a[..len]);
                                }
                                ENDED => {
                                    deadline.get_or_insert(Instant::now() + grace);
                                }
                                _ => {
                                    LIMITER.warn(format_args!(
                                        "worker {pid} said something unknown; killing it"
                                    ));
                                    deadline = Some(Instant::now());
                                }
                            }
                        }
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                        ) => {}
                    Err(_) => {
                        link_open = false;
                        deadline.get_or_insert(Instant::now() + grace);
                    }
                }
            }
        }
    }
}

/// A worker's side of its link to the backend.
#[derive(Debug)]
pub struct ParentLink(UnixStream);

impl ParentLink {
    /// In a worker: takes the link from standard output (where [`Workers::spawn`] put it)
    /// and makes standard output a copy of standard error.
    pub fn take() -> io::Result<Self> {
        let out = io::stdout();
        let fd = nix::fcntl::fcntl(out.as_fd(), nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(3))?;
        // SAFETY: fcntl just made `fd`, a descriptor this process owns and nothing else uses.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let ty = nix::sys::socket::getsockopt(&fd, nix::sys::socket::sockopt::SockType);
        if ty != Ok(nix::sys::socket::SockType::Stream) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a worker is started by vcuda-backend itself (its standard output must be the \
                 backend's link)",
            ));
        }
        // SAFETY: dup2 of two descriptors that stay open (2 is inherited) onto fd 1, which
        // only the standard library's stdout uses; nothing is buffered in it yet.
        if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Self(UnixStream::from(fd)))
    }

    /// Asks the backend whether a new session may start: `Some(sessions)` (how many the
    /// backend serves with this one) if it may.
    pub fn admit(&mut self) -> io::Result<Option<u32>> {
        self.0.write_all(&[ADMIT])?;
        let mut b = [0u8];
        self.0.read_exact(&mut b)?;
        if b[0] != ADMITTED {
            return Ok(None);
        }
        let mut n = [0u8; 4];
        self.0.read_exact(&mut n)?;
        Ok(Some(u32::from_le_bytes(n)))
    }

    /// Says the connection ended (the backend then gives the worker [`TEARDOWN_GRACE`]).
    pub fn ended(&mut self) {
        let _ = self.0.write_all(&[ENDED]);
    }

    /// Says one line (a probe's result).
    pub fn say(&mut self, line: &str) -> io::Result<()> {
        self.0.write_all(line.as_bytes())?;
        self.0.write_all(b"\n")
    }

    /// Another handle on the link.
    pub fn try_clone(&self) -> io::Result<Self> {
        self.0.try_clone().map(Self)
    }
}

/// In a worker: takes what the backend handed over as standard input (a connection or a
/// listening socket), leaving `/dev/null` in its place.
pub fn take_stdin() -> io::Result<OwnedFd> {
    let stdin = io::stdin();
    let fd = nix::fcntl::fcntl(stdin.as_fd(), nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(3))?;
    // SAFETY: fcntl just made `fd`, a descriptor this process owns and nothing else uses.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let null = std::fs::File::open("/dev/null")?;
    // SAFETY: dup2 of an open descriptor onto fd 0, which nothing reads.
    if unsafe { libc::dup2(null.as_raw_fd(), libc::STDIN_FILENO) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_workers_keep_the_jit_cache_to_themselves() {
        let mut w = Workers::new(ExecutorKind::Cuda, Vec::new(), 1).unwrap();
        assert_eq!(w.worker_env(), [("CUDA_CACHE_DISABLE", "1")]);
        w.share_jit_cache();
        assert!(w.worker_env().is_empty());
        let cpu = Workers::new(ExecutorKind::Cpu, Vec::new(), 1).unwrap();
        assert!(cpu.worker_env().is_empty());
    }
}
