// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Stream-ordered memory pools: `cudaMallocAsync`/`cudaFreeAsync`, the device's default and
//! current pool, created pools, their attributes and trimming.
//!
//! Pools are bookkeeping in the library over the session's ordinary allocations. A block
//! freed with `cudaFreeAsync` stays reserved in its pool and is handed out again by a later
//! allocation on the same stream (stream order makes that safe), or on any stream once a
//! synchronization has covered the free (the freeing stream's, or the device's). At each
//! synchronization, free blocks beyond the pool's release threshold (0 by default) go back
//! to the device, as CUDA does; `cudaMemPoolTrimTo` does so at once. A destroyed pool's
//! outstanding blocks are freed when the program frees them.
//!
//! Interprocess pools (`cudaMemHandleTypePosixFileDescriptor`): the exported handle is a
//! file (a memfd) naming the exporting process's pool, and an exported pointer carries the
//! block's interprocess memory handle (see `super::ipc`), so the processes must reach the
//! same backend, as for `cudaIpcOpenMemHandle`. An imported pool only imports pointers;
//! `cudaFree` or `cudaFreeAsync` of an imported pointer closes it.

use crate::client::{self};
use crate::core::pool::*;
use crate::error::Error;
use crate::ffi::{cudaStream_t, write_out};
use std::ffi::{c_int, c_uint, c_void};

