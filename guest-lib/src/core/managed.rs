// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Managed memory: `cudaMallocManaged`, prefetching, advice and stream attachment.
//!
//! Managed memory is page-locked memory shared with the backend and exposed to kernels at
//! its own address (see [`crate::shared`]): one copy of the data, which the program and its
//! kernels both use in place. Nothing migrates, so prefetching and advice only check their
//! arguments. The device reports `cudaDevAttrConcurrentManagedAccess` = 0: as on GPUs
//! without it, the program must not touch managed memory while kernels that use it run
//! (it synchronizes first). Where the session cannot map memory for kernels (TCP, a VM,
//! `VCUDA_SHARED_MEMORY=0`), `cudaMallocManaged` fails with `cudaErrorNotSupported` and
//! `cudaDevAttrManagedMemory` is 0.

use crate::client::{self, Client};
use crate::core::alloc::ATTACH_GLOBAL;
use crate::core::alloc::ATTACH_HOST;
use crate::core::alloc::ATTACH_SINGLE;
use crate::core::capture::stream_handle;
use crate::error::{Error, Result};
use crate::ffi::cudaStream_t;
use crate::mirror::Kind;
use crate::{shared, state};
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;
use vcuda_protocol::{DeviceReq, ops};

/// `cudaCpuDeviceId`.
pub(crate) const CPU_DEVICE_ID: c_int = -1;

/// `struct cudaMemLocation` (CUDA 12.2 and later).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cudaMemLocation {
    pub(crate) type_: c_int,
    pub(crate) id: c_int,
}

/// `cudaMemLocationType`.
pub(crate) mod location {
    use std::ffi::c_int;
    pub const DEVICE: c_int = 1;
    pub const HOST: c_int = 2;
    pub const HOST_NUMA: c_int = 3;
    pub const HOST_NUMA_CURRENT: c_int = 4;
}

/// `cudaMemoryAdvise`.
pub(crate) const ADVISE_SET_READ_MOSTLY: c_int = 1;
pub(crate) const ADVISE_UNSET_READ_MOSTLY: c_int = 2;
pub(crate) const ADVISE_SET_PREFERRED_LOCATION: c_int = 3;
pub(crate) const ADVISE_UNSET_PREFERRED_LOCATION: c_int = 4;
pub(crate) const ADVISE_SET_ACCESSED_BY: c_int = 5;
pub(crate) const ADVISE_UNSET_ACCESSED_BY: c_int = 6;

/// `cudaFree` of managed memory at `ptr`: waits for the device (as `cudaFree` does), then
/// unmaps it here and in the backend. `Ok(false)` when `ptr` is not the start of managed
/// memory.
pub(crate) fn free(c: &Client, ptr: u64) -> Result<bool> {
    if !matches!(c.mirror.find(ptr), Some(r) if r.base == ptr && r.kind == Kind::Managed) {
        return Ok(false);
    }
    if crate::coherent::is_adopted(ptr) {
        // A `__managed__` variable: the module's, not the program's to free.
        return Err(Error::INVALID_VALUE);
    }
    let device = c.check_device(state::device())?;
    c.call::<ops::DeviceSynchronize>(&DeviceReq {
        device,
        reserved: 0,
    })?;
    if let Some(r) = c.mirror.remove(ptr, |k| k == Kind::Managed) {
        forget_advice(r.base, r.base + r.len);
    }
    if !shared::free(c, ptr as *mut c_void) {
        crate::coherent::free(c, ptr)?;
    }
    Ok(true)
}

/// Checks that `[ptr, ptr + count)` lies in one managed allocation.
pub(crate) fn check_managed(c: &Client, ptr: *const c_void, count: usize) -> Result<()> {
    let p = ptr as u64;
    match c.mirror.find(p) {
        Some(r)
            if r.kind == Kind::Managed
                && count > 0
                && p.checked_add(count as u64)
                    .is_some_and(|end| end <= r.base + r.len) =>
        {
            Ok(())
        }
        _ => Err(Error::INVALID_VALUE),
    }
}

