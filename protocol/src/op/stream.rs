// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Streams and events: handles, creation, waits, records and elapsed times.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// The legacy default stream (`0` / `cudaStreamLegacy`).
pub const STREAM_LEGACY: u64 = 0;

wire_struct!(
    /// `StreamCreate` request.
    StreamCreateReq, 16 {
        /// Device ordinal.
        device: u32,
        /// `cudaStreamDefault` (0) or `cudaStreamNonBlocking` (1).
        flags: u32,
        /// Priority (lower is higher priority).
        priority: i32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// A handle.
    HandleReq, 8 {
        /// The handle.
        handle: u64,
    }
);

wire_struct!(
    /// A new handle.
    HandleResp, 8 {
        /// The handle.
        handle: u64,
    }
);

wire_struct!(
    /// `StreamWaitEvent` request.
    StreamWaitEventReq, 24 {
        /// Stream handle.
        stream: u64,
        /// Event handle.
        event: u64,
        /// Zero.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `EventCreate` request.
    EventCreateReq, 8 {
        /// Device ordinal.
        device: u32,
        /// `cudaEvent*` creation flags.
        flags: u32,
    }
);

wire_struct!(
    /// `EventRecord` request.
    EventRecordReq, 24 {
        /// Event handle.
        event: u64,
        /// Stream handle.
        stream: u64,
        /// `cudaEventRecordWithFlags` flags.
        flags: u32,
        /// Zero.
        reserved: u32,
    }
);

wire_struct!(
    /// `EventElapsedTime` request.
    EventElapsedReq, 16 {
        /// Start event.
        start: u64,
        /// End event.
        end: u64,
    }
);

wire_struct!(
    /// `EventElapsedTime` reply.
    EventElapsedResp, 8 {
        /// Milliseconds.
        ms: f32,
        /// Zero.
        reserved: u32,
    }
);