entry! {
    fn cudaMallocAsync(dev_ptr: *mut *mut c_void, size: usize, stream: cudaStream_t) {
        if dev_ptr.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        if let Some(ptr) = capture_alloc(size, stream)? {
            // SAFETY: the caller's output pointer, checked for null.
            return unsafe { write_out(dev_ptr, ptr as *mut c_void) };
        }
        let pool = with(|p| p.current);
        let ptr = alloc(pool, size, stream)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(dev_ptr, ptr as *mut c_void) }
    }

    fn cudaMallocFromPoolAsync(dev_ptr: *mut *mut c_void, size: usize, pool: cudaMemPool_t, stream: cudaStream_t) {
        let pool = pool_of(pool)?;
        if dev_ptr.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        if let Some(ptr) = capture_alloc(size, stream)? {
            // SAFETY: the caller's output pointer, checked for null.
            return unsafe { write_out(dev_ptr, ptr as *mut c_void) };
        }
        let ptr = alloc(pool, size, stream)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(dev_ptr, ptr as *mut c_void) }
    }

    fn cudaFreeAsync(dev_ptr: *mut c_void, stream: cudaStream_t) {
        let c = client::client()?;
        c.check_sticky()?;
        let s = crate::core::stream::capture_stream_handle(c, stream, false)?;
        let ptr = dev_ptr as u64;
        if ptr == 0 {
            return Ok(());
        }
        if is_import(ptr) {
            // Closed once the stream's earlier work has run: the backend runs calls in order.
            return close_import(ptr);
        }
        if crate::core::graph_mem::owns(ptr) {
            // Graph memory: on a capturing stream a free node; elsewhere freed for the
            // program, while the graphs holding it keep it (see `graph_mem`).
            if !crate::core::capture::add(s, || Ok(crate::core::graph::Kind::MemFree(ptr)))? {
                crate::core::graph_mem::mark(ptr, false);
            }
            return Ok(());
        }
        // Other memory freed inside a capture would be freed by every launch: not
        // supported (the capture is invalidated).
        crate::core::capture::check_uncaptured(c, s)?;
        let pooled = with(|pools| {
            for p in pools.map.values_mut() {
                if let Some(size) = p.live.remove(&ptr) {
                    p.used -= size;
                    if p.destroyed {
                        p.reserved -= size;
                        return Some(false);
                    }
                    p.free.push(Block { ptr, size, stream: s, settled: false });
                    return Some(true);
                }
            }
            None
        });
        match pooled {
            Some(true) => Ok(()),
            // Not from a live pool (cudaMalloc'd, or its pool was destroyed): freed once
            // the stream's earlier work has run, the backend running calls in order.
            _ => crate::core::memory::free_device_posted(c, ptr),
        }
    }

    fn cudaDeviceGetDefaultMemPool(pool: *mut cudaMemPool_t, device: c_int) {
        device_zero(client::client()?, device)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(pool, with(|p| p.default) as cudaMemPool_t) }
    }

    fn cudaDeviceGetMemPool(pool: *mut cudaMemPool_t, device: c_int) {
        device_zero(client::client()?, device)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(pool, with(|p| p.current) as cudaMemPool_t) }
    }

    fn cudaDeviceSetMemPool(device: c_int, pool: cudaMemPool_t) {
        device_zero(client::client()?, device)?;
        let h = pool_of(pool)?;
        with(|p| p.current = h);
        Ok(())
    }

    fn cudaMemGetDefaultMemPool(pool: *mut cudaMemPool_t, location: *mut cudaMemLocation, ty: c_int) {
        let c = client::client()?;
        // SAFETY: the caller's location, checked for null.
        let l = unsafe { location.as_ref() }.ok_or(Error::INVALID_VALUE)?;
        check_location(c, l)?;
        if ty != ALLOCATION_PINNED {
            return Err(Error::NOT_SUPPORTED);
        }
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(pool, with(|p| p.default) as cudaMemPool_t) }
    }

    fn cudaMemGetMemPool(pool: *mut cudaMemPool_t, location: *mut cudaMemLocation, ty: c_int) {
        let c = client::client()?;
        // SAFETY: the caller's location, checked for null.
        let l = unsafe { location.as_ref() }.ok_or(Error::INVALID_VALUE)?;
        check_location(c, l)?;
        if ty != ALLOCATION_PINNED {
            return Err(Error::NOT_SUPPORTED);
        }
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(pool, with(|p| p.current) as cudaMemPool_t) }
    }

    fn cudaMemSetMemPool(location: *mut cudaMemLocation, ty: c_int, pool: cudaMemPool_t) {
        let c = client::client()?;
        // SAFETY: the caller's location, checked for null.
        let l = unsafe { location.as_ref() }.ok_or(Error::INVALID_VALUE)?;
        check_location(c, l)?;
        if ty != ALLOCATION_PINNED {
            return Err(Error::NOT_SUPPORTED);
        }
        let h = pool_of(pool)?;
        with(|p| p.current = h);
        Ok(())
    }

    fn cudaMemPoolCreate(pool: *mut cudaMemPool_t, props: *const cudaMemPoolProps) {
        let c = client::client()?;
        // SAFETY: the caller's properties, checked for null.
        let pr = unsafe { props.as_ref() }.ok_or(Error::INVALID_VALUE)?;
        if pool.is_null() || pr.alloc_type != ALLOCATION_PINNED || !pr.win32_security_attributes.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        // (NVIDIA's runtime says invalid value, not invalid device, for a device it lacks:
        // measured on an H100.)
        check_location(c, &pr.location).map_err(|_| Error::INVALID_VALUE)?;
        let exportable = match pr.handle_types {
            0 => false,
            HANDLE_POSIX_FD => true,
            // Windows and fabric handles are not available.
            _ => return Err(Error::NOT_SUPPORTED),
        };
        let h = new_handle();
        let mut new = Pool::new(pr.max_size as u64);
        new.exportable = exportable;
        with(|p| p.map.insert(h, new));
        // SAFETY: the caller's output pointer (checked non-null above).
        unsafe { write_out(pool, h as cudaMemPool_t) }
    }

    fn cudaMemPoolDestroy(pool: cudaMemPool_t) {
        let c = client::client()?;
        let h = pool_of(pool)?;
        let (blocks, empty) = with(|pools| {
            if h == pools.default {
                return Err(Error::INVALID_VALUE);
            }
            if pools.current == h {
                pools.current = pools.default;
            }
            let p = pools.map.get_mut(&h).ok_or(Error::INVALID_VALUE)?;
            p.destroyed = true;
            Ok((std::mem::take(&mut p.free), p.live.is_empty()))
        })?;
        // Free blocks go back now; outstanding ones when the program frees them.
        for b in &blocks {
            crate::core::memory::free_device(c, b.ptr)?;
        }
        with(|pools| {
            if let Some(p) = pools.map.get_mut(&h) {
                p.reserved -= blocks.iter().map(|b| b.size).sum::<u64>();
            }
            if empty {
                pools.map.remove(&h);
            }
        });
        Ok(())
    }

    fn cudaMemPoolTrimTo(pool: cudaMemPool_t, min_keep: usize) {
        let c = client::client()?;
        let h = pool_of(pool)?;
        let blocks = with(|pools| {
            let p = pools.map.get_mut(&h)?;
            let mut out = Vec::new();
            // Largest first: fewest frees to get under the mark.
            p.free.sort_by_key(|b| std::cmp::Reverse(b.size));
            while p.reserved > min_keep as u64 && !p.free.is_empty() {
                let b = p.free.remove(0);
                p.reserved -= b.size;
                out.push(b);
            }
            Some(out)
        })
        .ok_or(Error::INVALID_VALUE)?;
        for b in blocks {
            crate::core::memory::free_device(c, b.ptr)?;
        }
        Ok(())
    }

    fn cudaMemPoolSetAttribute(pool: cudaMemPool_t, attr: c_int, value: *mut c_void) {
        let h = pool_of(pool)?;
        if value.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        with(|pools| {
            let p = pools.map.get_mut(&h).ok_or(Error::INVALID_VALUE)?;
            // SAFETY: `value` points to the attribute's type (int or cuuint64_t), the API's
            // contract; checked non-null above.
            unsafe {
                match attr {
                    REUSE_FOLLOW_EVENT_DEPENDENCIES..=REUSE_ALLOW_INTERNAL_DEPENDENCIES => {
                        p.reuse[(attr - 1) as usize] = *value.cast::<c_int>();
                    }
                    RELEASE_THRESHOLD => p.threshold = *value.cast::<u64>(),
                    // Only resetting the high-water marks (to the current value) is allowed.
                    RESERVED_MEM_HIGH if *value.cast::<u64>() == 0 => p.reserved_high = p.reserved,
                    USED_MEM_HIGH if *value.cast::<u64>() == 0 => p.used_high = p.used,
                    _ => return Err(Error::INVALID_VALUE),
                }
            }
            Ok(())
        })
    }

    fn cudaMemPoolGetAttribute(pool: cudaMemPool_t, attr: c_int, value: *mut c_void) {
        let h = pool_of(pool)?;
        if value.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        with(|pools| {
            let p = pools.map.get(&h).ok_or(Error::INVALID_VALUE)?;
            // SAFETY: as for cudaMemPoolSetAttribute.
            unsafe {
                match attr {
                    REUSE_FOLLOW_EVENT_DEPENDENCIES..=REUSE_ALLOW_INTERNAL_DEPENDENCIES => {
                        *value.cast::<c_int>() = p.reuse[(attr - 1) as usize];
                    }
                    RELEASE_THRESHOLD => *value.cast::<u64>() = p.threshold,
                    RESERVED_MEM_CURRENT => *value.cast::<u64>() = p.reserved,
                    RESERVED_MEM_HIGH => *value.cast::<u64>() = p.reserved_high,
                    USED_MEM_CURRENT => *value.cast::<u64>() = p.used,
                    USED_MEM_HIGH => *value.cast::<u64>() = p.used_high,
                    _ => return Err(Error::INVALID_VALUE),
                }
            }
            Ok(())
        })
    }

    fn cudaMemPoolSetAccess(pool: cudaMemPool_t, descs: *const cudaMemAccessDesc, count: usize) {
        let c = client::client()?;
        pool_of(pool)?;
        if count > 0 && descs.is_null() {
            return Err(Error::INVALID_VALUE);
        }
        // One device: its own pools are always read-write for it.
        for i in 0..count {
            // SAFETY: `count` descriptors at `descs` (the API's contract).
            let d = unsafe { &*descs.add(i) };
            check_location(c, &d.location)?;
            if d.flags != ACCESS_READ_WRITE {
                return Err(Error::INVALID_VALUE);
            }
        }
        Ok(())
    }

    fn cudaMemPoolGetAccess(flags: *mut c_int, pool: cudaMemPool_t, location: *mut cudaMemLocation) {
        let c = client::client()?;
        pool_of(pool)?;
        // SAFETY: the caller's location, checked for null.
        let l = unsafe { location.as_ref() }.ok_or(Error::INVALID_VALUE)?;
        check_location(c, l)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(flags, ACCESS_READ_WRITE) }
    }
}