/// A location advice or a prefetch names: `(cudaMemLocationType, id)`.
pub(crate) type Loc = (c_int, c_int);

/// Checks a device ordinal, or `cudaCpuDeviceId` where `cpu_ok`: the location.
pub(crate) fn check_device_id(c: &Client, device: c_int, cpu_ok: bool) -> Result<Loc> {
    if cpu_ok && device == CPU_DEVICE_ID {
        return Ok((location::HOST, 0));
    }
    c.check_device(device)
        .map(|_| (location::DEVICE, device))
        .map_err(|_| Error::INVALID_DEVICE)
}

/// Checks a `cudaMemLocation`. The current NUMA node is node 0 (the one the queries report).
pub(crate) fn check_location(c: &Client, l: cudaMemLocation) -> Result<Loc> {
    match l.type_ {
        location::DEVICE => check_device_id(c, l.id, false),
        location::HOST => Ok((l.type_, 0)),
        location::HOST_NUMA_CURRENT => Ok((location::HOST_NUMA, 0)),
        location::HOST_NUMA if l.id >= 0 => Ok((l.type_, l.id)),
        _ => Err(Error::INVALID_VALUE),
    }
}

/// A location `cudaMemAdviseSetAccessedBy` takes: a device or the host, not a NUMA node.
pub(crate) fn accessor(l: Loc) -> Result<Loc> {
    match l.0 {
        location::DEVICE | location::HOST => Ok(l),
        _ => Err(Error::INVALID_VALUE),
    }
}

/// `cudaDeviceReset`: managed memory is gone, and what was said about it.
pub(crate) fn on_reset() {
    *ADVICE.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// Values over byte ranges, each byte with at most one.
#[derive(Default)]
pub(crate) struct RangeMap<V> {
    /// Start -> (end, value); no two overlap.
    pub(crate) segs: BTreeMap<u64, (u64, V)>,
}

impl<V: Clone + PartialEq> RangeMap<V> {
    /// The start of the first segment that may reach `lo` (segments do not overlap, so only
    /// the one starting at or before `lo` can).
    pub(crate) fn first_from(&self, lo: u64) -> u64 {
        self.segs.range(..=lo).next_back().map_or(lo, |(&s, _)| s)
    }

    /// Gives `[lo, hi)` the value `v` (`None`: none); equal neighbours merge.
    pub(crate) fn set(&mut self, lo: u64, hi: u64, v: Option<V>) {
        if lo >= hi {
            return;
        }
        let hit: Vec<u64> = self
            .segs
            .range(self.first_from(lo)..hi)
            .filter(|(_, (e, _))| *e > lo)
            .map(|(&s, _)| s)
            .collect();
        for start in hit {
            if let Some((end, val)) = self.segs.remove(&start) {
                if start < lo {
                    self.segs.insert(start, (lo, val.clone()));
                }
                if end > hi {
                    self.segs.insert(hi, (end, val));
                }
            }
        }
        if let Some(v) = v {
            let (mut start, mut end) = (lo, hi);
            // Merge with a left neighbour ending at `lo` and a right one starting at `hi`.
            if let Some((&s, (e, pv))) = self.segs.range(..lo).next_back()
                && *e == lo
                && *pv == v
            {
                start = s;
                self.segs.remove(&s);
            }
            if let Some((ne, nv)) = self.segs.get(&hi)
                && *nv == v
            {
                end = *ne;
                self.segs.remove(&hi);
            }
            self.segs.insert(start, (end, v));
        }
    }

    /// The value every byte of `[lo, hi)` has, if they all have the same one.
    pub(crate) fn uniform(&self, lo: u64, hi: u64) -> Option<V> {
        let (mut at, mut val) = (lo, None::<V>);
        for (&start, (end, v)) in self.segs.range(self.first_from(lo)..hi) {
            if *end <= at {
                continue;
            }
            if start > at {
                return None;
            }
            match &val {
                Some(x) if x != v => return None,
                Some(_) => {}
                None => val = Some(v.clone()),
            }
            at = *end;
            if at >= hi {
                break;
            }
        }
        if at >= hi { val } else { None }
    }
}

/// What `cudaMemAdvise` and `cudaMemPrefetchAsync` set, by range, for
/// `cudaMemRangeGetAttribute`.
#[derive(Default)]
pub(crate) struct Advice {
    pub(crate) read_mostly: RangeMap<()>,
    pub(crate) preferred: RangeMap<Loc>,
    pub(crate) accessed_by: BTreeMap<Loc, RangeMap<()>>,
    pub(crate) prefetched: RangeMap<Loc>,
}

pub(crate) static ADVICE: Mutex<Option<Advice>> = Mutex::new(None);

pub(crate) fn with_advice<R>(f: impl FnOnce(&mut Advice) -> R) -> R {
    let mut g = ADVICE.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(Advice::default))
}

