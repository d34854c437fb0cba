// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The `DevicePlugin` service.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::Config;
use crate::api::device_plugin_server::DevicePlugin;
use crate::api::{
    AllocateRequest, AllocateResponse, ContainerAllocateResponse, Device, DevicePluginOptions,
    Empty, ListAndWatchResponse, Mount, PreStartContainerRequest, PreStartContainerResponse,
    PreferredAllocationRequest, PreferredAllocationResponse,
};

/// The kubelet's names for a device's health.
pub const HEALTHY: &str = "Healthy";
/// See [`HEALTHY`].
pub const UNHEALTHY: &str = "Unhealthy";

/// The plugin: its settings, the backend's health, and the signal that ends its streams.
#[derive(Debug, Clone)]
pub struct Plugin {
    config: Arc<Config>,
    health: watch::Receiver<bool>,
    stop: watch::Receiver<bool>,
}

impl Plugin {
    /// A plugin for `config` that reports `health`; its `ListAndWatch` streams end when
    /// `stop` turns true (the server is going away).
    pub fn new(
        config: Arc<Config>,
        health: watch::Receiver<bool>,
        stop: watch::Receiver<bool>,
    ) -> Self {
        Self {
            config,
            health,
            stop,
        }
    }

    /// The device list for backend health `healthy`.
    pub fn devices(&self, healthy: bool) -> ListAndWatchResponse {
        let health = if healthy { HEALTHY } else { UNHEALTHY };
        ListAndWatchResponse {
            devices: self
                .config
                .device_ids()
                .into_iter()
                .map(|id| Device {
                    id,
                    health: health.to_owned(),
                    topology: None,
                })
                .collect(),
        }
    }

    /// What every container given a share gets.
    pub fn container(&self) -> ContainerAllocateResponse {
        let c = &self.config;
        let path = |p: &std::path::Path| p.to_string_lossy().into_owned();
        ContainerAllocateResponse {
            envs: HashMap::from([
                ("VCUDA_SOCKET".to_owned(), path(&c.container_socket)),
                ("LD_LIBRARY_PATH".to_owned(), path(&c.container_lib_dir)),
            ]),
            mounts: vec![
                Mount {
                    container_path: path(&c.container_lib_dir),
                    host_path: path(&c.lib_dir),
                    read_only: true,
                },
                Mount {
                    container_path: path(&c.container_socket),
                    host_path: path(&c.backend_socket),
                    read_only: false,
                },
            ],
            devices: Vec::new(),
            annotations: HashMap::new(),
            cdi_devices: Vec::new(),
        }
    }
}

type DeviceStream = Pin<Box<dyn Stream<Item = Result<ListAndWatchResponse, Status>> + Send>>;

#[tonic::async_trait]
impl DevicePlugin for Plugin {
    async fn get_device_plugin_options(
        &self,
        _: Request<Empty>,
    ) -> Result<Response<DevicePluginOptions>, Status> {
        Ok(Response::new(DevicePluginOptions::default()))
    }

    type ListAndWatchStream = DeviceStream;

    async fn list_and_watch(
        &self,
        _: Request<Empty>,
    ) -> Result<Response<Self::ListAndWatchStream>, Status> {
        let (tx, rx) = mpsc::channel(4);
        let me = self.clone();
        let mut health = self.health.clone();
        let mut stop = self.stop.clone();
        tokio::spawn(async move {
            loop {
                let now = *health.borrow_and_update();
                if tx.send(Ok(me.devices(now))).await.is_err() {
                    return; // the kubelet went away
                }
                tokio::select! {
                    r = health.changed() => if r.is_err() { return },
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn get_preferred_allocation(
        &self,
        _: Request<PreferredAllocationRequest>,
    ) -> Result<Response<PreferredAllocationResponse>, Status> {
        Err(Status::unimplemented(
            "vcuda's shares are all alike: no preferred allocation",
        ))
    }

    async fn allocate(
        &self,
        req: Request<AllocateRequest>,
    ) -> Result<Response<AllocateResponse>, Status> {
        let ids = self.config.device_ids();
        let mut container_responses = Vec::new();
        for c in req.into_inner().container_requests {
            if c.devices_ids.is_empty() {
                return Err(Status::invalid_argument(
                    "a container request without devices",
                ));
            }
            if let Some(d) = c.devices_ids.iter().find(|d| !ids.contains(d)) {
                return Err(Status::invalid_argument(format!("unknown device {d}")));
            }
            container_responses.push(self.container());
        }
        Ok(Response::new(AllocateResponse {
            container_responses,
        }))
    }

    async fn pre_start_container(
        &self,
        _: Request<PreStartContainerRequest>,
    ) -> Result<Response<PreStartContainerResponse>, Status> {
        Ok(Response::new(PreStartContainerResponse {}))
    }
}
