// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The backend's health: whether its socket accepts a connection.
//!
//! The probe connects and closes without a word, which the backend takes as no session
//! (no worker, no GPU context) and logs at debug level only. A backend behind systemd's
//! socket activation is started by the probe if it was stopped.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::UnixStream;
use tokio::sync::watch;

/// How long a probe waits for the connection.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether the backend at `socket` accepts a connection now.
pub async fn probe(socket: &Path) -> bool {
    matches!(
        tokio::time::timeout(PROBE_TIMEOUT, UnixStream::connect(socket)).await,
        Ok(Ok(_))
    )
}

/// Probes the backend at `socket` now and then every `every`: the health as it changes.
pub async fn watch(socket: PathBuf, every: Duration) -> watch::Receiver<bool> {
    let first = probe(&socket).await;
    log::info!(
        "backend {}: {}",
        socket.display(),
        if first { "healthy" } else { "unreachable" }
    );
    let (tx, rx) = watch::channel(first);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let now = probe(&socket).await;
            tx.send_if_modified(|h| {
                if *h == now {
                    return false;
                }
                log::info!(
                    "backend {}: {}",
                    socket.display(),
                    if now { "healthy again" } else { "unreachable" }
                );
                *h = now;
                true
            });
        }
    });
    rx
}
