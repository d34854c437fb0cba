// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The vcuda host backend.
//!
//! Guests send CUDA calls as messages in the wire format of `vcuda-protocol`. Transports
//! ([`socket`], and vhost-user for VMs) receive them and hand them to a [`session::Session`],
//! one per guest process, which replays them on an [`executor::Executor`]: the CPU reference
//! executor, or a real GPU.

pub mod data;
#[macro_use]
mod dispatch;
pub mod executor;
pub mod graphs;
pub mod log_limit;
pub mod memsize;
pub mod metrics;
pub mod migrate;
pub mod modules;
pub mod resident;
pub mod sandbox;
pub mod session;
pub mod shared;
pub mod socket;
pub mod stdout;
pub mod vhost_user;
pub mod worker;

pub use session::{Backend, Session};
