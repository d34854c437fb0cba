// SPDX-License-Identifier: GPL-2.0
//! The vcuda ABIs the module shares with user space and with the device, mirrored from the
//! `vcuda-protocol` crate (`protocol/src/{ioctl,virtio,wire}.rs`), which is their single
//! source of truth.
//!
//! This file depends on `core` only: the kernel module includes it as `mod abi`, and the
//! protocol crate's tests include it with `#[path]` and check every size, offset and constant
//! against their own definitions (`protocol/src/ioctl.rs`, `module_abi_matches`). The module
//! adds compile-time asserts of its own (below, and of the ioctl numbers against the kernel's
//! `_IOWR`/`_IOR` in `vcuda_main.rs`).

#![allow(dead_code, unreachable_pub)]

use core::mem::{offset_of, size_of};

/// ioctl type byte: `'V'`.
pub const VCUDA_IOC_TYPE: u32 = b'V' as u32;
/// `_IOWR('V', 1, struct vcuda_submit)`: submits one message and waits for its reply.
pub const VCUDA_IOC_SUBMIT: u32 = 0xc030_5601;
/// `_IOR('V', 2, struct vcuda_info)`: the device's limits and this file's session id.
pub const VCUDA_IOC_INFO: u32 = 0x8030_5602;
/// `_IOWR('V', 3, struct vcuda_share)`: shares page-locked user memory with the device.
pub const VCUDA_IOC_SHARE: u32 = 0xc018_5603;
/// `_IOW('V', 4, __u64)`: ends a region `VCUDA_IOC_SHARE` made.
pub const VCUDA_IOC_UNSHARE: u32 = 0x4008_5604;
/// Version of the ioctl ABI.
pub const VCUDA_ABI_VERSION: u32 = 3;
/// Most segments in one submit.
pub const VCUDA_MAX_SEGS: u32 = 256;
/// `VcudaSubmit::flags`: queue the message and return without waiting (posted calls).
pub const VCUDA_SUBMIT_DETACHED: u64 = 1 << 0;
/// Most detached chains of one file with the device at once.
pub const VCUDA_MAX_DETACHED: u32 = 64;

/// `VcudaSeg::dir`: the device reads the segment (guest to host).
pub const SEG_OUT: u32 = 1;
/// `VcudaSeg::dir`: the device writes the segment (host to guest).
pub const SEG_IN: u32 = 2;

/// One user buffer of a submit (`vcuda_protocol::ioctl::VcudaSeg`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct VcudaSeg {
    /// User virtual address.
    pub addr: u64,
    /// Bytes.
    pub len: u64,
    /// [`SEG_OUT`] or [`SEG_IN`].
    pub dir: u32,
    /// Zero.
    pub flags: u32,
}

/// The `VCUDA_IOC_SUBMIT` argument (`vcuda_protocol::ioctl::VcudaSubmit`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct VcudaSubmit {
    /// User address of the message (MessageHeader + requests).
    pub ctrl_addr: u64,
    /// Its length.
    pub ctrl_len: u32,
    /// Capacity of the user's reply buffer.
    pub reply_cap: u32,
    /// User address of the reply buffer.
    pub reply_addr: u64,
    /// User address of `n_segs` [`VcudaSeg`].
    pub segs_addr: u64,
    /// Number of segments.
    pub n_segs: u32,
    /// Out: bytes written to the reply buffer.
    pub reply_len: u32,
    /// Zero.
    pub flags: u64,
}

/// The `VCUDA_IOC_SHARE` argument (`vcuda_protocol::ioctl::VcudaShare`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct VcudaShare {
    /// User virtual address, page-aligned.
    pub addr: u64,
    /// Bytes, a non-zero multiple of the page size.
    pub len: u64,
    /// Out: the device's handle of the region.
    pub handle: u64,
}

/// What a `CHAIN_OP_SHARE_PAGES` chain carries after its header
/// (`vcuda_protocol::virtio::SharePagesReq`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct SharePagesReq {
    /// Bytes of the region (the extents' sum).
    pub len: u64,
    /// Number of [`PageExtent`]s that follow.
    pub n_extents: u32,
    /// Zero.
    pub reserved: u32,
}

