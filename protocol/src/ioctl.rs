// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The `/dev/vcuda` ioctl ABI between the guest library and the guest kernel module.
//!
//! `guest-driver/` mirrors these structures; its layout test and this crate's tests pin the
//! same sizes and offsets.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// ioctl type byte.
pub const VCUDA_IOC_TYPE: u8 = b'V';

const fn ioc(dir: u32, nr: u32, size: usize) -> u32 {
    (dir << 30) | ((size as u32) << 16) | ((VCUDA_IOC_TYPE as u32) << 8) | nr
}
const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

/// A user buffer the module pins for the duration of one call.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct VcudaSeg {
    /// User virtual address.
    pub addr: u64,
    /// Bytes.
    pub len: u64,
    /// 1 = out (device reads), 2 = in (device writes): [`crate::SegmentDir`].
    pub dir: u32,
    /// Zero.
    pub flags: u32,
}
const _: () = assert!(size_of::<VcudaSeg>() == 24);

/// `VCUDA_IOC_SUBMIT` argument: one message and its reply.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct VcudaSubmit {
    /// User address of the message (MessageHeader + requests).
    pub ctrl_addr: u64,
    /// Its length.
    pub ctrl_len: u32,
    /// Capacity of the reply buffer.
    pub reply_cap: u32,
    /// User address of the reply buffer (ReplyHeader + records are copied there).
    pub reply_addr: u64,
    /// User address of an array of `n_segs` [`VcudaSeg`], in the message's segment order.
    pub segs_addr: u64,
    /// Number of segments.
    pub n_segs: u32,
    /// Out: bytes written to the reply buffer.
    pub reply_len: u32,
    /// Zero, or [`VCUDA_SUBMIT_DETACHED`].
    pub flags: u64,
}
const _: () = assert!(size_of::<VcudaSubmit>() == 48);

/// [`VcudaSubmit::flags`]: send the message and return without waiting for the device
/// (posted calls; ABI version 3, and only to a device that offers
/// [`crate::virtio::CONFIG_F_DETACHED_SUBMIT`], else `EOPNOTSUPP`). The module copies the
/// message and its out data (no in segments: `EINVAL`), queues the chain behind the file's
/// earlier ones and returns with `reply_len` 0; the device hands what the reply would have
/// held to the file's next waiting submit. While too many detached chains of the file are
/// with the device the module waits for this one like for any other submit and returns its
/// reply (`reply_len` > 0).
pub const VCUDA_SUBMIT_DETACHED: u64 = 1 << 0;
/// Most detached chains of one file with the device at once.
pub const VCUDA_MAX_DETACHED: u32 = 64;

/// `VCUDA_IOC_INFO` result.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct VcudaInfo {
    /// The device's [`crate::virtio::VirtioCudaConfig`].
    pub config: crate::virtio::VirtioCudaConfig,
    /// This file's session id.
    pub session: u64,
    /// Most segments one submit may carry.
    pub max_segs: u32,
    /// Version of this ioctl ABI ([`VCUDA_ABI_VERSION`]).
    pub abi_version: u32,
}
const _: () = assert!(size_of::<VcudaInfo>() == 48);

/// `VCUDA_IOC_SHARE` argument: page-locked user memory shared with the device.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct VcudaShare {
    /// User virtual address, page-aligned.
    pub addr: u64,
    /// Bytes, a non-zero multiple of the page size.
    pub len: u64,
    /// Out: the device's handle of the region (what `MapHostMemory`, `MemcpyHtoDShared` and
    /// `VCUDA_IOC_UNSHARE` name).
    pub handle: u64,
}
const _: () = assert!(size_of::<VcudaShare>() == 24);

/// Version of this ioctl ABI (2: `VCUDA_IOC_SHARE` and `VCUDA_IOC_UNSHARE`; 3:
/// [`VCUDA_SUBMIT_DETACHED`]).
pub const VCUDA_ABI_VERSION: u32 = 3;
/// Submits a message and waits for its reply.
pub const VCUDA_IOC_SUBMIT: u32 = ioc(IOC_READ | IOC_WRITE, 1, size_of::<VcudaSubmit>());
/// Reads the device's limits and this file's session id.
pub const VCUDA_IOC_INFO: u32 = ioc(IOC_READ, 2, size_of::<VcudaInfo>());
/// Most segments in one submit.
pub const VCUDA_MAX_SEGS: u32 = 256;
/// Pins user pages for as long as the device shares them (`ChainOp::SharePages`) and
/// returns the region's handle.
pub const VCUDA_IOC_SHARE: u32 = ioc(IOC_READ | IOC_WRITE, 3, size_of::<VcudaShare>());
/// Ends a region `VCUDA_IOC_SHARE` made (argument: its `u64` handle): the device stops
/// using the pages (`ChainOp::UnsharePages`), then the module unpins them.
pub const VCUDA_IOC_UNSHARE: u32 = ioc(IOC_WRITE, 4, size_of::<u64>());

