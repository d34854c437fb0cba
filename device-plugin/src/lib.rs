// SPDX-License-Identifier: Apache-2.0 OR MIT
//! vcuda's Kubernetes device plugin.
//!
//! The kubelet schedules extended resources that device plugins advertise (the kubelet's
//! device-plugin API, v1beta1, gRPC over Unix sockets in its `device-plugins` directory).
//! This plugin advertises `--shares` devices of a resource (`vcuda.io/gpu` by default), each
//! a share of the node's vcuda backend, healthy while the backend's socket accepts
//! connections. A container given one gets the backend's socket and vcuda's library
//! directory mounted and `VCUDA_SOCKET` and `LD_LIBRARY_PATH` set, so an unchanged CUDA
//! program in it runs on the backend.
//!
//! - [`config`]: what the plugin advertises and hands out.
//! - [`health`]: watching the backend.
//! - [`plugin`]: the `DevicePlugin` service.
//! - [`kubelet`]: serving the plugin's socket, registering with the kubelet, and again
//!   after the kubelet restarts (it removes every socket in its directory then).
//! - [`uds`]: gRPC clients over Unix sockets.

/// The generated API (`proto/deviceplugin.proto`).
#[allow(missing_docs, clippy::all)]
pub mod api {
    tonic::include_proto!("v1beta1");
}

pub mod config;
pub mod health;
pub mod kubelet;
pub mod plugin;
pub mod uds;

pub use config::Config;