/// Guest-physical pages of a shared region (`vcuda_protocol::virtio::PageExtent`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct PageExtent {
    /// Guest-physical address, page-aligned.
    pub addr: u64,
    /// Bytes, a non-zero multiple of the page size.
    pub len: u64,
}

/// Most extents in one `CHAIN_OP_SHARE_PAGES` chain.
pub const MAX_SHARE_EXTENTS: u32 = 1 << 20;
/// Largest region one `CHAIN_OP_SHARE_PAGES` chain may share.
pub const MAX_SHARE_LEN: u64 = 1 << 40;

/// The device's configuration space (`vcuda_protocol::virtio::VirtioCudaConfig`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct VirtioCudaConfig {
    /// [`CONFIG_MAGIC`].
    pub magic: u32,
    /// The backend's protocol version.
    pub protocol_version: u32,
    /// Number of request queues.
    pub num_request_queues: u32,
    /// Most descriptors in one chain.
    pub max_chain_descriptors: u32,
    /// Largest control area of a message (header included).
    pub max_ctrl_len: u32,
    /// `CONFIG_F_*` bits (zero on older devices).
    pub features: u32,
    /// Largest out- or in-data area of one message.
    pub max_data_len: u64,
}

/// The `VCUDA_IOC_INFO` result (`vcuda_protocol::ioctl::VcudaInfo`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct VcudaInfo {
    /// The device's configuration.
    pub config: VirtioCudaConfig,
    /// This file's session id.
    pub session: u64,
    /// Most segments one submit may carry.
    pub max_segs: u32,
    /// [`VCUDA_ABI_VERSION`].
    pub abi_version: u32,
}

/// First bytes of every chain's device-readable part (`vcuda_protocol::virtio::ChainHeader`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ChainHeader {
    /// Session id.
    pub session: u64,
    /// A `CHAIN_OP_*` value.
    pub op: u32,
    /// Bytes of the device-writable reply area.
    pub reply_capacity: u32,
}

/// `ChainOp::Submit`: deliver a message to the session.
pub const CHAIN_OP_SUBMIT: u32 = 0;
/// `ChainOp::OpenSession`.
pub const CHAIN_OP_OPEN_SESSION: u32 = 1;
/// `ChainOp::CloseSession`.
pub const CHAIN_OP_CLOSE_SESSION: u32 = 2;
/// `ChainOp::SharePages`: [`SharePagesReq`] and its [`PageExtent`]s follow the header; the
/// reply's record carries the region's `u64` handle.
pub const CHAIN_OP_SHARE_PAGES: u32 = 3;
/// `ChainOp::UnsharePages`: the region's `u64` handle follows the header.
pub const CHAIN_OP_UNSHARE_PAGES: u32 = 4;
/// `ChainOp::SubmitDetached`: a message nobody waits for; the device writes no reply.
pub const CHAIN_OP_SUBMIT_DETACHED: u32 = 5;
/// `VirtioCudaConfig::features`: the device takes `CHAIN_OP_SUBMIT_DETACHED`.
pub const CONFIG_F_DETACHED_SUBMIT: u32 = 1 << 0;

/// Virtio device ID.
pub const VIRTIO_ID_CUDA: u32 = 57;
/// `b"VCUD"` little-endian.
pub const CONFIG_MAGIC: u32 = u32::from_le_bytes(*b"VCUD");
/// The protocol version this module was written for (`vcuda_protocol::PROTOCOL_VERSION`).
pub const PROTOCOL_VERSION: u32 = 2;
/// Most request queues.
pub const MAX_REQUEST_QUEUES: u32 = 16;
/// Smallest reply area a chain may offer.
pub const MIN_REPLY_CAPACITY: u32 = 4096;
/// Size of a reply's header (`vcuda_protocol::ReplyHeader`).
pub const REPLY_HEADER_LEN: usize = 32;
/// Offset of `ReplyHeader::magic`.
pub const REPLY_HEADER_MAGIC_OFFSET: usize = 0;
/// Offset of `ReplyHeader::ctrl_len` (bytes of records after the header).
pub const REPLY_HEADER_CTRL_LEN_OFFSET: usize = 12;
/// Offset of `ReplyHeader::n_records`.
pub const REPLY_HEADER_N_RECORDS_OFFSET: usize = 8;
/// `b"VCUR"` little-endian: `ReplyHeader::magic`.
pub const REPLY_MAGIC: u32 = u32::from_le_bytes(*b"VCUR");
/// Size of a reply record's header (`vcuda_protocol::RecordHeader`).
pub const RECORD_HEADER_LEN: usize = 32;
/// Offset of `RecordHeader::status`.
pub const RECORD_STATUS_OFFSET: usize = 8;
/// `cudaErrorMemoryAllocation`: the device's status for an `OpenSession` beyond its session
/// limit.
pub const STATUS_MEMORY_ALLOCATION: u32 = 2;

