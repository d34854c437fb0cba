// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The vcuda virtio device: IDs, configuration space and descriptor-chain layout.
//!
//! This module is the one place that defines them; `qemu-patches/` and `guest-driver/`
//! mirror these numbers, and DEVICE.md at the repository root explains them.
//!
//! # Descriptor chains
//!
//! Each call is one chain on a request queue:
//!
//! ```text
//! device-readable:  [ChainHeader][MessageHeader + requests][out data segments ...]
//! device-writable:  [reply area: reply_capacity bytes][in data segments ...]
//! ```
//!
//! The reply area receives a [`crate::ReplyHeader`] and its records; `used.len` is the number
//! of bytes the device wrote in total. Out and in data segments are the program's own pinned
//! pages, described page by page (contiguous pages merged), in the order the message's
//! requests list their segments.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Virtio device ID of the vcuda device.
pub const VIRTIO_ID_CUDA: u32 = 57;
/// PCI device ID of a modern virtio device with that ID (vendor 0x1af4).
pub const VIRTIO_CUDA_PCI_DEVICE_ID: u16 = 0x1040 + VIRTIO_ID_CUDA as u16;
/// Default number of request queues.
pub const DEFAULT_REQUEST_QUEUES: u32 = 2;
/// Most request queues.
pub const MAX_REQUEST_QUEUES: u32 = 16;
/// Queue size the backend supports (QEMU 10 sets every queue to 1024).
pub const QUEUE_SIZE: u16 = 1024;
/// Most descriptors in one chain.
pub const MAX_CHAIN_DESCRIPTORS: u32 = 1024;
/// `b"VCUD"`: [`VirtioCudaConfig::magic`].
pub const CONFIG_MAGIC: u32 = u32::from_le_bytes(*b"VCUD");

/// The device's configuration space (read-only for the driver).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct VirtioCudaConfig {
    /// [`CONFIG_MAGIC`].
    pub magic: u32,
    /// The backend's [`crate::PROTOCOL_VERSION`].
    pub protocol_version: u32,
    /// Number of request queues (queue `i` for `i < num_request_queues`).
    pub num_request_queues: u32,
    /// Most descriptors in one chain.
    pub max_chain_descriptors: u32,
    /// Largest control area of a message (header included).
    pub max_ctrl_len: u32,
    /// What the device does beyond protocol version 2: `CONFIG_F_*` bits (zero on older
    /// backends, where this field was reserved).
    pub features: u32,
    /// Largest out- or in-data area of one message.
    pub max_data_len: u64,
}
const _: () = assert!(size_of::<VirtioCudaConfig>() == 32);

/// [`VirtioCudaConfig::features`]: the device takes [`ChainOp::SubmitDetached`].
pub const CONFIG_F_DETACHED_SUBMIT: u32 = 1 << 0;

/// Size of the configuration space.
pub const CONFIG_SIZE: usize = size_of::<VirtioCudaConfig>();

/// What a chain asks for.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainOp {
    /// Deliver a message to session `session` and return its reply.
    Submit = 0,
    /// Create session `session` (the driver opened `/dev/vcuda`). No message follows.
    OpenSession = 1,
    /// Destroy session `session` and free all it owns (the file was released).
    CloseSession = 2,
    /// Share pages of guest memory with session `session` until [`ChainOp::UnsharePages`]
    /// or the session's close: a [`SharePagesReq`] and its [`PageExtent`]s follow the
    /// header. The reply's one record carries a [`crate::HandleResp`]: the region's handle,
    /// which the session's requests then name (`MapHostMemory`, `MemcpyHtoDShared`, ...).
    /// The driver keeps the pages pinned (and the guest may not reuse them) until the
    /// device has answered the region's `UnsharePages` or the session's `CloseSession`.
    SharePages = 3,
    /// Stop sharing a region made by [`ChainOp::SharePages`]: an [`UnsharePagesReq`]
    /// follows the header. When the reply is written, nothing in the session uses the
    /// pages any more.
    UnsharePages = 4,
    /// Deliver a message to session `session` whose sender does not wait for it (posted
    /// calls; the driver copied its out data and it has no in data). The device writes no
    /// reply: the records it would have written (asynchronous errors, device output) go at
    /// the front of the reply to the session's next [`ChainOp::Submit`]. The session runs it
    /// in order with the chains around it, so while it is with the device the driver sends
    /// the session's chains to its queue. Only to a device that offers
    /// [`CONFIG_F_DETACHED_SUBMIT`].
    SubmitDetached = 5,
}

impl ChainOp {
    /// Decodes a chain operation.
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::Submit),
            1 => Some(Self::OpenSession),
            2 => Some(Self::CloseSession),
            3 => Some(Self::SharePages),
            4 => Some(Self::UnsharePages),
            5 => Some(Self::SubmitDetached),
            _ => None,
        }
    }
}

/// The first bytes of every chain's readable part.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct ChainHeader {
    /// Session id, chosen by the driver, unique among its open sessions.
    pub session: u64,
    /// A [`ChainOp`] value.
    pub op: u32,
    /// Bytes of the writable reply area (before the in data segments).
    pub reply_capacity: u32,
}
const _: () = assert!(size_of::<ChainHeader>() == 16);

/// Smallest reply area a chain may offer.
pub const MIN_REPLY_CAPACITY: u32 = 4096;

/// What a [`ChainOp::SharePages`] chain asks for (after its [`ChainHeader`]).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct SharePagesReq {
    /// Bytes of the region: the sum of the extents' lengths, a multiple of [`SHARE_PAGE`].
    pub len: u64,
    /// Number of [`PageExtent`]s that follow, 1..=[`MAX_SHARE_EXTENTS`].
    pub n_extents: u32,
    /// Zero.
    pub reserved: u32,
}
const _: () = assert!(size_of::<SharePagesReq>() == 16);

/// Guest-physical pages of a shared region, in the region's order.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct PageExtent {
    /// Guest-physical address, a multiple of [`SHARE_PAGE`].
    pub addr: u64,
    /// Bytes, a non-zero multiple of [`SHARE_PAGE`].
    pub len: u64,
}
const _: () = assert!(size_of::<PageExtent>() == 16);

/// What a [`ChainOp::UnsharePages`] chain asks for (after its [`ChainHeader`]).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct UnsharePagesReq {
    /// The region's handle, from the `SharePages` reply.
    pub handle: u64,
}
const _: () = assert!(size_of::<UnsharePagesReq>() == 8);

/// The page size of shared regions' extents.
pub const SHARE_PAGE: u64 = 4096;
/// Most extents in one `SharePages` chain (16 MiB of extent table).
pub const MAX_SHARE_EXTENTS: u32 = 1 << 20;
/// Largest region one `SharePages` chain may share.
pub const MAX_SHARE_LEN: u64 = 1 << 40;
