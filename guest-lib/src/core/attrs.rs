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

use crate::client::{self, Client};
use crate::core::attr_table::cudaLaunchAttributeValue;
use crate::core::attr_table::node_table;
use crate::core::attr_table::table;
use crate::core::handle::resolve;
use crate::error::{Error, Result};
use crate::ffi::cudaStream_t;
use crate::state;
use std::ffi::{c_int, c_void};
use vcuda_protocol::attr;

/// `cudaLaunchAttributeID` values valid for streams.
pub(crate) const ACCESS_POLICY_WINDOW: c_int = 1;
pub(crate) const SYNCHRONIZATION_POLICY: c_int = 3;
pub(crate) const PRIORITY: c_int = 8;
pub(crate) const MEM_SYNC_DOMAIN_MAP: c_int = 9;
pub(crate) const MEM_SYNC_DOMAIN: c_int = 10;

/// `cudaSyncPolicyAuto` .. `cudaSyncPolicyBlockingSync`.
pub(crate) const SYNC_POLICIES: std::ops::RangeInclusive<u32> = 1..=4;
/// `cudaSharedMemBankSizeFourByte`: the bank size of every device since Maxwell.
pub(crate) const BANK_SIZE_FOUR_BYTE: c_int = 1;

/// The default value of a stream attribute.
pub(crate) fn default_value(s: cudaStream_t, id: c_int) -> Result<cudaLaunchAttributeValue> {
    Ok(match id {
        // base 0, 0 bytes, hit ratio 0, hitProp/missProp cudaAccessPropertyNormal (0).
        ACCESS_POLICY_WINDOW | MEM_SYNC_DOMAIN => cudaLaunchAttributeValue([0; 64]),
        // Never set: -1, no policy of the enum (NVIDIA's runtime, CUDA 13.0, H100, measured).
        SYNCHRONIZATION_POLICY => cudaLaunchAttributeValue::from_u32s(&[u32::MAX]),
        // default domain 0, remote domain 1 (as CUDA initializes it).
        MEM_SYNC_DOMAIN_MAP => {
            let mut v = [0u8; 64];
            v[1] = 1;
            cudaLaunchAttributeValue(v)
        }
        PRIORITY => {
            let p = crate::core::stream::stream_info(crate::client::client()?, s)?.priority;
            cudaLaunchAttributeValue::from_u32s(&[p as u32])
        }
        _ => return Err(Error::INVALID_VALUE),
    })
}

/// Checks a value as CUDA does for the attribute.
pub(crate) fn check_value(c: &Client, id: c_int, v: &cudaLaunchAttributeValue) -> Result<()> {
    match id {
        ACCESS_POLICY_WINDOW => {
            // { void* base_ptr; size_t num_bytes; float hitRatio; int hitProp; int missProp; }
            let bytes = v.u64_at(8);
            let ratio = f32::from_bits(v.u32_at(16));
            let (hit, miss) = (v.u32_at(20), v.u32_at(24));
            let info = c.device_info(state::device())?;
            let max = info
                .attr(attr::MAX_ACCESS_POLICY_WINDOW_SIZE)
                .unwrap_or(0)
                .max(0) as u64;
            // missProp may not be cudaAccessPropertyPersisting (2).
            if !(0.0..=1.0).contains(&ratio) || hit > 2 || miss > 1 || bytes > max {
                return Err(Error::INVALID_VALUE);
            }
        }
        SYNCHRONIZATION_POLICY if !SYNC_POLICIES.contains(&v.u32_at(0)) => {
            return Err(Error::INVALID_VALUE);
        }
        MEM_SYNC_DOMAIN if v.u32_at(0) > 1 => return Err(Error::INVALID_VALUE),
        PRIORITY | SYNCHRONIZATION_POLICY | MEM_SYNC_DOMAIN | MEM_SYNC_DOMAIN_MAP => {}
        _ => return Err(Error::INVALID_VALUE),
    }
    Ok(())
}

/// `cudaStreamGetAttribute` (`per_thread`: its `_ptsz` form, stream 0 the thread's).
pub(crate) fn get_attribute(
    s: cudaStream_t,
    id: c_int,
    per_thread: bool,
) -> Result<cudaLaunchAttributeValue> {
    let c = client::client()?;
    let h = resolve(c, s, per_thread)?;
    let stored = table()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&(c.generation(), h))
        .and_then(|a| a.get(&id).copied());
    match stored {
        Some(v) => Ok(v),
        None => default_value(s, id),
    }
}

