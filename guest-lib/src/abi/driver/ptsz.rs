// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The per-thread default stream variants of the driver API (`*_ptsz`, `*_ptds`): what
//! `nvcc --default-stream per-thread` programs call, and what `cuGetProcAddress` returns with
//! `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM` (cuda-python asks for them). An
//! asynchronous `_ptsz` call given stream 0 runs on the calling thread's default stream
//! (`CU_STREAM_PER_THREAD`); any other stream is used as given. A synchronous `_ptds` copy or
//! memset behaves as the legacy one, which synchronizes at least as much as the per-thread
//! form (the runtime's `_ptds` calls do the same).

use crate::core::ptsz::per_thread;
use std::ffi::{c_uint, c_void};

use super::exec::CUlaunchConfig;
use super::extra::HostFn;
use super::memory::{CUDA_MEMCPY2D, CUdeviceptr};
use super::texture::CUDA_MEMCPY3D;
use crate::core::array::cudaArray_t;
use crate::core::function::Function;
use crate::core::graph::cudaGraphExec_t;
use crate::core::misc::StreamCallback;
use crate::core::pool::cudaMemPool_t;
use crate::error::CuError;
use crate::ffi::{cudaEvent_t, cudaStream_t};

/// A base entry point's result.
fn done(r: u32) -> Result<(), CuError> {
    if r == 0 { Ok(()) } else { Err(CuError(r)) }
}

