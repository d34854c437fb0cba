// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Devices: their index, properties and attributes, free memory and limits.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

wire_struct!(
    /// A device index.
    DeviceReq, 8 {
        /// Device ordinal.
        device: u32,
        /// Zero.
        reserved: u32,
    }
);

/// Length of [`DeviceInfo::attrs`]: covers every `cudaDeviceAttr` of CUDA 12 and 13.
pub const DEVICE_ATTR_COUNT: usize = 256;

wire_struct!(
    /// `GetDeviceInfo` reply: everything `cudaGetDeviceProperties` and
    /// `cudaDeviceGetAttribute` report, independent of the guest's CUDA version. The guest
    /// builds its version's `cudaDeviceProp` from it.
    DeviceInfo, 1328 {
        /// NUL-terminated device name.
        name: [u8; 256],
        /// Device UUID.
        uuid: [u8; 16],
        /// Locally unique id (zero on Linux).
        luid: [u8; 8],
        /// Bytes of device memory.
        total_global_mem: u64,
        /// `attrs[a]` is the value of `cudaDeviceAttr` `a`.
        attrs: [i32; DEVICE_ATTR_COUNT],
        /// Zero.
        reserved: [u8; 16],
    }
);

impl DeviceInfo {
    /// The value of attribute `attr`, if it is in range.
    pub fn attr(&self, attr: u32) -> Option<i32> {
        self.attrs.get(attr as usize).copied()
    }
}

wire_struct!(
    /// `MemGetInfo` reply.
    MemGetInfoResp, 16 {
        /// Free bytes.
        free: u64,
        /// Total bytes.
        total: u64,
    }
);

wire_struct!(
    /// `DeviceSetLimit` / `DeviceGetLimit` request.
    LimitReq, 16 {
        /// Device ordinal.
        device: u32,
        /// A `cudaLimit` value.
        limit: u32,
        /// The new value (set only).
        value: u64,
    }
);

wire_struct!(
    /// `DeviceGetLimit` reply.
    LimitResp, 8 {
        /// The limit's value.
        value: u64,
    }
);