/// `cudaStreamSetAttribute` with the caller's value (`None`: a null pointer).
pub(crate) fn set_attribute(
    s: cudaStream_t,
    id: c_int,
    value: Option<&cudaLaunchAttributeValue>,
    per_thread: bool,
) -> Result<()> {
    let c = client::client()?;
    let h = resolve(c, s, per_thread)?;
    let v = value.copied().ok_or(Error::INVALID_VALUE)?;
    check_value(c, id, &v)?;
    table()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry((c.generation(), h))
        .or_default()
        .insert(id, v);
    Ok(())
}

/// `cudaStreamCopyAttributes`.
pub(crate) fn copy_attributes(
    dst: cudaStream_t,
    src: cudaStream_t,
    per_thread: bool,
) -> Result<()> {
    let c = client::client()?;
    let (d, s) = (resolve(c, dst, per_thread)?, resolve(c, src, per_thread)?);
    let g = c.generation();
    let mut t = table().lock().unwrap_or_else(|e| e.into_inner());
    match t.get(&(g, s)).cloned() {
        Some(a) => t.insert((g, d), a),
        None => t.remove(&(g, d)),
    };
    Ok(())
}

/// `cudaLaunchAttributeCooperative` and `cudaLaunchAttributeClusterDimension`.
pub(crate) const COOPERATIVE: c_int = 2;
pub(crate) const CLUSTER_DIMENSION: c_int = 4;

/// Checks that `node` is a kernel node.
pub(crate) fn kernel_node(node: *mut c_void) -> Result<u64> {
    crate::core::graph::with(|r| match r.node(node as u64) {
        Ok(n) if matches!(n.kind, crate::core::graph::Kind::Kernel(_)) => Ok(node as u64),
        _ => Err(Error::INVALID_VALUE),
    })
}

/// A kernel node attribute's default value (priority 0: a node's launch priority is its
/// own, not a stream's; no cluster shape, 0x0x0, as NVIDIA's runtime answers).
pub(crate) fn node_default(id: c_int) -> Result<cudaLaunchAttributeValue> {
    match id {
        COOPERATIVE | PRIORITY | CLUSTER_DIMENSION => Ok(cudaLaunchAttributeValue([0; 64])),
        SYNCHRONIZATION_POLICY => Err(Error::INVALID_VALUE),
        _ => default_value(std::ptr::null_mut(), id),
    }
}

/// Whether kernel node `node` launches cooperatively (the flag lives with the node's kernel,
/// so clones and captured cooperative launches carry it).
pub(crate) fn node_cooperative(node: u64) -> Result<bool> {
    crate::core::graph::with_kernel(node, |k| k.cooperative)
}

/// `cudaGraphKernelNodeGetAttribute`.
pub(crate) fn node_get(node: *mut c_void, id: c_int) -> Result<cudaLaunchAttributeValue> {
    let n = kernel_node(node)?;
    if id == COOPERATIVE {
        return Ok(cudaLaunchAttributeValue::from_u32s(&[u32::from(
            node_cooperative(n)?,
        )]));
    }
    if id == CLUSTER_DIMENSION {
        let d = crate::core::graph::with_kernel(n, |k| k.cluster.unwrap_or([0; 3]))?;
        return Ok(cudaLaunchAttributeValue::from_u32s(&d));
    }
    let stored = node_table()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&n)
        .and_then(|a| a.get(&id).copied());
    match stored {
        Some(v) => Ok(v),
        None => node_default(id),
    }
}

