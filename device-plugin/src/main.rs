// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `vcuda-device-plugin`: hands shares of a node's vcuda backend to Kubernetes pods (see
//! the library's documentation and deploy/k8s/).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use vcuda_device_plugin::{Config, kubelet};

#[derive(Parser, Debug)]
#[command(
    name = "vcuda-device-plugin",
    version,
    about = "Kubernetes device plugin: advertises shares of a vcuda backend"
)]
struct Cli {
    /// The extended resource pods ask for.
    #[arg(long, default_value = "vcuda.io/gpu")]
    resource: String,
    /// Devices to advertise: how many containers may hold a share of the backend at once.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    shares: u32,
    /// The kubelet's device-plugin directory.
    #[arg(long, default_value = "/var/lib/kubelet/device-plugins")]
    kubelet_dir: PathBuf,
    /// The plugin's socket, a file name in --kubelet-dir.
    #[arg(long, default_value = "vcuda.sock")]
    endpoint: String,
    /// The backend's socket on the host (mounted at the same path into the plugin's own
    /// container, which probes it).
    #[arg(long, default_value = "/run/vcuda/vcuda.sock")]
    backend_socket: PathBuf,
    /// Where containers find the backend's socket (VCUDA_SOCKET).
    #[arg(long, default_value = "/run/vcuda/vcuda.sock")]
    container_socket: PathBuf,
    /// vcuda's library directory on the host (`vcuda lib-dir`).
    #[arg(long, default_value = "/usr/local/lib/vcuda")]
    lib_dir: PathBuf,
    /// Where containers find it (LD_LIBRARY_PATH).
    #[arg(long, default_value = "/usr/local/lib/vcuda")]
    container_lib_dir: PathBuf,
    /// Seconds between probes of the backend.
    #[arg(long, default_value_t = 5)]
    health_interval: u64,
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::new().filter_or("VCUDA_LOG", "info")).init();
    let cli = Cli::parse();
    if cli.endpoint.contains('/') || cli.endpoint.is_empty() {
        log::error!("--endpoint must be a file name in --kubelet-dir");
        return ExitCode::FAILURE;
    }
    let config = Arc::new(Config {
        resource: cli.resource,
        shares: cli.shares,
        kubelet_dir: cli.kubelet_dir,
        endpoint: cli.endpoint,
        backend_socket: cli.backend_socket,
        container_socket: cli.container_socket,
        lib_dir: cli.lib_dir,
        container_lib_dir: cli.container_lib_dir,
        health_interval: Duration::from_secs(cli.health_interval.max(1)),
    });
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            log::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let socket = config.socket();
    let r = rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = kubelet::run(config) => r,
            _ = term.recv() => Ok(()),
            _ = tokio::signal::ctrl_c() => Ok(()),
        }
    });
    // The kubelet sees the resource go once the socket is gone.
    let _ = std::fs::remove_file(&socket);
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            log::error!("{e}");
            ExitCode::FAILURE
        }
    }
}