const _: () = {
    assert!(size_of::<VcudaSeg>() == 24);
    assert!(offset_of!(VcudaSeg, addr) == 0);
    assert!(offset_of!(VcudaSeg, len) == 8);
    assert!(offset_of!(VcudaSeg, dir) == 16);
    assert!(offset_of!(VcudaSeg, flags) == 20);

    assert!(size_of::<VcudaSubmit>() == 48);
    assert!(offset_of!(VcudaSubmit, ctrl_addr) == 0);
    assert!(offset_of!(VcudaSubmit, ctrl_len) == 8);
    assert!(offset_of!(VcudaSubmit, reply_cap) == 12);
    assert!(offset_of!(VcudaSubmit, reply_addr) == 16);
    assert!(offset_of!(VcudaSubmit, segs_addr) == 24);
    assert!(offset_of!(VcudaSubmit, n_segs) == 32);
    assert!(offset_of!(VcudaSubmit, reply_len) == 36);
    assert!(offset_of!(VcudaSubmit, flags) == 40);

    assert!(size_of::<VirtioCudaConfig>() == 32);
    assert!(offset_of!(VirtioCudaConfig, magic) == 0);
    assert!(offset_of!(VirtioCudaConfig, protocol_version) == 4);
    assert!(offset_of!(VirtioCudaConfig, num_request_queues) == 8);
    assert!(offset_of!(VirtioCudaConfig, max_chain_descriptors) == 12);
    assert!(offset_of!(VirtioCudaConfig, max_ctrl_len) == 16);
    assert!(offset_of!(VirtioCudaConfig, features) == 20);
    assert!(offset_of!(VirtioCudaConfig, max_data_len) == 24);

    assert!(size_of::<VcudaInfo>() == 48);
    assert!(offset_of!(VcudaInfo, config) == 0);
    assert!(offset_of!(VcudaInfo, session) == 32);
    assert!(offset_of!(VcudaInfo, max_segs) == 40);
    assert!(offset_of!(VcudaInfo, abi_version) == 44);

    assert!(size_of::<ChainHeader>() == 16);
    assert!(offset_of!(ChainHeader, session) == 0);
    assert!(offset_of!(ChainHeader, op) == 8);
    assert!(offset_of!(ChainHeader, reply_capacity) == 12);

    assert!(size_of::<VcudaShare>() == 24);
    assert!(offset_of!(VcudaShare, addr) == 0);
    assert!(offset_of!(VcudaShare, len) == 8);
    assert!(offset_of!(VcudaShare, handle) == 16);
    assert!(size_of::<SharePagesReq>() == 16);
    assert!(size_of::<PageExtent>() == 16);

    // _IOC(dir, type, nr, size) = dir << 30 | size << 16 | type << 8 | nr.
    assert!(
        VCUDA_IOC_SUBMIT
            == (3 << 30) | ((size_of::<VcudaSubmit>() as u32) << 16) | (VCUDA_IOC_TYPE << 8) | 1
    );
    assert!(
        VCUDA_IOC_INFO
            == (2 << 30) | ((size_of::<VcudaInfo>() as u32) << 16) | (VCUDA_IOC_TYPE << 8) | 2
    );
    assert!(
        VCUDA_IOC_SHARE
            == (3 << 30) | ((size_of::<VcudaShare>() as u32) << 16) | (VCUDA_IOC_TYPE << 8) | 3
    );
    assert!(VCUDA_IOC_UNSHARE == (1 << 30) | (8 << 16) | (VCUDA_IOC_TYPE << 8) | 4);
};