/// `cudaGraphKernelNodeSetAttribute`: the hints streams take (access policy window,
/// priority, memory synchronization domains) are checked and kept; a cooperative node
/// launches cooperatively; a node given a cluster shape launches in clusters of it (none:
/// 0x0x0 or 1x1x1), and a shape the grid does not divide into, or of more than eight
/// blocks, is `cudaErrorInvalidClusterSize` (as NVIDIA's runtime answers).
pub(crate) fn node_set(
    node: *mut c_void,
    id: c_int,
    value: Option<&cudaLaunchAttributeValue>,
) -> Result<()> {
    let c = client::client()?;
    let n = kernel_node(node)?;
    let v = value.copied().ok_or(Error::INVALID_VALUE)?;
    match id {
        COOPERATIVE => {
            let on = v.u32_at(0) != 0;
            // A launch is cooperative or in clusters, never both (as `cudaLaunchKernelEx`).
            if on && crate::core::graph::with_kernel(n, |k| k.cluster.is_some())? {
                return Err(Error::NOT_SUPPORTED);
            }
            return crate::core::graph::with_kernel(n, |k| k.cooperative = on);
        }
        CLUSTER_DIMENSION => {
            let dims = [v.u32_at(0), v.u32_at(4), v.u32_at(8)];
            let shape = (dims != [0, 0, 0] && dims != [1, 1, 1]).then_some(dims);
            let (grid, func, backend, cooperative) = crate::core::graph::with_kernel(n, |k| {
                (k.grid.arr(), k.func, k.backend, k.cooperative)
            })?;
            if let Some(d) = shape {
                if cooperative {
                    return Err(Error::NOT_SUPPORTED);
                }
                match backend {
                    // The launch's own checks: the device has clusters, the kernel's
                    // compile-time shape, the grid, the size.
                    None => {
                        let f = crate::core::launch::loaded(c, func as *const c_void)?;
                        crate::core::misc::check_cluster(c, &f.attrs, grid, Some(d))?;
                    }
                    // A driver kernel's node: its attributes stay with the driver's function.
                    Some(_) => crate::core::misc::check_cluster_fits(c, grid, d)?,
                }
            }
            return crate::core::graph::with_kernel(n, |k| k.cluster = shape);
        }
        SYNCHRONIZATION_POLICY => return Err(Error::INVALID_VALUE),
        _ => check_value(c, id, &v)?,
    }
    node_table()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(n)
        .or_default()
        .insert(id, v);
    Ok(())
}

/// `cudaGraphKernelNodeCopyAttributes`.
pub(crate) fn node_copy(dst: *mut c_void, src: *mut c_void) -> Result<()> {
    let (d, s) = (kernel_node(dst)?, kernel_node(src)?);
    let (cooperative, cluster) =
        crate::core::graph::with_kernel(s, |k| (k.cooperative, k.cluster))?;
    crate::core::graph::with_kernel(d, |k| {
        k.cooperative = cooperative;
        k.cluster = cluster;
    })?;
    let mut t = node_table().lock().unwrap_or_else(|e| e.into_inner());
    match t.get(&s).cloned() {
        Some(a) => t.insert(d, a),
        None => t.remove(&d),
    };
    Ok(())
}

/// `cudaStreamGetId`.
pub(crate) fn stream_id(s: cudaStream_t, per_thread: bool) -> Result<u64> {
    let c = client::client()?;
    let h = resolve(c, s, per_thread)?;
    Ok(crate::core::handle::stream_number(c, h))
}

/// The operations of an atomic capabilities query (`cudaAtomicOperation`, 0 to 12; `None`:
/// the caller's arrays are null), checked as NVIDIA's runtime checks them (null arrays, no
/// operations and unknown ones are `cudaErrorInvalidValue`).
pub(crate) fn atomic_operations(ops: Option<&[c_int]>) -> Result<&[c_int]> {
    let ops = ops.filter(|o| !o.is_empty()).ok_or(Error::INVALID_VALUE)?;
    if ops.iter().any(|&o| !(0..=12).contains(&o)) {
        return Err(Error::INVALID_VALUE);
    }
    Ok(ops)
}

/// `cudaOccupancyAvailableDynamicSMemPerBlock`'s answer for a kernel with attributes `a`
/// (those set since included): each of `blocks` blocks on one multiprocessor gets an equal
/// share of its shared memory less the kernel's static shared memory, at most the kernel's
/// dynamic shared memory limit (48 KiB less its static memory unless raised). As NVIDIA's
/// runtime answers on an H100 (CUDA 13.0, measured: 48128 for 1 KiB of static memory and
/// two blocks, 28160 for eight, 100000 for two once the limit was raised to 100000).
pub(crate) fn available_dynamic_smem(
    info: &vcuda_protocol::DeviceInfo,
    a: &vcuda_protocol::FuncAttrs,
    blocks: c_int,
) -> usize {
    let attr = |n| i64::from(info.attr(n).unwrap_or(0).max(0));
    let share = attr(attr::MAX_SHARED_MEMORY_PER_MULTIPROCESSOR) / i64::from(blocks.max(1))
        - i64::try_from(a.shared_size_bytes).unwrap_or(i64::MAX);
    share.min(i64::from(a.max_dynamic_shared_size_bytes)).max(0) as usize
}