entry_lib! {
    fn cuStreamSynchronize_ptsz(s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuStreamSynchronize entry point.
        done(unsafe { super::stream::cuStreamSynchronize(s) })
    }

    fn cuStreamQuery_ptsz(s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuStreamQuery entry point.
        done(unsafe { super::stream::cuStreamQuery(s) })
    }

    fn cuStreamWaitEvent_ptsz(s: cudaStream_t, e: cudaEvent_t, flags: c_uint) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuStreamWaitEvent entry point.
        done(unsafe { super::stream::cuStreamWaitEvent(s, e, flags) })
    }

    fn cuEventRecord_ptsz(e: cudaEvent_t, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuEventRecord entry point.
        done(unsafe { super::stream::cuEventRecord(e, s) })
    }

    fn cuEventRecordWithFlags_ptsz(e: cudaEvent_t, s: cudaStream_t, flags: c_uint) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuEventRecordWithFlags entry point.
        done(unsafe { super::stream::cuEventRecordWithFlags(e, s, flags) })
    }

    fn cuLaunchKernel_ptsz(f: *const Function, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: c_uint, s: cudaStream_t, args: *mut *mut c_void, extra: *mut *mut c_void) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuLaunchKernel entry point.
        done(unsafe { super::exec::cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, args, extra) })
    }

    fn cuLaunchHostFunc_ptsz(s: cudaStream_t, f: HostFn, data: *mut c_void) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuLaunchHostFunc entry point.
        done(unsafe { super::extra::cuLaunchHostFunc(s, f, data) })
    }

    fn cuMemcpyHtoDAsync_v2_ptsz(dst: CUdeviceptr, src: *const c_void, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemcpyHtoDAsync_v2 entry point.
        done(unsafe { super::memory::cuMemcpyHtoDAsync_v2(dst, src, n, s) })
    }

    fn cuMemcpyDtoHAsync_v2_ptsz(dst: *mut c_void, src: CUdeviceptr, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemcpyDtoHAsync_v2 entry point.
        done(unsafe { super::memory::cuMemcpyDtoHAsync_v2(dst, src, n, s) })
    }

    fn cuMemcpyDtoDAsync_v2_ptsz(dst: CUdeviceptr, src: CUdeviceptr, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemcpyDtoDAsync_v2 entry point.
        done(unsafe { super::memory::cuMemcpyDtoDAsync_v2(dst, src, n, s) })
    }

    fn cuMemcpy2DAsync_v2_ptsz(p: *const CUDA_MEMCPY2D, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemcpy2DAsync_v2 entry point.
        done(unsafe { super::memory::cuMemcpy2DAsync_v2(p, s) })
    }

    fn cuMemsetD8Async_ptsz(dst: CUdeviceptr, v: u8, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemsetD8Async entry point.
        done(unsafe { super::memory::cuMemsetD8Async(dst, v, n, s) })
    }

    fn cuMemsetD16Async_ptsz(dst: CUdeviceptr, v: u16, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemsetD16Async entry point.
        done(unsafe { super::memory::cuMemsetD16Async(dst, v, n, s) })
    }

    fn cuMemsetD32Async_ptsz(dst: CUdeviceptr, v: u32, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemsetD32Async entry point.
        done(unsafe { super::memory::cuMemsetD32Async(dst, v, n, s) })
    }

    fn cuMemsetD2D8Async_ptsz(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h: usize, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemsetD2D8Async entry point.
        done(unsafe { super::memory::cuMemsetD2D8Async(dst, pitch, v, w, h, s) })
    }

    fn cuMemsetD2D16Async_ptsz(dst: CUdeviceptr, pitch: usize, v: u16, w: usize, h: usize, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemsetD2D16Async entry point.
        done(unsafe { super::memory::cuMemsetD2D16Async(dst, pitch, v, w, h, s) })
    }

    fn cuMemsetD2D32Async_ptsz(dst: CUdeviceptr, pitch: usize, v: u32, w: usize, h: usize, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemsetD2D32Async entry point.
        done(unsafe { super::memory::cuMemsetD2D32Async(dst, pitch, v, w, h, s) })
    }

    fn cuMemcpyHtoD_v2_ptds(dst: CUdeviceptr, src: *const c_void, n: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemcpyHtoD_v2 entry point.
        done(unsafe { super::memory::cuMemcpyHtoD_v2(dst, src, n) })
    }

    fn cuMemcpyDtoH_v2_ptds(dst: *mut c_void, src: CUdeviceptr, n: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemcpyDtoH_v2 entry point.
        done(unsafe { super::memory::cuMemcpyDtoH_v2(dst, src, n) })
    }

    fn cuMemcpyDtoD_v2_ptds(dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemcpyDtoD_v2 entry point.
        done(unsafe { super::memory::cuMemcpyDtoD_v2(dst, src, n) })
    }

    fn cuMemcpy2D_v2_ptds(p: *const CUDA_MEMCPY2D) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemcpy2D_v2 entry point.
        done(unsafe { super::memory::cuMemcpy2D_v2(p) })
    }

    fn cuMemsetD8_v2_ptds(dst: CUdeviceptr, v: u8, n: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemsetD8_v2 entry point.
        done(unsafe { super::memory::cuMemsetD8_v2(dst, v, n) })
    }

    fn cuMemsetD16_v2_ptds(dst: CUdeviceptr, v: u16, n: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemsetD16_v2 entry point.
        done(unsafe { super::memory::cuMemsetD16_v2(dst, v, n) })
    }

    fn cuMemsetD32_v2_ptds(dst: CUdeviceptr, v: u32, n: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemsetD32_v2 entry point.
        done(unsafe { super::memory::cuMemsetD32_v2(dst, v, n) })
    }

    fn cuMemsetD2D8_v2_ptds(dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemsetD2D8_v2 entry point.
        done(unsafe { super::memory::cuMemsetD2D8_v2(dst, pitch, v, w, h) })
    }

    fn cuMemsetD2D16_v2_ptds(dst: CUdeviceptr, pitch: usize, v: u16, w: usize, h: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemsetD2D16_v2 entry point.
        done(unsafe { super::memory::cuMemsetD2D16_v2(dst, pitch, v, w, h) })
    }

    fn cuMemsetD2D32_v2_ptds(dst: CUdeviceptr, pitch: usize, v: u32, w: usize, h: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemsetD2D32_v2 entry point.
        done(unsafe { super::memory::cuMemsetD2D32_v2(dst, pitch, v, w, h) })
    }

    fn cuLaunchCooperativeKernel_ptsz(f: *const Function, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: c_uint, s: cudaStream_t, args: *mut *mut c_void) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuLaunchCooperativeKernel entry point.
        done(unsafe { super::exec::cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shmem, s, args) })
    }

    fn cuLaunchKernelEx_ptsz(config: *const CUlaunchConfig, f: *const Function, args: *mut *mut c_void, extra: *mut *mut c_void) -> Result<(), CuError> {
        // SAFETY: the caller's launch configuration, checked for null.
        let mut cfg = *unsafe { config.as_ref() }.ok_or(CuError::INVALID_VALUE)?;
        cfg.stream = per_thread(cfg.stream);
        // SAFETY: forwarding the caller's arguments with a configuration that lives here.
        done(unsafe { super::exec::cuLaunchKernelEx(&cfg, f, args, extra) })
    }
}

