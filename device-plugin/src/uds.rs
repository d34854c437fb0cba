// SPDX-License-Identifier: Apache-2.0 OR MIT
//! gRPC clients over Unix sockets.

use std::path::PathBuf;

use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint, Uri};

/// A channel to the gRPC server listening on Unix socket `path`.
pub async fn channel(path: PathBuf) -> Result<Channel, tonic::transport::Error> {
    // The URI is required but unused: every connection goes to `path`.
    Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(path).await?)) }
        }))
        .await
}