/// Parses `[domain:]bus:device[.function]` (hexadecimal), as `cudaDeviceGetPCIBusId` writes.
pub(crate) fn parse_bus_id(s: &str) -> Option<(i64, i64, i64)> {
    let s = s.trim();
    let (s, _function) = s.split_once('.').unwrap_or((s, "0"));
    let parts: Vec<&str> = s.split(':').collect();
    let hex = |p: &str| i64::from_str_radix(p, 16).ok();
    match parts.as_slice() {
        [d, b, v] => Some((hex(d)?, hex(b)?, hex(v)?)),
        [b, v] => Some((0, hex(b)?, hex(v)?)),
        _ => None,
    }
}

/// `cudaDeviceGetHostAtomicCapabilities`: how many capability sets to write, each empty.
pub(crate) fn device_get_host_atomic_capabilities(
    ops: Option<&[c_int]>,
    device: c_int,
) -> Result<usize> {
    let c = client::client()?;
    let ops = atomic_operations(ops)?;
    c.check_device(device)?;
    // No native atomics between the device and the host (cudaDevAttrHostNativeAtomicSupported
    // is 0, as on an H100 over PCIe, where every capability read 0): none for any operation.
    Ok(ops.len())
}

/// `cudaDeviceGetP2PAtomicCapabilities`: how many capability sets to write, each empty.
pub(crate) fn device_get_p2p_atomic_capabilities(
    ops: Option<&[c_int]>,
    src: c_int,
    dst: c_int,
) -> Result<usize> {
    let c = client::client()?;
    let ops = atomic_operations(ops)?;
    c.check_device(src)?;
    c.check_device(dst)?;
    if src == dst {
        // As NVIDIA's runtime answers for a device and itself (measured).
        return Err(Error::INVALID_DEVICE);
    }
    // No peer access between vcuda's devices: no atomics either.
    Ok(ops.len())
}

/// `cudaDeviceGetByPCIBusId` (and `cuDeviceGetByPCIBusId`): the device whose PCI domain,
/// bus and device numbers `bus_id` names (`None`: not UTF-8).
pub(crate) fn device_get_by_pci_bus_id(bus_id: Option<&str>) -> Result<c_int> {
    let c = client::client()?;
    let want = bus_id.and_then(parse_bus_id).ok_or(Error::INVALID_VALUE)?;
    for d in 0..c.device_count() {
        let info = c.device_info(d)?;
        let a = |n| i64::from(info.attr(n).unwrap_or(-1));
        if (
            a(attr::PCI_DOMAIN_ID),
            a(attr::PCI_BUS_ID),
            a(attr::PCI_DEVICE_ID),
        ) == want
        {
            return Ok(d);
        }
    }
    Err(Error::INVALID_DEVICE)
}

#[cfg(test)]
mod tests {
    use super::parse_bus_id;

    #[test]
    fn available_dynamic_shared_memory_matches_an_h100() {
        use zerocopy::FromZeros;
        let mut info = vcuda_protocol::DeviceInfo::new_zeroed();
        info.attrs[vcuda_protocol::attr::MAX_SHARED_MEMORY_PER_MULTIPROCESSOR as usize] = 233472;
        let mut a = vcuda_protocol::FuncAttrs::new_zeroed();
        a.shared_size_bytes = 1024;
        a.max_dynamic_shared_size_bytes = 48128;
        // NVIDIA's answers (CUDA 13.0, H100), 1 KiB of static shared memory.
        let avail =
            |a: &vcuda_protocol::FuncAttrs, blocks| super::available_dynamic_smem(&info, a, blocks);
        assert_eq!(avail(&a, 1), 48128);
        assert_eq!(avail(&a, 2), 48128);
        assert_eq!(avail(&a, 8), 28160);
        a.max_dynamic_shared_size_bytes = 100000;
        assert_eq!(avail(&a, 2), 100000);
        assert_eq!(avail(&a, 4), 57344);
        a.max_dynamic_shared_size_bytes = 2000;
        assert_eq!(avail(&a, 2), 2000);
        a.shared_size_bytes = 0;
        a.max_dynamic_shared_size_bytes = 49152;
        assert_eq!(avail(&a, 2), 49152);
    }

    #[test]
    fn bus_ids_parse_as_cuda_writes_them() {
        assert_eq!(parse_bus_id("0000:65:00.0"), Some((0, 0x65, 0)));
        assert_eq!(parse_bus_id("65:1f"), Some((0, 0x65, 0x1f)));
        assert_eq!(parse_bus_id("zz:00.0"), None);
        assert_eq!(parse_bus_id("1:2:3:4"), None);
    }
}
