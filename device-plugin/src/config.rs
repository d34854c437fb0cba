// SPDX-License-Identifier: Apache-2.0 OR MIT
//! What the plugin advertises and what a container it serves gets.

use std::path::PathBuf;
use std::time::Duration;

/// The API version the plugin speaks.
pub const API_VERSION: &str = "v1beta1";
/// The kubelet's registration socket, in its device-plugin directory.
pub const KUBELET_SOCKET: &str = "kubelet.sock";

/// The plugin's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// The extended resource, e.g. `vcuda.io/gpu`.
    pub resource: String,
    /// How many devices (shares of the backend) to advertise.
    pub shares: u32,
    /// The kubelet's device-plugin directory (its `kubelet.sock` and the plugins' sockets).
    pub kubelet_dir: PathBuf,
    /// The plugin's socket: a file name in `kubelet_dir`.
    pub endpoint: String,
    /// The backend's socket on the host (the plugin probes it at the same path).
    pub backend_socket: PathBuf,
    /// Where containers find the backend's socket.
    pub container_socket: PathBuf,
    /// vcuda's library directory on the host (`vcuda lib-dir`: libvcuda.so and its soname
    /// links).
    pub lib_dir: PathBuf,
    /// Where containers find it.
    pub container_lib_dir: PathBuf,
    /// How often the backend is probed.
    pub health_interval: Duration,
}

impl Config {
    /// The IDs of the advertised devices.
    pub fn device_ids(&self) -> Vec<String> {
        (0..self.shares).map(|i| format!("vcuda-{i}")).collect()
    }

    /// The path of the plugin's socket.
    pub fn socket(&self) -> PathBuf {
        self.kubelet_dir.join(&self.endpoint)
    }
}
