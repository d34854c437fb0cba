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
    /// Zero.
    pub flags: u64,
}
const _: () = assert!(size_of::<VcudaSubmit>() == 48);

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

/// Version of this ioctl ABI.
pub const VCUDA_ABI_VERSION: u32 = 1;
/// Submits a message and waits for its reply.
pub const VCUDA_IOC_SUBMIT: u32 = ioc(IOC_READ | IOC_WRITE, 1, size_of::<VcudaSubmit>());
/// Reads the device's limits and this file's session id.
pub const VCUDA_IOC_INFO: u32 = ioc(IOC_READ, 2, size_of::<VcudaInfo>());
/// Most segments in one submit.
pub const VCUDA_MAX_SEGS: u32 = 256;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers() {
        // _IOWR('V', 1, 48 bytes) and _IOR('V', 2, 48 bytes) as <asm-generic/ioctl.h> computes them.
        assert_eq!(VCUDA_IOC_SUBMIT, 0xc030_5601);
        assert_eq!(VCUDA_IOC_INFO, 0x8030_5602);
    }
}