entry! {
    fn cudaMemPoolExportToShareableHandle(handle: *mut c_void, pool: cudaMemPool_t, ty: c_int, flags: c_uint) {
        client::client()?.check_sticky()?;
        let h = pool_of(pool)?;
        let exportable = with(|p| p.map.get(&h).is_some_and(|p| p.exportable && !p.imported));
        if handle.is_null() || flags != 0 || ty != HANDLE_POSIX_FD || !exportable {
            return Err(Error::INVALID_VALUE);
        }
        let fd = export_file(h)?;
        // SAFETY: for a POSIX descriptor the caller's handle points at an int (checked for null).
        unsafe { write_out(handle as *mut c_int, fd) }
    }

    fn cudaMemPoolImportFromShareableHandle(pool: *mut cudaMemPool_t, handle: *mut c_void, ty: c_int, flags: c_uint) {
        let c = client::client()?;
        c.check_sticky()?;
        device_zero(c, 0)?;
        // A POSIX descriptor comes as the handle's value.
        let fd = handle as usize as c_int;
        if pool.is_null() || flags != 0 || ty != HANDLE_POSIX_FD {
            return Err(Error::INVALID_VALUE);
        }
        // A descriptor that names no exported pool: NVIDIA's runtime answers
        // cudaErrorUnknown (a pipe's, measured on an H100).
        if !is_export_file(fd) {
            return Err(Error::UNKNOWN);
        }
        let h = new_handle();
        let mut new = Pool::new(0);
        new.imported = true;
        with(|p| p.map.insert(h, new));
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(pool, h as cudaMemPool_t) }
    }

    fn cudaMemPoolExportPointer(data: *mut cudaMemPoolPtrExportData, ptr: *mut c_void) {
        client::client()?.check_sticky()?;
        let ptr = ptr as u64;
        let ours = with(|pools| {
            pools.map.values().any(|p| p.exportable && !p.imported && p.live.contains_key(&ptr))
        });
        if data.is_null() || !ours {
            return Err(Error::INVALID_VALUE);
        }
        let reserved = crate::core::ipc::get_mem_handle(ptr)?;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(data, cudaMemPoolPtrExportData { reserved }) }
    }

    fn cudaMemPoolImportPointer(ptr: *mut *mut c_void, pool: cudaMemPool_t, data: *mut cudaMemPoolPtrExportData) {
        client::client()?.check_sticky()?;
        let h = pool_of(pool)?;
        let imported = with(|p| p.map.get(&h).is_some_and(|p| p.imported));
        // SAFETY: the caller's export data, checked for null.
        let d = unsafe { data.as_ref() };
        let (Some(d), false, true) = (d, ptr.is_null(), imported) else {
            return Err(Error::INVALID_VALUE);
        };
        let mut m = imports();
        let p = crate::core::ipc::open_mem_handle(&d.reserved, crate::core::ipc::LAZY_ENABLE_PEER_ACCESS)?;
        *m.entry(p).or_default() += 1;
        // SAFETY: the caller's output pointer, checked for null.
        unsafe { write_out(ptr, p as *mut c_void) }
    }
}