/// Forgets what was said about a freed allocation.
pub(crate) fn forget_advice(lo: u64, hi: u64) {
    with_advice(|a| {
        a.read_mostly.set(lo, hi, None);
        a.preferred.set(lo, hi, None);
        a.prefetched.set(lo, hi, None);
        for m in a.accessed_by.values_mut() {
            m.set(lo, hi, None);
        }
    });
}

/// `cudaMemRangeAttribute`.
pub(crate) mod range_attr {
    use std::ffi::c_int;
    pub const READ_MOSTLY: c_int = 1;
    pub const PREFERRED_LOCATION: c_int = 2;
    pub const ACCESSED_BY: c_int = 3;
    pub const LAST_PREFETCH_LOCATION: c_int = 4;
    pub const PREFERRED_LOCATION_TYPE: c_int = 5;
    pub const PREFERRED_LOCATION_ID: c_int = 6;
    pub const LAST_PREFETCH_LOCATION_TYPE: c_int = 7;
    pub const LAST_PREFETCH_LOCATION_ID: c_int = 8;
}

/// `cudaInvalidDeviceId`, `cudaMemLocationTypeInvalid`.
pub(crate) const INVALID_DEVICE_ID: c_int = -2;
pub(crate) const LOCATION_INVALID: c_int = 0;

/// A location as the device-ordinal attributes say it: a device, `cudaCpuDeviceId` for the
/// host, `cudaInvalidDeviceId` for none.
pub(crate) fn ordinal(l: Option<Loc>) -> c_int {
    match l {
        Some((location::DEVICE, d)) => d,
        Some(_) => CPU_DEVICE_ID,
        None => INVALID_DEVICE_ID,
    }
}

/// `cudaMemRangeGetAttribute`: the values to store in the program's buffer of `size` bytes
/// (one `int` per 4 bytes for `cudaMemRangeAttributeAccessedBy`, else exactly one), after
/// the range is checked. `data_is_null`: the program gave no buffer.
pub(crate) fn range_attribute(
    data_is_null: bool,
    size: usize,
    attr: c_int,
    ptr: *const c_void,
    count: usize,
) -> Result<Vec<c_int>> {
    let c = client::client()?;
    check_managed(c, ptr, count)?;
    if data_is_null {
        return Err(Error::INVALID_VALUE);
    }
    let (lo, hi) = (ptr as u64, ptr as u64 + count as u64);
    let values: Vec<c_int> = with_advice(|a| match attr {
        range_attr::READ_MOSTLY => Ok(vec![c_int::from(a.read_mostly.uniform(lo, hi).is_some())]),
        range_attr::PREFERRED_LOCATION => Ok(vec![ordinal(a.preferred.uniform(lo, hi))]),
        range_attr::LAST_PREFETCH_LOCATION => Ok(vec![ordinal(a.prefetched.uniform(lo, hi))]),
        range_attr::PREFERRED_LOCATION_TYPE => Ok(vec![
            a.preferred
                .uniform(lo, hi)
                .map_or(LOCATION_INVALID, |l| l.0),
        ]),
        range_attr::PREFERRED_LOCATION_ID => Ok(vec![
            a.preferred
                .uniform(lo, hi)
                .map_or(INVALID_DEVICE_ID, |l| l.1),
        ]),
        range_attr::LAST_PREFETCH_LOCATION_TYPE => Ok(vec![
            a.prefetched
                .uniform(lo, hi)
                .map_or(LOCATION_INVALID, |l| l.0),
        ]),
        range_attr::LAST_PREFETCH_LOCATION_ID => Ok(vec![
            a.prefetched
                .uniform(lo, hi)
                .map_or(INVALID_DEVICE_ID, |l| l.1),
        ]),
        range_attr::ACCESSED_BY => Ok(a
            .accessed_by
            .iter()
            .filter(|(_, m)| m.uniform(lo, hi).is_some())
            .map(|(&l, _)| ordinal(Some(l)))
            .collect()),
        _ => Err(Error::INVALID_VALUE),
    })?;
    let slots = if attr == range_attr::ACCESSED_BY {
        if size == 0 || !size.is_multiple_of(4) {
            return Err(Error::INVALID_VALUE);
        }
        size / 4
    } else {
        if size != 4 {
            return Err(Error::INVALID_VALUE);
        }
        1
    };
    Ok((0..slots)
        .map(|i| values.get(i).copied().unwrap_or(INVALID_DEVICE_ID))
        .collect())
}

