// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Stream attributes and identity, and the configuration calls whose settings are hints:
//! `cudaStreamGetAttribute`/`SetAttribute`/`CopyAttributes`, `cudaStreamGetId`, shared memory
//! bank configuration, `cudaCtxResetPersistingL2Cache`, `cudaSetValidDevices`,
//! `cudaDeviceGetByPCIBusId`, `cudaOccupancyAvailableDynamicSMemPerBlock` and the deprecated
//! `cudaSetDoubleFor*`.
//!
//! The executors have no L2 persistence, memory synchronization domains or stream priorities
//! to honour, so these attributes are what CUDA documents them to be, hints: they are
//! validated as CUDA validates them, kept per stream, and read back; they change nothing
//! about how work runs (as on a GPU whose persisting L2 size is 0, which the device reports).

use crate::client::{self};
use crate::core::attr_table::cudaLaunchAttributeValue;
use crate::core::attrs::*;
use crate::core::registry;
use crate::error::Error;
use crate::ffi::{cudaStream_t, write_out};
use crate::state;
use std::ffi::{c_char, c_int, c_uint, c_void};
use vcuda_protocol::attr;

entry! {
    fn cudaGraphKernelNodeGetAttribute(node: *mut c_void, id: c_int, out: *mut cudaLaunchAttributeValue) {
        node_get(node, id, out)
    }

    fn cudaGraphKernelNodeSetAttribute(node: *mut c_void, id: c_int, value: *const cudaLaunchAttributeValue) {
        node_set(node, id, value)
    }

    fn cudaGraphKernelNodeCopyAttributes(dst: *mut c_void, src: *mut c_void) {
        node_copy(dst, src)
    }

    fn cudaStreamGetAttribute(s: cudaStream_t, id: c_int, out: *mut cudaLaunchAttributeValue) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_get_attribute(s, id, out) }
    }

    fn cudaStreamGetAttribute_ptsz(s: cudaStream_t, id: c_int, out: *mut cudaLaunchAttributeValue) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_get_attribute_ptsz(s, id, out) }
    }

    fn cudaStreamSetAttribute(s: cudaStream_t, id: c_int, value: *const cudaLaunchAttributeValue) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_set_attribute(s, id, value) }
    }

    fn cudaStreamSetAttribute_ptsz(s: cudaStream_t, id: c_int, value: *const cudaLaunchAttributeValue) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_set_attribute_ptsz(s, id, value) }
    }

    fn cudaStreamCopyAttributes(dst: cudaStream_t, src: cudaStream_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_copy_attributes(dst, src) }
    }

    fn cudaStreamCopyAttributes_ptsz(dst: cudaStream_t, src: cudaStream_t) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_copy_attributes_ptsz(dst, src) }
    }

    fn cudaStreamGetId(s: cudaStream_t, id: *mut u64) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_get_id(s, id) }
    }

    fn cudaStreamGetId_ptsz(s: cudaStream_t, id: *mut u64) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { stream_get_id_ptsz(s, id) }
    }

    fn cudaDeviceGetSharedMemConfig(config: *mut c_int) {
        client::client()?;
        // SAFETY: the caller's output pointer (checked for null by write_out).
        unsafe { write_out(config, BANK_SIZE_FOUR_BYTE) }
    }

    fn cudaDeviceSetSharedMemConfig(config: c_int) {
        client::client()?;
        // Default, four-byte and eight-byte banks; the bank size is fixed (the setting has no
        // effect, as CUDA documents for such devices).
        if !(0..=2).contains(&config) {
            return Err(Error::INVALID_VALUE);
        }
        Ok(())
    }

    fn cudaFuncSetSharedMemConfig(host_fun: *const c_void, config: c_int) {
        client::client()?;
        registry::function(host_fun as usize).ok_or(Error::INVALID_DEVICE_FUNCTION)?;
        if !(0..=2).contains(&config) {
            return Err(Error::INVALID_VALUE);
        }
        Ok(())
    }

    fn cudaCtxResetPersistingL2Cache() {
        // No line is ever persisting (the persisting L2 size is 0).
        client::client().map(drop)
    }

    fn cudaSetValidDevices(devices: *mut c_int, len: c_int) {
        let c = client::client()?;
        if len < 0 || (len > 0 && devices.is_null()) {
            return Err(Error::INVALID_VALUE);
        }
        // SAFETY: `len` readable ints (the API's contract), checked non-null above.
        let list = if len == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(devices, len as usize) } };
        for &d in list {
            c.check_device(d)?;
        }
        Ok(())
    }

    fn cudaSetDoubleForDevice(d: *mut f64) {
        // Deprecated: doubles need no conversion on any supported device.
        if d.is_null() { Err(Error::INVALID_VALUE) } else { Ok(()) }
    }

    fn cudaSetDoubleForHost(d: *mut f64) {
        if d.is_null() { Err(Error::INVALID_VALUE) } else { Ok(()) }
    }

    fn cudaDeviceGetByPCIBusId(device: *mut c_int, bus_id: *const c_char) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { device_get_by_pci_bus_id(device, bus_id) }
    }

    fn cudaDeviceGetHostAtomicCapabilities(caps: *mut c_uint, ops: *const c_int, count: c_uint, device: c_int) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { device_get_host_atomic_capabilities(caps, ops, count, device) }
    }

    fn cudaDeviceGetP2PAtomicCapabilities(caps: *mut c_uint, ops: *const c_int, count: c_uint, src: c_int, dst: c_int) {
        // SAFETY: the caller's arguments, valid as the API requires.
        unsafe { device_get_p2p_atomic_capabilities(caps, ops, count, src, dst) }
    }

    fn cudaOccupancyAvailableDynamicSMemPerBlock(out: *mut usize, func: *const c_void, num_blocks: c_int, block: c_int) {
        let c = client::client()?;
        if num_blocks <= 0 || block <= 0 {
            return Err(Error::INVALID_VALUE);
        }
        let f = registry::function(func as usize).ok_or(Error::INVALID_DEVICE_FUNCTION)?.load(c)?;
        let info = c.device_info(state::device())?;
        let a = |n| i64::from(info.attr(n).unwrap_or(0).max(0));
        if i64::from(block) > a(attr::MAX_THREADS_PER_BLOCK) {
            return Err(Error::INVALID_VALUE);
        }
        let attrs = crate::core::launch::current_attrs(f.handle, &f.attrs);
        let avail = available_dynamic_smem(info, &attrs, num_blocks);
        // SAFETY: the caller's output pointer (checked for null by write_out).
        unsafe { write_out(out, avail) }
    }
}
