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
        let v = node_get(node, id)?;
        // SAFETY: the caller's output pointer (checked for null by write_out).
        unsafe { write_out(out, v) }
    }

    fn cudaGraphKernelNodeSetAttribute(node: *mut c_void, id: c_int, value: *const cudaLaunchAttributeValue) {
        // SAFETY: the caller's value (the API's contract), checked for null.
        node_set(node, id, unsafe { value.as_ref() })
    }

    fn cudaGraphKernelNodeCopyAttributes(dst: *mut c_void, src: *mut c_void) {
        node_copy(dst, src)
    }

    fn cudaStreamGetAttribute(s: cudaStream_t, id: c_int, out: *mut cudaLaunchAttributeValue) {
        let v = get_attribute(s, id, false)?;
        // SAFETY: the caller's output pointer (checked for null by write_out).
        unsafe { write_out(out, v) }
    }

    fn cudaStreamGetAttribute_ptsz(s: cudaStream_t, id: c_int, out: *mut cudaLaunchAttributeValue) {
        let v = get_attribute(s, id, true)?;
        // SAFETY: the caller's output pointer (checked for null by write_out).
        unsafe { write_out(out, v) }
    }

    fn cudaStreamSetAttribute(s: cudaStream_t, id: c_int, value: *const cudaLaunchAttributeValue) {
        // SAFETY: the caller's value (the API's contract), checked for null.
        set_attribute(s, id, unsafe { value.as_ref() }, false)
    }

    fn cudaStreamSetAttribute_ptsz(s: cudaStream_t, id: c_int, value: *const cudaLaunchAttributeValue) {
        // SAFETY: the caller's value (the API's contract), checked for null.
        set_attribute(s, id, unsafe { value.as_ref() }, true)
    }

    fn cudaStreamCopyAttributes(dst: cudaStream_t, src: cudaStream_t) {
        copy_attributes(dst, src, false)
    }

    fn cudaStreamCopyAttributes_ptsz(dst: cudaStream_t, src: cudaStream_t) {
        copy_attributes(dst, src, true)
    }

    fn cudaStreamGetId(s: cudaStream_t, id: *mut u64) {
        let v = stream_id(s, false)?;
        // SAFETY: the caller's output pointer (checked for null by write_out).
        unsafe { write_out(id, v) }
    }

    fn cudaStreamGetId_ptsz(s: cudaStream_t, id: *mut u64) {
        let v = stream_id(s, true)?;
        // SAFETY: the caller's output pointer (checked for null by write_out).
        unsafe { write_out(id, v) }
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
        // SAFETY: the caller's string, NUL-terminated (the API's contract), checked for null.
        let id = unsafe { bus_id_in(device, bus_id) }?;
        let d = device_get_by_pci_bus_id(id)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(device, d) }
    }

    fn cudaDeviceGetHostAtomicCapabilities(caps: *mut c_uint, ops: *const c_int, count: c_uint, device: c_int) {
        // SAFETY: `count` operations at `ops` (the API's contract), checked for null.
        let n = device_get_host_atomic_capabilities(unsafe { ops_in(caps, ops, count) }, device)?;
        // SAFETY: room for one capability set per operation at `caps` (checked for null).
        unsafe { caps_out(caps, n) }
    }

    fn cudaDeviceGetP2PAtomicCapabilities(caps: *mut c_uint, ops: *const c_int, count: c_uint, src: c_int, dst: c_int) {
        // SAFETY: `count` operations at `ops` (the API's contract), checked for null.
        let n = device_get_p2p_atomic_capabilities(unsafe { ops_in(caps, ops, count) }, src, dst)?;
        // SAFETY: room for one capability set per operation at `caps` (checked for null).
        unsafe { caps_out(caps, n) }
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

/// An atomic capabilities query's operations: `None` where either array is null.
///
/// # Safety
/// `ops` is null or points to `count` operations.
pub(crate) unsafe fn ops_in<'a>(
    caps: *mut c_uint,
    ops: *const c_int,
    count: c_uint,
) -> Option<&'a [c_int]> {
    if caps.is_null() || ops.is_null() {
        return None;
    }
    // SAFETY: `count` operations at `ops`, non-null (the caller's contract).
    Some(unsafe { std::slice::from_raw_parts(ops, count as usize) })
}

/// Writes `n` empty capability sets at `caps`.
///
/// # Safety
/// `caps` is null or points to room for `n` capability sets.
pub(crate) unsafe fn caps_out(caps: *mut c_uint, n: usize) -> Result<(), Error> {
    if caps.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: room for `n` sets at `caps`, non-null (the caller's contract).
    unsafe { std::slice::from_raw_parts_mut(caps, n) }.fill(0);
    Ok(())
}

/// A PCI bus id from C (`Some(None)`: not UTF-8); `INVALID_VALUE` where it or the output
/// pointer is null.
///
/// # Safety
/// `bus_id` is null or a NUL-terminated string.
pub(crate) unsafe fn bus_id_in<'a>(
    device: *mut c_int,
    bus_id: *const c_char,
) -> Result<Option<&'a str>, Error> {
    if bus_id.is_null() || device.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: a NUL-terminated string (the caller's contract), non-null.
    Ok(unsafe { std::ffi::CStr::from_ptr(bus_id) }.to_str().ok())
}
