// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Serving the plugin's socket and registering it with the kubelet.
//!
//! The kubelet removes every socket in its device-plugin directory when it starts, so a
//! plugin must register again after a kubelet restart: this loop serves the socket,
//! registers (retrying while the kubelet is not there), and when the socket file is gone
//! or replaced, stops that server (ending its `ListAndWatch` streams) and starts over.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::UnixListener;
use tokio::sync::watch;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::transport::Server;

use crate::api::device_plugin_server::DevicePluginServer;
use crate::api::registration_client::RegistrationClient;
use crate::api::{DevicePluginOptions, RegisterRequest};
use crate::config::{API_VERSION, KUBELET_SOCKET};
use crate::plugin::Plugin;
use crate::{Config, health, uds};

/// How often the plugin looks for its socket and retries a registration.
const POLL: Duration = Duration::from_secs(1);

/// Serves and registers the plugin until the process ends (or the socket cannot be made).
pub async fn run(config: Arc<Config>) -> std::io::Result<()> {
    let health = health::watch(config.backend_socket.clone(), config.health_interval).await;
    loop {
        let sock = config.socket();
        match std::fs::remove_file(&sock) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let listener = UnixListener::bind(&sock)?;
        let ino = std::fs::metadata(&sock)?.ino();
        let (stop_tx, stop_rx) = watch::channel(false);
        let plugin = Plugin::new(config.clone(), health.clone(), stop_rx.clone());
        let mut stopped = stop_rx;
        let server = tokio::spawn(
            Server::builder()
                .add_service(DevicePluginServer::new(plugin))
                .serve_with_incoming_shutdown(UnixListenerStream::new(listener), async move {
                    let _ = stopped.wait_for(|s| *s).await;
                }),
        );
        log::info!("serving {} on {}", config.resource, sock.display());
        let mut registered = false;
        loop {
            if !registered {
                match register(&config).await {
                    Ok(()) => {
                        log::info!("registered {} with the kubelet", config.resource);
                        registered = true;
                    }
                    Err(e) => log::warn!("registering with the kubelet: {e}; retrying"),
                }
            }
            tokio::time::sleep(POLL).await;
            if !same_file(&sock, ino) {
                log::info!(
                    "the kubelet removed the plugin's socket (it restarted); registering again"
                );
                break;
            }
            if server.is_finished() {
                log::warn!("the plugin's server stopped; starting it again");
                break;
            }
        }
        let _ = stop_tx.send(true);
        match server.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => log::warn!("the plugin's server: {e}"),
            Err(e) => log::warn!("the plugin's server task: {e}"),
        }
    }
}

/// Whether `path` is still the socket file with inode `ino`.
fn same_file(path: &Path, ino: u64) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.ino() == ino)
}

/// Registers the plugin with the kubelet in `config.kubelet_dir`.
pub async fn register(config: &Config) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let channel = uds::channel(config.kubelet_dir.join(KUBELET_SOCKET)).await?;
    RegistrationClient::new(channel)
        .register(RegisterRequest {
            version: API_VERSION.to_owned(),
            endpoint: config.endpoint.clone(),
            resource_name: config.resource.clone(),
            options: Some(DevicePluginOptions::default()),
        })
        .await?;
    Ok(())
}