/// A prefetch: checked and recorded (`cudaMemRangeGetAttribute`). With shared memory there
/// is one copy and nothing migrates. Where the library keeps managed memory coherent, a
/// prefetch to the host waits for the stream's work and brings the range here; one to the
/// device has nothing to do (the next request sends what the host wrote).
pub(crate) fn prefetch(
    ptr: *const c_void,
    count: usize,
    loc: Result<Loc>,
    flags: u32,
    stream: cudaStream_t,
    ptsz: bool,
) -> Result<()> {
    let c = client::client()?;
    c.check_sticky()?;
    check_managed(c, ptr, count)?;
    let l = loc?;
    if flags != 0 {
        return Err(Error::INVALID_VALUE);
    }
    let handle = stream_handle(c, stream, ptsz)?;
    let lo = ptr as u64;
    with_advice(|a| a.prefetched.set(lo, lo + count as u64, Some(l)));
    if l.0 != location::DEVICE && crate::coherent::overlaps(lo, count as u64) {
        // To the host, where the library keeps managed memory coherent: after the stream's
        // work, the range is brought here now (so system calls can use it, and the
        // program's reads do not fault). The call returns when it is done.
        c.call::<ops::StreamSynchronize>(&vcuda_protocol::HandleReq { handle })?;
        crate::coherent::prepare(c, lo, count as u64, false)?;
    }
    Ok(())
}

/// Advice: checked and kept for `cudaMemRangeGetAttribute`; nothing migrates.
pub(crate) fn advise(
    ptr: *const c_void,
    count: usize,
    advice: c_int,
    loc: Result<Loc>,
) -> Result<()> {
    let c = client::client()?;
    check_managed(c, ptr, count)?;
    let (lo, hi) = (ptr as u64, ptr as u64 + count as u64);
    match advice {
        ADVISE_SET_READ_MOSTLY => with_advice(|a| a.read_mostly.set(lo, hi, Some(()))),
        ADVISE_UNSET_READ_MOSTLY => with_advice(|a| a.read_mostly.set(lo, hi, None)),
        ADVISE_SET_PREFERRED_LOCATION => {
            let l = loc?;
            with_advice(|a| a.preferred.set(lo, hi, Some(l)));
        }
        ADVISE_UNSET_PREFERRED_LOCATION => with_advice(|a| a.preferred.set(lo, hi, None)),
        ADVISE_SET_ACCESSED_BY => {
            let l = accessor(loc?)?;
            with_advice(|a| a.accessed_by.entry(l).or_default().set(lo, hi, Some(())));
        }
        ADVISE_UNSET_ACCESSED_BY => {
            let l = accessor(loc?)?;
            with_advice(|a| a.accessed_by.entry(l).or_default().set(lo, hi, None));
        }
        _ => return Err(Error::INVALID_VALUE),
    }
    Ok(())
}

