// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `vcuda-backend`: serves vcuda guests.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use log::{error, info};
use vcuda_backend::Backend;
use vcuda_backend::executor::ExecutorFactory;
use vcuda_backend::executor::cpu::{CpuConfig, CpuFactory};
use vcuda_backend::executor::cuda::{CudaConfig, CudaFactory, WarmMode};
use vcuda_backend::memsize::MemSize;
use vcuda_backend::socket::{self, AccessPolicy, Listen, ServerConfig, Sessions, Timeouts};
use vcuda_backend::worker::{self, ParentLink, Workers};
use vcuda_protocol::ExecutorKind;

#[derive(Parser, Debug)]
#[command(
    name = "vcuda-backend",
    version,
    about = "Serves CUDA calls from vcuda guests"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve the socket transport (development, containers, remote GPUs).
    Serve {
        /// Unix socket path, tcp:HOST:PORT, or fd:N (an inherited listening Unix socket, as
        /// socket activation hands over; `vcuda run` uses it). Default:
        /// $XDG_RUNTIME_DIR/vcuda/vcuda.sock, else /run/vcuda/vcuda.sock for root (the
        /// directory is created mode 0700).
        #[arg(long, env = "VCUDA_SOCKET")]
        socket: Option<String>,
        #[command(flatten)]
        exec: ExecArgs,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Serve a VM through vhost-user (QEMU's vhost-user-cuda-pci device; see DEVICE.md).
    VhostUser {
        /// The vhost-user socket (QEMU: -chardev socket,id=ID,path=PATH).
        #[arg(long)]
        socket: std::path::PathBuf,
        #[command(flatten)]
        exec: ExecArgs,
        /// Request queues; must equal QEMU's num-request-queues.
        #[arg(long, default_value_t = vcuda_protocol::virtio::DEFAULT_REQUEST_QUEUES)]
        queues: u32,
        /// Most sessions (guest processes) per VM.
        #[arg(long, default_value_t = 256)]
        max_sessions: usize,
        /// Which calls a queue thread runs itself instead of handing them to the session's
        /// worker thread: `short` (calls that never wait, such as cudaStreamQuery,
        /// cudaEventQuery, cudaMemGetInfo, and on the CPU executor copies of up to 64 KiB,
        /// when the session has nothing else queued or running; one thread wake-up less per
        /// round trip) or `none`.
        #[arg(long, value_enum, default_value_t = QueueCalls::Short)]
        queue_thread_calls: QueueCalls,
        /// Poll each request queue for this many microseconds after its last chain, with the
        /// guest's kicks suppressed, before sleeping again (0: never poll). Costs up to one
        /// host core per polling queue while the guest posts calls less than N µs apart, and
        /// nothing while it is idle beyond N µs after its last call; saves the guest's kick
        /// (a VM exit) and a host thread wake-up per call. At most 1000000.
        #[arg(long, default_value_t = 0,
              value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
        poll_us: u32,
        /// Live migration, source side: serve the VM's device memory on this Unix socket
        /// (made with mode 0600), so that a destination backend started with
        /// --precopy-from copies it while the VM still runs and only what changed since
        /// moves inside the downtime (MIGRATION.md). Whoever can connect reads the VM's
        /// device memory. Needs --isolation thread (the CPU executor's default).
        #[arg(long, value_name = "PATH")]
        precopy_listen: Option<std::path::PathBuf>,
        /// Live migration, destination side: copy the incoming VM's device memory ahead
        /// of the migration from the source backend's --precopy-listen socket.
        #[arg(long, value_name = "PATH")]
        precopy_from: Option<std::path::PathBuf>,
    },
    /// A per-tenant worker process (started by the backend itself; see --isolation).
    #[command(hide = true)]
    Worker {
        /// What the worker does.
        #[arg(long, value_enum)]
        role: WorkerRole,
        /// The executor the backend chose.
        #[arg(long, value_enum)]
        executor: ExecutorChoice,
        /// The descriptor of the block the worker counts its sessions into (metrics).
        #[arg(long)]
        metrics_fd: Option<i32>,
        /// Started ahead of its connection: start the executor now, then wait for the
        /// connection on standard input (a socket pair; `--role socket` only).
        #[arg(long)]
        warm: bool,
        /// The backend's own arguments (its subcommand and options).
        #[arg(last = true)]
        args: Vec<OsString>,
    },
}

/// `--queue-thread-calls`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum QueueCalls {
    /// Short calls on an idle session run on the queue thread.
    Short,
    /// Every call runs on its session's worker thread.
    None,
}

