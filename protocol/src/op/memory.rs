// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Device memory: allocation, device pointers, copies and memsets through data segments,
//! and IPC handles.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

wire_struct!(
    /// `Malloc` request.
    MallocReq, 16 {
        /// Device ordinal.
        device: u32,
        /// Zero.
        flags: u32,
        /// Bytes to allocate.
        size: u64,
    }
);

wire_struct!(
    /// A device pointer.
    PtrReq, 8 {
        /// Device address.
        ptr: u64,
    }
);

wire_struct!(
    /// `cudaIpcMemHandle_t` or `cudaIpcEventHandle_t`: what the backend hands out for an
    /// exported allocation or event (opaque to the program; see the executors for what it
    /// holds).
    IpcHandle, 64 {
        /// The handle's bytes.
        bytes: [u8; 64],
    }
);

wire_struct!(
    /// `IpcOpenMemHandle` and `IpcOpenEventHandle` request.
    IpcOpenReq, 72 {
        /// The handle, as `IpcGetMemHandle` returned it.
        handle: [u8; 64],
        /// Memory: `cudaIpcMemLazyEnablePeerAccess` (1) is the only flag. Events: zero.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `IpcOpenMemHandle` reply.
    IpcOpenResp, 16 {
        /// Where the shared allocation is mapped in this session.
        ptr: u64,
        /// Its length.
        len: u64,
    }
);

wire_struct!(
    /// A device pointer reply.
    PtrResp, 8 {
        /// Device address.
        ptr: u64,
    }
);

/// Copy flag: asynchronous with respect to the host (`cudaMemcpyAsync` and friends).
pub const COPY_ASYNC: u32 = 1 << 0;

wire_struct!(
    /// `MemcpyHtoD` request: `height` rows of `width` bytes, the destination rows `dpitch`
    /// apart. A 1-D copy has `height == 1`.
    MemcpyHtoDReq, 48 {
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
    }
);

wire_struct!(
    /// `MemcpyDtoH` request: `height` rows of `width` bytes, the source rows `spitch` apart.
    MemcpyDtoHReq, 48 {
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
    }
);

wire_struct!(
    /// `MemcpyDtoD` request.
    MemcpyDtoDReq, 64 {
        /// Destination device address.
        dst: u64,
        /// Destination pitch.
        dpitch: u64,
        /// Source device address.
        src: u64,
        /// Source pitch.
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
    }
);

wire_struct!(
    /// `Memset` request: sets `height` rows of `width` elements of `elem_size` bytes.
    MemsetReq, 48 {
        /// Destination device address.
        dst: u64,
        /// Destination pitch in bytes.
        pitch: u64,
        /// Elements per row.
        width: u64,
        /// Rows.
        height: u64,
        /// Stream handle.
        stream: u64,
        /// The value; its low `elem_size` bytes are stored.
        value: u32,
        /// 1, 2 or 4.
        elem_size: u16,
        /// `COPY_*` flags.
        flags: u16,
    }
);