// The rest of the per-thread variants whose legacy forms vcuda implements.
entry_lib! {
    fn cuGraphLaunch_ptsz(exec: cudaGraphExec_t, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuGraphLaunch entry point.
        done(unsafe { super::graph::cuGraphLaunch(exec, s) })
    }

    fn cuGraphUpload_ptsz(exec: cudaGraphExec_t, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuGraphUpload entry point.
        done(unsafe { super::graph::cuGraphUpload(exec, s) })
    }

    fn cuMemAllocAsync_ptsz(dptr: *mut CUdeviceptr, size: usize, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemAllocAsync entry point.
        done(unsafe { super::graph::cuMemAllocAsync(dptr, size, s) })
    }

    fn cuMemAllocFromPoolAsync_ptsz(dptr: *mut CUdeviceptr, size: usize, pool: cudaMemPool_t, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemAllocFromPoolAsync entry point.
        done(unsafe { super::graph::cuMemAllocFromPoolAsync(dptr, size, pool, s) })
    }

    fn cuMemFreeAsync_ptsz(dptr: CUdeviceptr, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemFreeAsync entry point.
        done(unsafe { super::graph::cuMemFreeAsync(dptr, s) })
    }

    fn cuMemcpy2DUnaligned_v2_ptds(p: *const CUDA_MEMCPY2D) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemcpy2DUnaligned_v2 entry point.
        done(unsafe { super::memory::cuMemcpy2DUnaligned_v2(p) })
    }

    fn cuMemcpy3DAsync_v2_ptsz(p: *const CUDA_MEMCPY3D, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemcpy3DAsync_v2 entry point.
        done(unsafe { super::texture::cuMemcpy3DAsync_v2(p, s) })
    }

    fn cuMemcpy3DPeerAsync_ptsz(p: *const CUDA_MEMCPY3D, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemcpy3DPeerAsync entry point.
        done(unsafe { super::texture::cuMemcpy3DPeerAsync(p, s) })
    }

    fn cuMemcpy3DPeer_ptds(p: *const CUDA_MEMCPY3D) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemcpy3DPeer entry point.
        done(unsafe { super::texture::cuMemcpy3DPeer(p) })
    }

    fn cuMemcpy3D_v2_ptds(p: *const CUDA_MEMCPY3D) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemcpy3D_v2 entry point.
        done(unsafe { super::texture::cuMemcpy3D_v2(p) })
    }

    fn cuMemcpyAsync_ptsz(dst: CUdeviceptr, src: CUdeviceptr, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemcpyAsync entry point.
        done(unsafe { super::memory::cuMemcpyAsync(dst, src, n, s) })
    }

    fn cuMemcpyAtoA_v2_ptds(dst: cudaArray_t, dst_offset: usize, src: cudaArray_t, src_offset: usize, n: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemcpyAtoA_v2 entry point.
        done(unsafe { super::texture::cuMemcpyAtoA_v2(dst, dst_offset, src, src_offset, n) })
    }

    fn cuMemcpyAtoD_v2_ptds(dst: CUdeviceptr, a: cudaArray_t, offset: usize, n: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemcpyAtoD_v2 entry point.
        done(unsafe { super::texture::cuMemcpyAtoD_v2(dst, a, offset, n) })
    }

    fn cuMemcpyAtoHAsync_v2_ptsz(dst: *mut c_void, a: cudaArray_t, offset: usize, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemcpyAtoHAsync_v2 entry point.
        done(unsafe { super::texture::cuMemcpyAtoHAsync_v2(dst, a, offset, n, s) })
    }

    fn cuMemcpyAtoH_v2_ptds(dst: *mut c_void, a: cudaArray_t, offset: usize, n: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemcpyAtoH_v2 entry point.
        done(unsafe { super::texture::cuMemcpyAtoH_v2(dst, a, offset, n) })
    }

    fn cuMemcpyDtoA_v2_ptds(a: cudaArray_t, offset: usize, src: CUdeviceptr, n: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemcpyDtoA_v2 entry point.
        done(unsafe { super::texture::cuMemcpyDtoA_v2(a, offset, src, n) })
    }

    fn cuMemcpyHtoAAsync_v2_ptsz(a: cudaArray_t, offset: usize, src: *const c_void, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemcpyHtoAAsync_v2 entry point.
        done(unsafe { super::texture::cuMemcpyHtoAAsync_v2(a, offset, src, n, s) })
    }

    fn cuMemcpyHtoA_v2_ptds(a: cudaArray_t, offset: usize, src: *const c_void, n: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemcpyHtoA_v2 entry point.
        done(unsafe { super::texture::cuMemcpyHtoA_v2(a, offset, src, n) })
    }

    fn cuMemcpyPeerAsync_ptsz(dst: CUdeviceptr, dst_ctx: *mut c_void, src: CUdeviceptr, src_ctx: *mut c_void, n: usize, s: cudaStream_t) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuMemcpyPeerAsync entry point.
        done(unsafe { super::extra::cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, n, s) })
    }

    fn cuMemcpyPeer_ptds(dst: CUdeviceptr, dst_ctx: *mut c_void, src: CUdeviceptr, src_ctx: *mut c_void, n: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemcpyPeer entry point.
        done(unsafe { super::extra::cuMemcpyPeer(dst, dst_ctx, src, src_ctx, n) })
    }

    fn cuMemcpy_ptds(dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> Result<(), CuError> {
        // SAFETY: forwarding the caller's arguments to the cuMemcpy entry point.
        done(unsafe { super::memory::cuMemcpy(dst, src, n) })
    }

    fn cuStreamAddCallback_ptsz(s: cudaStream_t, cb: StreamCallback, data: *mut c_void, flags: c_uint) -> Result<(), CuError> {
        let s = per_thread(s);
        // SAFETY: forwarding the caller's arguments to the cuStreamAddCallback entry point.
        done(unsafe { super::extra::cuStreamAddCallback(s, cb, data, flags) })
    }
}
