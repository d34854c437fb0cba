// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `vcuda-backend`: serves vcuda guests.

use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use log::{error, info};
use vcuda_backend::Backend;
use vcuda_backend::executor::ExecutorFactory;
use vcuda_backend::executor::cpu::{CpuConfig, CpuFactory};
use vcuda_backend::executor::cuda::{CudaConfig, CudaFactory};
use vcuda_backend::socket::{self, Listen, ServerConfig};

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
        /// Unix socket path, or tcp:HOST:PORT. Default: $XDG_RUNTIME_DIR/vcuda.sock, else
        /// /tmp/vcuda-$UID.sock.
        #[arg(long, env = "VCUDA_SOCKET")]
        socket: Option<String>,
        #[command(flatten)]
        exec: ExecArgs,
        /// Most concurrent sessions.
        #[arg(long, default_value_t = 256)]
        max_sessions: usize,
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
    },
}

#[derive(clap::Args, Debug)]
struct ExecArgs {
    /// Which executor replays the calls.
    #[arg(long, value_enum, default_value_t = ExecutorChoice::Auto, env = "VCUDA_EXECUTOR")]
    executor: ExecutorChoice,
    /// CPU executor: simulated device memory in MiB.
    #[arg(long, default_value_t = 16384)]
    cpu_memory_mib: u64,
    /// CPU executor: threads that run kernel blocks (0: one per core).
    #[arg(long, default_value_t = 0)]
    cpu_threads: usize,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ExecutorChoice {
    /// The real GPU if one is usable, else the CPU executor.
    Auto,
    /// The CPU reference executor (PTX interpreter).
    Cpu,
    /// The real GPU through the CUDA driver.
    Cuda,
}

fn make_factory(args: &ExecArgs) -> Result<Arc<dyn ExecutorFactory>, String> {
    let cpu = || -> Arc<dyn ExecutorFactory> {
        Arc::new(CpuFactory::new(CpuConfig {
            memory: args.cpu_memory_mib.saturating_mul(1 << 20),
            threads: args.cpu_threads,
        }))
    };
    let cuda = || {
        CudaFactory::new(CudaConfig {
            device: args.cuda_device,
            staging_chunk: args.cuda_staging_kib.saturating_mul(1 << 10),
            staging_depth: args.cuda_staging_buffers,
            capture_printf: args.cuda_capture_printf,
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

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve {
            socket,
            exec,
            max_sessions,
        } => {
            let factory = match make_factory(&exec) {
                Ok(f) => f,
                Err(e) => {
                    error!("{e}");
                    return ExitCode::FAILURE;
                }
            };
            let listen = match socket {
                Some(s) => Listen::parse(&s),
                None => Listen::Unix(socket::default_socket_path()),
            };
            let backend = Backend::new(factory);
            if let Err(e) = socket::serve(&listen, backend, ServerConfig { max_sessions }) {
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
        } => {
            let factory = match make_factory(&exec) {
                Ok(f) => f,
                Err(e) => {
                    error!("{e}");
                    return ExitCode::FAILURE;
                }
            };
            let config = vcuda_backend::vhost_user::VhostUserConfig {
                socket,
                queues,
                max_sessions,
            };
            match vcuda_backend::vhost_user::start_backend(config, Backend::new(factory)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    error!("{e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