impl From<QueueCalls> for vcuda_backend::vhost_user::QueueThreadCalls {
    fn from(c: QueueCalls) -> Self {
        match c {
            QueueCalls::Short => Self::Short,
            QueueCalls::None => Self::None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum WorkerRole {
    Socket,
    VhostUser,
    Probe,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Warm {
    /// Each session makes its context.
    Off,
    /// The context made at start (to check the device) waits for the first session.
    First,
    /// One context is kept ready for the next session.
    Always,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Isolation {
    /// `process` for the CUDA executor, `thread` for the CPU executor.
    Auto,
    /// Each session (socket connection) or VM (vhost-user connection) in a sandboxed
    /// worker process of its own, killed when it ends or wedges.
    Process,
    /// Every session on a thread of the backend process.
    Thread,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum WorkerSeccomp {
    /// The allow list where the executor's calls were traced (the CPU executor's), else
    /// the deny list.
    Auto,
    /// Only the calls workers were traced making.
    AllowList,
    /// Everything but the calls an attacker would want first.
    DenyList,
}

impl WorkerSeccomp {
    /// The filter a worker of `kind` installs.
    fn policy(self, kind: ExecutorKind) -> vcuda_backend::sandbox::Policy {
        use vcuda_backend::sandbox::Policy;
        match (self, kind) {
            (Self::AllowList, _) | (Self::Auto, ExecutorKind::Cpu) => Policy::AllowList,
            (Self::DenyList, _) | (Self::Auto, ExecutorKind::Cuda) => Policy::DenyList,
        }
    }
}

#[derive(clap::Args, Debug, Clone)]
struct ExecArgs {
    /// Serve Prometheus metrics at http://HOST:PORT/metrics (sessions, calls, bytes,
    /// launches, errors, memory, workers; see the README). Port 0 picks a free one (the
    /// log says which). Off by default.
    #[arg(long, value_name = "HOST:PORT", env = "VCUDA_METRICS")]
    metrics: Option<String>,
    /// Which executor replays the calls.
    #[arg(long, value_enum, default_value_t = ExecutorChoice::Auto, env = "VCUDA_EXECUTOR")]
    executor: ExecutorChoice,
    /// Where sessions run: `process` gives each socket client or VM a sandboxed worker
    /// process (seccomp, not dumpable, killed when its session ends or wedges), so a kernel
    /// that reaches pageable memory or a fault that corrupts the process only hurts its own
    /// tenant; `thread` runs every session in this process. `auto`: process for the CUDA
    /// executor, thread for the CPU executor (whose simulated device memory is then shared
    /// by all sessions; in a worker each has its own --cpu-memory).
    #[arg(long, value_enum, default_value_t = Isolation::Auto, env = "VCUDA_ISOLATION")]
    isolation: Isolation,
    /// The seccomp filter of worker processes: `allow-list` admits only the system calls
    /// traced from real workers, `deny-list` refuses only those an attacker would want
    /// first (starting programs, other processes, the kernel, mounts). `auto`: the allow
    /// list for the CPU executor, whose calls were traced; the deny list for the CUDA
    /// executor until NVIDIA's driver's calls are traced on a GPU (tests/gpu/syscalls.sh).
    /// A driver that needs a call the allow list lacks fails the start-up probe, which says
    /// so.
    #[arg(long, value_enum, default_value_t = WorkerSeccomp::Auto, env = "VCUDA_WORKER_SECCOMP")]
    worker_seccomp: WorkerSeccomp,
    /// CPU executor: simulated device memory shared by all sessions, as a size (512M, 8G)
    /// or a share of this host's memory (its cgroup's limit if lower).
    #[arg(long, value_name = "SIZE", default_value = "50%")]
    cpu_memory: MemSize,
    /// CPU executor: the same in MiB (older spelling; overrides --cpu-memory).
    #[arg(long, hide = true)]
    cpu_memory_mib: Option<u64>,
    /// Device memory one session may hold, as a size or a share of the executor's memory
    /// (the CPU executor's total, or the GPU's). The default lets no session take more
    /// than half, so one program cannot starve the others.
    #[arg(long, value_name = "SIZE", default_value = "50%")]
    session_mem_limit: MemSize,
    /// CPU executor: threads that run kernel blocks (0: one per core).
    #[arg(long, default_value_t = 0)]
    cpu_threads: usize,
    /// Fail a kernel launch still running after SECONDS with cudaErrorLaunchTimeout, like a
    /// GPU watchdog (default: no limit, like a GPU without one). CUDA executor: any wait for
    /// a session's GPU work that lasts longer fails so, and ends the session's context.
    #[arg(long, value_name = "SECONDS")]
    kernel_timeout: Option<f64>,
    /// CPU executor: the memory checker. A kernel's access outside its allocations fails
    /// with cudaErrorIllegalAddress even where a GPU would let it read an allocation's
    /// padding (a few bytes past its end), and the fault is logged with the kernel, the PTX
    /// line, the address and the nearest allocation.
    #[arg(long, env = "VCUDA_MEMCHECK", value_parser = clap::builder::FalseyValueParser::new())]
    memcheck: bool,
    /// CUDA executor: serve several sessions at once even where kernels can reach this
    /// process's pageable memory (HMM or ATS on), which lets one session's kernels read
    /// another's data; without it such a GPU serves one session at a time.
    #[arg(long)]
    allow_pageable_access: bool,
    /// CUDA executor: pass CUDA's own IPC handles (cudaIpcGetMemHandle and friends) between
    /// sessions. The driver's handle is then the only check on which memory a session
    /// opens, so leave it off where tenants must not reach each other; without it the IPC
    /// calls answer cudaErrorNotSupported on the CUDA executor (the CPU executor checks
    /// handles of its own, always on).
    #[arg(long)]
    cuda_ipc: bool,
    /// CUDA executor: make sessions migratable (`vcuda vm run --migrate-after` sets it):
    /// device memory is mapped at addresses the session chooses (the driver's virtual
    /// memory calls, 2 MiB pages), so a loaded session gets its allocations back at the same
    /// addresses. Costs a few driver calls per new 2 MiB page of a cudaMalloc.
    #[arg(long, env = "VCUDA_CUDA_MIGRATABLE", value_parser = clap::builder::FalseyValueParser::new())]
    cuda_migratable: bool,
    /// CUDA executor in worker processes: let the workers share the driver's JIT cache (on
    /// disk, per user), so that PTX one session loaded loads faster in the next. Without it
    /// each worker runs with CUDA_CACHE_DISABLE=1: a tenant cannot tell from a fast load
    /// that another tenant loaded the same PTX before. Modules carrying code for the GPU
    /// (SASS) load the same either way; PTX-only ones are compiled by the driver at each load.
    #[arg(long)]
    share_cuda_jit_cache: bool,
    /// Prepare sessions before they ask, so that a new session does not wait for a CUDA
    /// context (or a worker process) to be made. Sessions on threads (CUDA executor):
    /// `first` keeps the context made at start (to check the device) for the first session;
    /// `always` also starts the next one whenever a session takes it (it holds a context's
    /// device memory while it waits). Worker processes (--isolation process, socket
    /// transport): `always` keeps one worker started ahead of the next connection, in its
    /// sandbox with its executor (and context) made; `first` and `off` start each worker
    /// for its connection.
    #[arg(long, value_enum, default_value_t = Warm::Always, env = "VCUDA_WARM_CONTEXT")]
    warm_context: Warm,
    /// CUDA executor over vhost-user: register (pin) all of the guest's RAM with the
    /// driver so copies from it are one DMA instead of staged. It pins every guest page at
    /// connect and must not be used with virtio-balloon, free page reporting, virtio-mem
    /// or discard (the driver would keep old pages pinned behind new guest memory).
    #[arg(long)]
    register_guest_memory: bool,
    /// CUDA executor: the GPU to serve (guests see it as device 0).
    #[arg(long, default_value_t = 0, env = "VCUDA_CUDA_DEVICE")]
    cuda_device: u32,
    /// CUDA executor: pinned staging buffer size in KiB.
    #[arg(long, default_value_t = 4096)]
    cuda_staging_kib: usize,
    /// CUDA executor: pinned staging buffers per session.
    #[arg(long, default_value_t = 4)]
    cuda_staging_buffers: usize,
    /// CUDA executor: capture device printf (this process's stdout) and return it to the
    /// guest while one session is live.
    #[arg(
        long,
        env = "VCUDA_CUDA_CAPTURE_PRINTF",
        action = clap::ArgAction::SetTrue,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    cuda_capture_printf: bool,
}

#[derive(clap::Args, Debug)]
struct ServerArgs {
    /// Most concurrent sessions.
    #[arg(long, default_value_t = 256)]
    max_sessions: usize,
    /// Most connections per peer uid (Unix socket) or address (TCP).
    #[arg(long, default_value_t = 64)]
    max_sessions_per_peer: usize,
    /// Most connections that have not sent their Hello yet; when full, the oldest is closed.
    #[arg(long, default_value_t = 32)]
    max_pending: usize,
    /// Milliseconds a new connection has to send its complete Hello.
    #[arg(long, default_value_t = 10_000)]
    handshake_timeout_ms: u64,
    /// Milliseconds a started message may stall between two reads (and a reply between
    /// two writes); sessions may idle between messages.
    #[arg(long, default_value_t = 30_000)]
    message_timeout_ms: u64,
    /// A peer uid to serve on the Unix socket (repeatable). Default: this backend's uid
    /// and root.
    #[arg(long = "allow-uid", value_name = "UID")]
    allow_uid: Vec<u32>,
    /// Make the Unix socket 0660 with this group (its directory 0710) and serve the
    /// group's members too.
    #[arg(long, value_name = "GROUP")]
    socket_group: Option<String>,
    /// TCP with mutual TLS: this server's certificate chain (PEM). Needs --tls-key and
    /// --tls-client-ca; required to listen on a non-loopback address.
    #[arg(long, value_name = "PEM", requires_all = ["tls_key", "tls_client_ca"])]
    tls_cert: Option<PathBuf>,
    /// TCP with mutual TLS: the private key of --tls-cert (PEM).
    #[arg(long, value_name = "PEM", requires_all = ["tls_cert", "tls_client_ca"])]
    tls_key: Option<PathBuf>,
    /// TCP with mutual TLS: the CA that client certificates must chain to (PEM); clients
    /// without such a certificate are never served.
    #[arg(long, value_name = "PEM", requires_all = ["tls_cert", "tls_key"])]
    tls_client_ca: Option<PathBuf>,
    /// Print `ready` on stdout once the socket accepts connections.
    #[arg(long)]
    notify_ready: bool,
    /// Microseconds a session spins between messages before it sleeps (0: never). Saves
    /// the wake-up of a sleeping core on each call, at up to this much CPU time per gap;
    /// `vcuda run` uses 50 for its private backend.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    spin_us: u64,
}

impl ServerArgs {
    fn config(&self, private_dir: bool) -> Result<ServerConfig, String> {
        let mut access = AccessPolicy::with_uids(&self.allow_uid);
        if let Some(g) = &self.socket_group {
            access.group = Some(socket::resolve_group(g)?);
        }
        Ok(ServerConfig {
            max_sessions: self.max_sessions,
            max_sessions_per_peer: self.max_sessions_per_peer,
            max_pending: self.max_pending,
            timeouts: Timeouts {
                handshake: Duration::from_millis(self.handshake_timeout_ms),
                message: Duration::from_millis(self.message_timeout_ms),
                spin: Duration::from_micros(self.spin_us),
            },
            access,
            private_dir,
            tls: match (&self.tls_cert, &self.tls_key, &self.tls_client_ca) {
                (Some(cert), Some(key), Some(client_ca)) => Some(
                    socket::tls::server_config(&socket::tls::TlsFiles {
                        cert,
                        key,
                        client_ca,
                    })
                    .map_err(|e| e.to_string())?,
                ),
                _ => None,
            },
            notify_ready: self.notify_ready,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ExecutorChoice {
    /// The real GPU if one is usable, else the CPU executor.
    Auto,
    /// The CPU reference executor (PTX interpreter).
    Cpu,
    /// The real GPU through the CUDA driver.
    Cuda,
}

/// The CPU executor's simulated device memory in bytes (`--cpu-memory`).
fn cpu_memory(args: &ExecArgs) -> u64 {
    match args.cpu_memory_mib {
        Some(mib) => mib.saturating_mul(1 << 20),
        None => {
            // Without /proc, assume 16 GiB.
            let host = vcuda_backend::memsize::host_memory().unwrap_or(16 << 30);
            args.cpu_memory.of(host)
        }
    }
}

fn make_factory(args: &ExecArgs) -> Result<Arc<dyn ExecutorFactory>, String> {
    make_factory_for(args, false)
}

/// The executor factory; `tenant_process` in a worker process (one tenant).
fn make_factory_for(
    args: &ExecArgs,
    tenant_process: bool,
) -> Result<Arc<dyn ExecutorFactory>, String> {
    let kernel_timeout = args
        .kernel_timeout
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(std::time::Duration::from_secs_f64);
    let cpu = || -> Arc<dyn ExecutorFactory> {
        let memory = cpu_memory(args);
        let session_limit = args.session_mem_limit.of(memory);
        info!(
            "CPU executor: {} MiB of simulated device memory, at most {} MiB per session",
            memory >> 20,
            session_limit >> 20
        );
        Arc::new(CpuFactory::new(CpuConfig {
            memory,
            session_limit,
            threads: args.cpu_threads,
            kernel_timeout,
            memcheck: args.memcheck,
        }))
    };
    let cuda = || {
        CudaFactory::new(CudaConfig {
            device: args.cuda_device,
            staging_chunk: args.cuda_staging_kib.saturating_mul(1 << 10),
            staging_depth: args.cuda_staging_buffers,
            capture_printf: args.cuda_capture_printf,
            kernel_timeout,
            allow_pageable_access: args.allow_pageable_access,
            session_mem_limit: args.session_mem_limit,
            register_guest_memory: args.register_guest_memory,
            tenant_process,
            ipc: args.cuda_ipc,
            migratable: args.cuda_migratable,
            warm: match args.warm_context {
                Warm::Off => WarmMode::Off,
                Warm::First => WarmMode::First,
                Warm::Always => WarmMode::Always,
            },
        })
    };
    match args.executor {
        ExecutorChoice::Cpu => Ok(cpu()),
        ExecutorChoice::Cuda => Ok(Arc::new(cuda().map_err(|e| e.to_string())?)),
        ExecutorChoice::Auto => match cuda() {
            Ok(f) => {
                info!("executor: cuda (auto)");
                Ok(Arc::new(f))
            }
            Err(e) => {
                info!("executor: cpu (auto; {e})");
                Ok(cpu())
            }
        },
    }
}

/// Where sessions run, decided at start.
enum Plan {
    /// In this process.
    InProcess(Arc<dyn ExecutorFactory>),
    /// In worker processes.
    Workers(Workers),
}

/// Chooses between in-process sessions and worker processes (`--isolation`). The backend
/// itself never loads the CUDA driver when its sessions run in workers: a probe worker
/// checks that the executor starts.
fn plan(exec: &ExecArgs, max_workers: usize) -> Result<Plan, String> {
    let workers = |kind| {
        // The filters must build here (a supported architecture) before any worker needs
        // them.
        vcuda_backend::sandbox::filters(std::process::id(), exec.worker_seccomp.policy(kind))
            .map_err(|e| e.to_string())?;
        let mut w = Workers::new(kind, std::env::args_os().skip(1).collect(), max_workers)
            .map_err(|e| format!("cannot find this program to start workers: {e}"))?;
        if exec.warm_context == Warm::Always {
            w.keep_warm();
        }
        if exec.share_cuda_jit_cache {
            w.share_jit_cache();
        }
        Ok::<_, String>(w)
    };
    let cpu_workers = || -> Result<Plan, String> {
        info!("CPU executor: each session in a worker process with its own --cpu-memory");
        Ok(Plan::Workers(workers(ExecutorKind::Cpu)?))
    };
    match (exec.isolation, exec.executor) {
        (Isolation::Thread, _) | (Isolation::Auto, ExecutorChoice::Cpu) => {
            make_factory(exec).map(Plan::InProcess)
        }
        (Isolation::Process, ExecutorChoice::Cpu) => cpu_workers(),
        (_, choice) => {
            let w = workers(ExecutorKind::Cuda)?;
            match w.probe() {
                Ok(pageable) => {
                    if choice == ExecutorChoice::Auto {
                        info!("executor: cuda (auto)");
                    }
                    info!(
                        "CUDA executor: each session in a sandboxed worker process{}",
                        if pageable {
                            " (kernels can reach pageable memory, HMM/ATS: only their own \
                             worker's)"
                        } else {
                            ""
                        }
                    );
                    Ok(Plan::Workers(w))
                }
                Err(e) if choice == ExecutorChoice::Cuda => Err(e),
                Err(e) => {
                    info!("executor: cpu (auto; {e})");
                    let mut cpu = ExecArgs::clone(exec);
                    cpu.executor = ExecutorChoice::Cpu;
                    match exec.isolation {
                        Isolation::Process => cpu_workers(),
                        _ => make_factory(&cpu).map(Plan::InProcess),
                    }
                }
            }
        }
    }
}

/// In a worker: counts sessions into the block the backend handed over as `fd`.
fn take_metrics_block(fd: i32) -> std::io::Result<()> {
    use std::os::fd::{FromRawFd, OwnedFd};
    if fd != worker::METRICS_FD {
        return Err(std::io::Error::other("not the descriptor workers get"));
    }
    // SAFETY: F_GETFD only asks whether `fd` is open.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the backend hands descriptor 3 to this worker for this purpose; it is open
    // (checked) and nothing else here uses it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    vcuda_backend::metrics::use_worker_block(&owned)
}

/// Starts the `/metrics` endpoint if `--metrics` asks for one.
fn start_metrics(exec: &ExecArgs, plan: &Plan) -> Result<(), String> {
    let Some(addr) = &exec.metrics else {
        return Ok(());
    };
    let (kind, isolation, memory_limit) = match plan {
        Plan::InProcess(f) => (
            f.kind(),
            "thread",
            (f.kind() == ExecutorKind::Cpu).then(|| cpu_memory(exec)),
        ),
        Plan::Workers(w) => {
            vcuda_backend::metrics::enable_worker_blocks();
            (w.kind(), "process", None)
        }
    };
    let id = vcuda_backend::metrics::text::Identity {
        executor: match kind {
            ExecutorKind::Cpu => "cpu",
            ExecutorKind::Cuda => "cuda",
        },
        isolation,
        memory_limit,
    };
    vcuda_backend::metrics::http::spawn(addr, id)
        .map(drop)
        .map_err(|e| format!("--metrics {addr}: {e}"))
}

/// A worker process's main (see `vcuda_backend::worker`).
fn worker_main(
    role: WorkerRole,
    executor: ExecutorChoice,
    metrics_fd: Option<i32>,
    warm: bool,
    args: Vec<OsString>,
) -> ExitCode {
    let fail = |e: &dyn std::fmt::Display| {
        error!("{e}");
        ExitCode::FAILURE
    };
    if let Some(fd) = metrics_fd
        && let Err(e) = take_metrics_block(fd)
    {
        return fail(&format!("the metrics block (fd {fd}): {e}"));
    }
    let mut link = match ParentLink::take() {
        Ok(l) => l,
        Err(e) => return fail(&e),
    };
    let cli =
        match Cli::try_parse_from(std::iter::once(OsString::from("vcuda-backend")).chain(args)) {
            Ok(c) => c,
            Err(e) => return fail(&e),
        };
    let (mut exec, server, vhost) = match cli.command {
        Command::Serve { exec, server, .. } => (exec, Some(server), None),
        Command::VhostUser {
            socket,
            exec,
            queues,
            max_sessions,
            queue_thread_calls,
            poll_us,
            ..
        } => (
            exec,
            None,
            Some(vcuda_backend::vhost_user::VhostUserConfig {
                max_sessions,
                queue_thread_calls: queue_thread_calls.into(),
                poll: std::time::Duration::from_micros(u64::from(poll_us)),
                ..vcuda_backend::vhost_user::VhostUserConfig::new(socket, queues)
            }),
        ),
        Command::Worker { .. } => return fail(&"a worker cannot start workers"),
    };
    exec.executor = executor;
    let kind = match executor {
        ExecutorChoice::Cpu => ExecutorKind::Cpu,
        ExecutorChoice::Auto | ExecutorChoice::Cuda => ExecutorKind::Cuda,
    };
    let policy = exec.worker_seccomp.policy(kind);
    // A worker serves one session: no context ahead of another (a warm worker makes its
    // one session's context before the connection comes, below).
    exec.warm_context = Warm::Off;
    if role == WorkerRole::Probe {
        // Once as the driver may need at first (it may start nvidia-modprobe to create its
        // device nodes), then as workers run it: in the sandbox, a context created and
        // destroyed.
        let pageable = match make_factory_for(&exec, true) {
            Ok(f) => f.pageable_access(),
            Err(e) => return fail(&e),
        };
        if let Err(e) = vcuda_backend::sandbox::enter(policy) {
            return fail(&e);
        }
        // A session's executor: its own context, as a worker's first session makes.
        let sandboxed = make_factory_for(&exec, true).and_then(|f| {
            f.new_session(vcuda_backend::executor::Tenant::unique())
                .map(drop)
                .map_err(|s| format!("a session: {s}"))
        });
        if let Err(e) = sandboxed {
            return fail(&format!(
                "the CUDA executor does not start in the sandbox: {e}{}",
                if policy == vcuda_backend::sandbox::Policy::AllowList {
                    " (if this driver needs a system call the workers' allow list lacks, \
                     --worker-seccomp deny-list starts it; please report the call, \
                     tests/gpu/syscalls.sh traces them)"
                } else {
                    ""
                }
            ));
        }
        return match link.say(&format!("cuda pageable={}", u8::from(pageable))) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&e),
        };
    }
    // Before the executor (and the driver) start, and before anything is read from the
    // tenant.
    if let Err(e) = vcuda_backend::sandbox::enter(policy) {
        return fail(&e);
    }
    let handed = match worker::take_stdin() {
        Ok(fd) => fd,
        Err(e) => return fail(&e),
    };
    if warm {
        return warm_worker_main(role, exec, server, handed, link);
    }
    // The executor (and the driver) start only for a client that completed its handshake
    // and Hello (socket), or a VM that connected (vhost-user).
    let lazy =
        vcuda_backend::executor::LazyFactory::new(kind, move || make_factory_for(&exec, true));
    let backend = Backend::new(Arc::new(lazy));
    let r = match (role, server, vhost) {
        (WorkerRole::Socket, Some(server), _) => match server.config(false) {
            Ok(config) => {
                socket::serve_worker(handed, &backend, &config, link).map_err(|e| e.to_string())
            }
            Err(e) => Err(e),
        },
        (WorkerRole::VhostUser, _, Some(config)) => {
            vcuda_backend::vhost_user::serve_worker(config, backend, handed, link)
                .map_err(|e| e.to_string())
        }
        _ => Err("the worker's role does not match the backend's command".into()),
    };
    // (A socket session that ended with a timeout or a malformed message was logged and
    // is not the worker's failure: serve_worker says Ok then.)
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

/// A socket worker started ahead of its connection (`worker --warm`): in the sandbox
/// already, it starts the executor (the CUDA executor makes its session's context now),
/// then waits for the connection on `handoff` and serves it as any socket worker does.
fn warm_worker_main(
    role: WorkerRole,
    mut exec: ExecArgs,
    server: Option<ServerArgs>,
    handoff: std::os::fd::OwnedFd,
    link: ParentLink,
) -> ExitCode {
    let fail = |e: &dyn std::fmt::Display| {
        error!("{e}");
        ExitCode::FAILURE
    };
    let (WorkerRole::Socket, Some(server)) = (role, server) else {
        return fail(&"only a socket worker is started ahead of its connection");
    };
    exec.warm_context = Warm::First;
    let factory = match make_factory_for(&exec, true) {
        Ok(f) => f,
        Err(e) => return fail(&e),
    };
    let conn = match worker::receive_handoff(&handoff) {
        Ok(Some(c)) => c,
        // The backend had no connection for this worker (it exits).
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => return fail(&e),
    };
    drop(handoff);
    let backend = Backend::new(factory);
    let r = server.config(false).and_then(|config| {
        socket::serve_worker(conn, &backend, &config, link).map_err(|e| e.to_string())
    });
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

/// A backend that starts workers is not dumpable: a worker taken over (same uid) cannot
/// read or write its memory through `/proc`.
fn protect_backend() {
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        log::warn!("cannot make the backend undumpable: {e}");
    }
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope");
    if scope.as_deref().map(str::trim).unwrap_or("0") == "0" {
        log::warn!(
            "kernel.yama.ptrace_scope is 0 or absent: a worker taken over could trace a newer \
             worker of the same user before it enters its sandbox; set it to 1 (GPU-HOST.md)"
        );
    }
}

/// The log filter without `RUST_LOG`: Cranelift says what it compiles at `info`.
const DEFAULT_LOG: &str = "info,cranelift_jit=warn,cranelift_codegen=warn";

/// Crates whose `info` lines are the compiled kernels' code, kept at `warn` unless `RUST_LOG`
/// names them: a guest's kernels do not belong in the operator's log at `RUST_LOG=info`.
const QUIET_CRATES: [&str; 2] = ["cranelift_jit", "cranelift_codegen"];

fn init_log(worker: bool) {
    let mut b =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(DEFAULT_LOG));
    let named = std::env::var("RUST_LOG").unwrap_or_default();
    for c in QUIET_CRATES {
        if !named.contains(c) {
            b.filter_module(c, log::LevelFilter::Warn);
        }
    }
    if worker {
        use std::io::Write;
        let pid = std::process::id();
        b.format(move |buf, r| {
            writeln!(
                buf,
                "[{} {:5} {} worker {pid}] {}",
                buf.timestamp(),
                r.level(),
                r.target(),
                r.args()
            )
        });
    }
    b.init();
}

fn main() -> ExitCode {
    let is_worker = std::env::args_os().nth(1).is_some_and(|a| a == "worker");
    init_log(is_worker);
    let cli = Cli::parse();
    match cli.command {
        Command::Worker {
            role,
            executor,
            metrics_fd,
            warm,
            args,
        } => worker_main(role, executor, metrics_fd, warm, args),
        Command::Serve {
            socket,
            exec,
            server,
        } => {
            let (listen, private_dir) = match socket {
                Some(s) => (Listen::parse(&s), false),
                None => match socket::default_socket_path() {
                    Ok(p) => (Listen::Unix(p), true),
                    Err(e) => {
                        error!("{e}");
                        return ExitCode::FAILURE;
                    }
                },
            };
            let config = match server.config(private_dir) {
                Ok(c) => c,
                Err(e) => {
                    error!("{e}");
                    return ExitCode::FAILURE;
                }
            };
            if let Listen::Tcp(addr) = &listen {
                // Refuse before the executor (maybe a GPU context) starts.
                if let Err(e) = socket::check_tcp_listen(addr, config.tls.is_some()) {
                    error!("{e}");
                    return ExitCode::FAILURE;
                }
            }
            // Workers alive at once: every session and pending connection, and as many
            // again that were closed and are being reaped.
            let max_workers = config
                .max_sessions
                .saturating_add(config.max_pending.saturating_mul(2));
            let plan = plan(&exec, max_workers).and_then(|p| start_metrics(&exec, &p).map(|()| p));
            let sessions = match plan {
                Ok(Plan::InProcess(f)) => Sessions::Threads(Backend::new(f)),
                Ok(Plan::Workers(w)) => {
                    protect_backend();
                    Sessions::Workers(Arc::new(w))
                }
                Err(e) => {
                    error!("{e}");
                    return ExitCode::FAILURE;
                }
            };
            if let Err(e) = socket::serve(&listen, sessions, config) {
                error!("{e}");
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Command::VhostUser {
            socket,
            exec,
            queues,
            max_sessions,
            queue_thread_calls,
            poll_us,
            precopy_listen,
            precopy_from,
        } => {
            let config = vcuda_backend::vhost_user::VhostUserConfig {
                max_sessions,
                queue_thread_calls: queue_thread_calls.into(),
                poll: std::time::Duration::from_micros(u64::from(poll_us)),
                precopy: vcuda_backend::vhost_user::PrecopyConfig {
                    listen: precopy_listen,
                    from: precopy_from,
                },
                ..vcuda_backend::vhost_user::VhostUserConfig::new(socket, queues)
            };
            let precopy = config.precopy.listen.is_some() || config.precopy.from.is_some();
            let plan = plan(&exec, 2).and_then(|p| start_metrics(&exec, &p).map(|()| p));
            let r = match plan {
                Ok(Plan::InProcess(f)) => {
                    vcuda_backend::vhost_user::start_backend(config, Backend::new(f))
                        .map_err(|e| e.to_string())
                }
                Ok(Plan::Workers(_)) if precopy => Err("--precopy-listen and --precopy-from \
                    need --isolation thread: a VM's worker process serves no other socket"
                    .into()),
                Ok(Plan::Workers(w)) => {
                    protect_backend();
                    vcuda_backend::vhost_user::start_workers(config, w).map_err(|e| e.to_string())
                }
                Err(e) => Err(e),
            };
            match r {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    error!("{e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