/// `cudaStreamAttachMemAsync`: checked, then nothing to do (every stream sees the one copy).
pub(crate) fn attach(
    stream: cudaStream_t,
    ptr: *mut c_void,
    length: usize,
    flags: u32,
    ptsz: bool,
) -> Result<()> {
    let c = client::client()?;
    if flags != ATTACH_GLOBAL && flags != ATTACH_HOST && flags != ATTACH_SINGLE {
        return Err(Error::INVALID_VALUE);
    }
    let r = c
        .mirror
        .find(ptr as u64)
        .filter(|r| r.kind == Kind::Managed)
        .ok_or(Error::INVALID_VALUE)?;
    // Length 0: the whole allocation, which `ptr` must start.
    if length == 0 && r.base != ptr as u64 {
        return Err(Error::INVALID_VALUE);
    }
    if length != 0 {
        check_managed(c, ptr, length)?;
    }
    stream_handle(c, stream, ptsz).map(drop)
}

/// `__v12_cudaMemAdvise`.
pub(crate) fn v12_mem_advise(
    ptr: *const c_void,
    count: usize,
    advice: c_int,
    device: c_int,
) -> Result<()> {
    let c = client::client()?;
    advise(ptr, count, advice, check_device_id(c, device, true))
}

/// `__v12_cudaMemPrefetchAsync`.
pub(crate) fn v12_mem_prefetch_async(
    ptr: *const c_void,
    count: usize,
    device: c_int,
    stream: cudaStream_t,
) -> Result<()> {
    let c = client::client()?;
    prefetch(
        ptr,
        count,
        check_device_id(c, device, true),
        0,
        stream,
        false,
    )
}

/// `__v12_cudaMemPrefetchAsync_ptsz`.
pub(crate) fn v12_mem_prefetch_async_ptsz(
    ptr: *const c_void,
    count: usize,
    device: c_int,
    stream: cudaStream_t,
) -> Result<()> {
    let c = client::client()?;
    prefetch(
        ptr,
        count,
        check_device_id(c, device, true),
        0,
        stream,
        true,
    )
}

/// `cudaMemAdvise`.
pub(crate) fn mem_advise(
    ptr: *const c_void,
    count: usize,
    advice: c_int,
    loc: cudaMemLocation,
) -> Result<()> {
    let c = client::client()?;
    advise(ptr, count, advice, check_location(c, loc))
}

/// `cudaMemPrefetchAsync`.
pub(crate) fn mem_prefetch_async(
    ptr: *const c_void,
    count: usize,
    loc: cudaMemLocation,
    flags: u32,
    stream: cudaStream_t,
) -> Result<()> {
    let c = client::client()?;
    prefetch(ptr, count, check_location(c, loc), flags, stream, false)
}

/// `cudaMemPrefetchAsync_ptsz`.
pub(crate) fn mem_prefetch_async_ptsz(
    ptr: *const c_void,
    count: usize,
    loc: cudaMemLocation,
    flags: u32,
    stream: cudaStream_t,
) -> Result<()> {
    let c = client::client()?;
    prefetch(ptr, count, check_location(c, loc), flags, stream, true)
}

#[cfg(test)]
mod tests {
    use super::RangeMap;

    #[test]
    fn range_maps_split_merge_and_answer_for_whole_ranges_only() {
        let mut m: RangeMap<u8> = RangeMap::default();
        m.set(100, 200, Some(1));
        assert_eq!(m.uniform(100, 200), Some(1));
        assert_eq!(m.uniform(120, 130), Some(1));
        assert_eq!(
            m.uniform(90, 150),
            None,
            "bytes before the range have no value"
        );
        m.set(150, 250, Some(2));
        assert_eq!(m.uniform(100, 150), Some(1));
        assert_eq!(m.uniform(150, 250), Some(2));
        assert_eq!(m.uniform(140, 160), None, "two values");
        m.set(120, 130, None);
        assert_eq!(m.uniform(100, 120), Some(1));
        assert_eq!(m.uniform(110, 140), None, "a hole");
        m.set(0, 1000, Some(3));
        assert_eq!(m.uniform(0, 1000), Some(3));
        assert_eq!(m.segs.len(), 1);
        m.set(0, 1000, None);
        assert!(m.segs.is_empty());
    }
}