/// The kernel module's mirror of this ABI (and of the chain header and config space), a
/// `core`-only file the module compiles too; `tests::module_abi_matches` compares the two.
#[cfg(test)]
#[path = "../../guest-driver/abi.rs"]
mod module_abi;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers() {
        // _IOWR('V', 1, 48 bytes) and _IOR('V', 2, 48 bytes) as <asm-generic/ioctl.h> computes them.
        assert_eq!(VCUDA_IOC_SUBMIT, 0xc030_5601);
        assert_eq!(VCUDA_IOC_INFO, 0x8030_5602);
        assert_eq!(VCUDA_IOC_SHARE, 0xc018_5603);
        assert_eq!(VCUDA_IOC_UNSHARE, 0x4008_5604);
    }

    /// guest-driver/abi.rs (the module's definitions) agrees with this crate field by field.
    #[test]
    fn module_abi_matches() {
        use core::mem::offset_of;

        use super::module_abi as m;
        use crate::virtio::{ChainHeader, ChainOp, VirtioCudaConfig};

        macro_rules! same_layout {
            ($ours:ty, $theirs:ty, [$($f:ident),*]) => {
                assert_eq!(size_of::<$ours>(), size_of::<$theirs>(), stringify!($ours));
                $(assert_eq!(
                    offset_of!($ours, $f),
                    offset_of!($theirs, $f),
                    concat!(stringify!($ours), ".", stringify!($f))
                );)*
            };
        }
        same_layout!(VcudaSeg, m::VcudaSeg, [addr, len, dir, flags]);
        same_layout!(
            VcudaSubmit,
            m::VcudaSubmit,
            [
                ctrl_addr, ctrl_len, reply_cap, reply_addr, segs_addr, n_segs, reply_len, flags
            ]
        );
        same_layout!(
            VcudaInfo,
            m::VcudaInfo,
            [config, session, max_segs, abi_version]
        );
        same_layout!(
            VirtioCudaConfig,
            m::VirtioCudaConfig,
            [
                magic,
                protocol_version,
                num_request_queues,
                max_chain_descriptors,
                max_ctrl_len,
                features,
                max_data_len
            ]
        );
        same_layout!(ChainHeader, m::ChainHeader, [session, op, reply_capacity]);
        same_layout!(VcudaShare, m::VcudaShare, [addr, len, handle]);
        same_layout!(
            crate::virtio::SharePagesReq,
            m::SharePagesReq,
            [len, n_extents, reserved]
        );
        same_layout!(crate::virtio::PageExtent, m::PageExtent, [addr, len]);
        assert_eq!(m::VCUDA_IOC_SHARE, VCUDA_IOC_SHARE);
        assert_eq!(m::VCUDA_IOC_UNSHARE, VCUDA_IOC_UNSHARE);
        assert_eq!(m::CHAIN_OP_SHARE_PAGES, ChainOp::SharePages as u32);
        assert_eq!(m::CHAIN_OP_UNSHARE_PAGES, ChainOp::UnsharePages as u32);
        assert_eq!(m::CHAIN_OP_SUBMIT_DETACHED, ChainOp::SubmitDetached as u32);
        assert_eq!(
            m::CONFIG_F_DETACHED_SUBMIT,
            crate::virtio::CONFIG_F_DETACHED_SUBMIT
        );
        assert_eq!(m::VCUDA_SUBMIT_DETACHED, VCUDA_SUBMIT_DETACHED);
        assert_eq!(m::VCUDA_MAX_DETACHED, VCUDA_MAX_DETACHED);
        assert_eq!(m::MAX_SHARE_EXTENTS, crate::virtio::MAX_SHARE_EXTENTS);
        assert_eq!(m::MAX_SHARE_LEN, crate::virtio::MAX_SHARE_LEN);
        assert_eq!(m::RECORD_HEADER_LEN, size_of::<crate::RecordHeader>());

        assert_eq!(m::VCUDA_IOC_TYPE, u32::from(VCUDA_IOC_TYPE));
        assert_eq!(m::VCUDA_IOC_SUBMIT, VCUDA_IOC_SUBMIT);
        assert_eq!(m::VCUDA_IOC_INFO, VCUDA_IOC_INFO);
        assert_eq!(m::VCUDA_ABI_VERSION, VCUDA_ABI_VERSION);
        assert_eq!(m::VCUDA_MAX_SEGS, VCUDA_MAX_SEGS);
        assert_eq!(m::SEG_OUT, crate::SegmentDir::Out as u32);
        assert_eq!(m::SEG_IN, crate::SegmentDir::In as u32);
        assert_eq!(m::CHAIN_OP_SUBMIT, ChainOp::Submit as u32);
        assert_eq!(m::CHAIN_OP_OPEN_SESSION, ChainOp::OpenSession as u32);
        assert_eq!(m::CHAIN_OP_CLOSE_SESSION, ChainOp::CloseSession as u32);
        assert_eq!(m::VIRTIO_ID_CUDA, crate::virtio::VIRTIO_ID_CUDA);
        assert_eq!(m::CONFIG_MAGIC, crate::virtio::CONFIG_MAGIC);
        assert_eq!(m::MAX_REQUEST_QUEUES, crate::virtio::MAX_REQUEST_QUEUES);
        assert_eq!(m::MIN_REPLY_CAPACITY, crate::virtio::MIN_REPLY_CAPACITY);
        assert_eq!(m::PROTOCOL_VERSION, u32::from(crate::PROTOCOL_VERSION));
        assert_eq!(m::REPLY_MAGIC, crate::REPLY_MAGIC);
        assert_eq!(m::REPLY_HEADER_LEN, size_of::<crate::ReplyHeader>());
        assert_eq!(
            m::REPLY_HEADER_MAGIC_OFFSET,
            offset_of!(crate::ReplyHeader, magic)
        );
        assert_eq!(
            m::REPLY_HEADER_CTRL_LEN_OFFSET,
            offset_of!(crate::ReplyHeader, ctrl_len)
        );
    }
}
