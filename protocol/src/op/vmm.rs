// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Virtual memory management (`cuMemCreate`, `cuMemAddressReserve`, `cuMemMap`,
//! `cuMemSetAccess`).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

wire_struct!(
    /// `VmmCreate` request (`cuMemCreate`): a physical allocation of device memory.
    VmmCreateReq, 16 {
        /// Bytes, a multiple of the allocation granularity.
        size: u64,
        /// The device it lives on.
        device: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `VmmReserve` request (`cuMemAddressReserve`): a range of device address space.
    VmmReserveReq, 24 {
        /// Bytes, a multiple of the allocation granularity.
        size: u64,
        /// Alignment (0: the granularity; else a power of two).
        alignment: u64,
        /// The address asked for (a hint; 0: none).
        addr: u64,
    }
);

wire_struct!(
    /// A range of reserved address space (`VmmFree`, `VmmUnmap`).
    VmmRangeReq, 16 {
        /// Start.
        ptr: u64,
        /// Bytes.
        size: u64,
    }
);

wire_struct!(
    /// `VmmMap` request (`cuMemMap`).
    VmmMapReq, 32 {
        /// Where, inside a reservation.
        ptr: u64,
        /// Bytes.
        size: u64,
        /// Offset into the physical allocation.
        offset: u64,
        /// The physical allocation.
        handle: u64,
    }
);

wire_struct!(
    /// `VmmSetAccess` request (`cuMemSetAccess`, one descriptor).
    VmmAccessReq, 24 {
        /// Start of mapped memory.
        ptr: u64,
        /// Bytes.
        size: u64,
        /// The device given access.
        device: u32,
        /// `CUmemAccess_flags`: 0 none, 1 read, 3 read-write.
        flags: u32,
    }
);
