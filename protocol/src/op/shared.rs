// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Memory shared with the host (a Unix socket's memfd): sharing it, mapping it for kernels,
//! and copies whose host side lies in it.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::memory::{MemcpyDtoHReq, MemcpyHtoDReq};

wire_struct!(
    /// `MapHostMemory` request: exposes `len` bytes at `offset` of a shared region
    /// (`region`, from `ShareMemory`) to kernels at device address `addr` (the guest's
    /// address of that memory: with unified addressing a mapped host pointer is its device
    /// pointer). The range must not overlap device allocations, other mapped ranges or the
    /// executor's reserved windows. `UnmapHostMemory` ([`PtrReq`](super::PtrReq) with
    /// `addr`) removes it; unsharing the region or ending the session removes it too.
    MapHostMemoryReq, 32 {
        /// The shared region.
        region: u64,
        /// Offset of the range in the region.
        offset: u64,
        /// Bytes.
        len: u64,
        /// Device address of the range's first byte.
        addr: u64,
    }
);

wire_struct!(
    /// `ShareMemory` request: maps the memory file passed with the message (`SCM_RIGHTS` on a
    /// Unix socket: a sealed memfd) into the session. Replies with the region's handle.
    ShareMemoryReq, 16 {
        /// Bytes to map from the file's start (the file must be at least this long and
        /// sealed against shrinking).
        len: u64,
        /// Zero.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `MemcpyHtoDShared` request: a [`MemcpyHtoDReq`] whose packed source rows are in a
    /// shared region (`region`, from `ShareMemory`) at `offset`, not in a data segment.
    MemcpyHtoDSharedReq, 64 {
        /// Destination device address.
        dst: u64,
        /// Destination pitch (ignored when `height == 1`).
        dpitch: u64,
        /// Bytes per row.
        width: u64,
        /// Rows.
        height: u64,
        /// Stream handle.
        stream: u64,
        /// `COPY_*` flags.
        flags: u32,
        /// Zero.
        reserved: u32,
        /// The shared region.
        region: u64,
        /// Offset of the source in the region.
        offset: u64,
    }
);

impl MemcpyHtoDSharedReq {
    /// The copy, as a [`MemcpyHtoDReq`].
    pub fn copy(&self) -> MemcpyHtoDReq {
        MemcpyHtoDReq {
            dst: self.dst,
            dpitch: self.dpitch,
            width: self.width,
            height: self.height,
            stream: self.stream,
            flags: self.flags,
            reserved: 0,
        }
    }
}

wire_struct!(
    /// `MemcpyDtoHShared` request: a [`MemcpyDtoHReq`] whose packed destination rows are in
    /// a shared region (`region`, from `ShareMemory`) at `offset`, not in a data segment.
    MemcpyDtoHSharedReq, 64 {
        /// Source device address.
        src: u64,
        /// Source pitch (ignored when `height == 1`).
        spitch: u64,
        /// Bytes per row.
        width: u64,
        /// Rows.
        height: u64,
        /// Stream handle.
        stream: u64,
        /// `COPY_*` flags.
        flags: u32,
        /// Zero.
        reserved: u32,
        /// The shared region.
        region: u64,
        /// Offset of the destination in the region.
        offset: u64,
    }
);

impl MemcpyDtoHSharedReq {
    /// The copy, as a [`MemcpyDtoHReq`].
    pub fn copy(&self) -> MemcpyDtoHReq {
        MemcpyDtoHReq {
            src: self.src,
            spitch: self.spitch,
            width: self.width,
            height: self.height,
            stream: self.stream,
            flags: self.flags,
            reserved: 0,
        }
    }
}
