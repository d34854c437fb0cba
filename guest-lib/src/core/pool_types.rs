// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The C types of stream-ordered memory (`cudaMemPoolProps`, `cudaMemLocation`,
//! `cudaMemAccessDesc`, ...), shared by memory pools ([`super::pool`]) and graph allocation
//! nodes ([`super::graph_mem`]).

use std::ffi::{c_int, c_void};

/// `cudaMemPool_t`.
pub type cudaMemPool_t = *mut c_void;

/// `cudaMemPoolPtrExportData` (and the driver's `CUmemPoolPtrExportData`): 64 opaque bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cudaMemPoolPtrExportData {
    pub(crate) reserved: [u8; 64],
}

/// `cudaMemAllocationTypePinned`, `cudaMemLocationTypeDevice`, `cudaMemAccessFlagsProtReadWrite`.
pub(crate) const ALLOCATION_PINNED: c_int = 1;

pub(crate) const LOCATION_DEVICE: c_int = 1;

pub(crate) const ACCESS_READ_WRITE: c_int = 3;

/// `cudaMemLocation`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cudaMemLocation {
    pub(crate) ty: c_int,
    pub(crate) id: c_int,
}

/// `cudaMemPoolProps`.
#[repr(C)]
pub struct cudaMemPoolProps {
    pub(crate) alloc_type: c_int,
    pub(crate) handle_types: c_int,
    pub(crate) location: cudaMemLocation,
    pub(crate) win32_security_attributes: *mut c_void,
    pub(crate) max_size: usize,
    pub(crate) usage: u16,
    pub(crate) reserved: [u8; 54],
}

impl cudaMemPoolProps {
    /// Default properties of pinned device memory on `device` (what a graph allocation node
    /// reports).
    pub(crate) fn device_pinned(device: c_int) -> Self {
        let mut p = Self {
            alloc_type: 0,
            handle_types: 0,
            location: cudaMemLocation { ty: 0, id: 0 },
            win32_security_attributes: std::ptr::null_mut(),
            max_size: 0,
            usage: 0,
            reserved: [0; 54],
        };
        p.set_device_pinned(device);
        p
    }

    /// Pinned device memory on `device` (what a graph allocation node reports).
    pub(crate) fn set_device_pinned(&mut self, device: c_int) {
        self.alloc_type = ALLOCATION_PINNED;
        self.location = cudaMemLocation {
            ty: LOCATION_DEVICE,
            id: device,
        };
    }
}

/// `cudaMemAccessDesc`.
#[repr(C)]
pub struct cudaMemAccessDesc {
    pub(crate) location: cudaMemLocation,
    pub(crate) flags: c_int,
}
