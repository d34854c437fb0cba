// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The driver entry points the executor calls, typed to return a plain `u32`.
//!
//! cudarc's bindings declare every entry point as returning `CUresult`, a `#[repr(u32)]`
//! enum of the codes its CUDA version knows. A newer driver can return a code that enum
//! cannot hold (CUDA 13.1+ add some), and receiving one would be undefined behavior. So the
//! executor looks each entry point up itself (in the library cudarc loaded) with a `u32`
//! result, and [`super::driver`] turns the number into a `CUresult` only after checking it
//! ([`super::error::result`]; unknown codes become `CUDA_ERROR_UNKNOWN`). A missing entry
//! point returns `CUDA_ERROR_NOT_FOUND` instead of panicking. Argument types are cudarc's.
//!
//! The signatures are those of cudarc 0.19's CUDA 13.0 bindings (argument names in snake
//! case); a test checks that every `ffi::cu*` call of `driver.rs` is declared here.

#![allow(clippy::too_many_arguments)]

use std::sync::OnceLock;

use cudarc::driver::sys::*;

/// `CUDA_ERROR_NOT_FOUND`, for an entry point the library lacks.
const NOT_FOUND: u32 = 500;

macro_rules! cu_fns {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?);)*) => {$(
        #[allow(non_snake_case)]
        #[doc = concat!("`", stringify!($name), "`.")]
        ///
        /// # Safety
        ///
        /// As the driver documents for this entry point; `culib` must have found the
        /// library (`driver::load` checks that first).
        pub unsafe fn $name($($arg: $ty),*) -> u32 {
            type F = unsafe extern "C" fn($($ty),*) -> u32;
            static ENTRY: OnceLock<Option<F>> = OnceLock::new();
            let f = ENTRY.get_or_init(|| {
                // SAFETY: the caller guarantees `culib` finds the library; the symbol, if
                // present, is the C function with this signature (CUDA's headers), read
                // with a `u32` result, which holds any value the function returns.
                unsafe {
                    culib()
                        .get::<F>(concat!(stringify!($name), "\0").as_bytes())
                        .ok()
                        .map(|s| *s)
                }
            });
            match f {
                // SAFETY: the caller's contract for the arguments.
                Some(f) => unsafe { f($($arg),*) },
                None => NOT_FOUND,
            }
        }
    )*};
}

cu_fns! {
    fn cuArray3DCreate_v2(p_handle: *mut CUarray, p_allocate_array: *const CUDA_ARRAY3D_DESCRIPTOR);
    fn cuArrayDestroy(h_array: CUarray);
    fn cuMipmappedArrayCreate(p_handle: *mut CUmipmappedArray, p_mipmapped_array_desc: *const CUDA_ARRAY3D_DESCRIPTOR, num_mipmap_levels: ::core::ffi::c_uint);
    fn cuMipmappedArrayDestroy(h_mipmapped_array: CUmipmappedArray);
    fn cuMipmappedArrayGetLevel(p_level_array: *mut CUarray, h_mipmapped_array: CUmipmappedArray, level: ::core::ffi::c_uint);
    fn cuCtxCreate_v4(pctx: *mut CUcontext, ctx_create_params: *mut CUctxCreateParams, flags: ::core::ffi::c_uint, dev: CUdevice);
    fn cuCtxDestroy_v2(ctx: CUcontext);
    fn cuCtxGetLimit(pvalue: *mut usize, limit: CUlimit);
    fn cuCtxSetCurrent(ctx: CUcontext);
    fn cuCtxSetLimit(limit: CUlimit, value: usize);
    fn cuCtxSynchronize();
    fn cuDeviceGet(device: *mut CUdevice, ordinal: ::core::ffi::c_int);
    fn cuDeviceGetAttribute(pi: *mut ::core::ffi::c_int, attrib: CUdevice_attribute, dev: CUdevice);
    fn cuDeviceGetCount(count: *mut ::core::ffi::c_int);
    fn cuDeviceGetName(name: *mut ::core::ffi::c_char, len: ::core::ffi::c_int, dev: CUdevice);
    fn cuDeviceGetUuid_v2(uuid: *mut CUuuid, dev: CUdevice);
    fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice);
    fn cuDevicePrimaryCtxRetain(pctx: *mut CUcontext, dev: CUdevice);
    fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: CUdevice);
    fn cuDriverGetVersion(driver_version: *mut ::core::ffi::c_int);
    fn cuEventCreate(ph_event: *mut CUevent, flags: ::core::ffi::c_uint);
    fn cuEventDestroy_v2(h_event: CUevent);
    fn cuEventElapsedTime_v2(p_milliseconds: *mut f32, h_start: CUevent, h_end: CUevent);
    fn cuEventQuery(h_event: CUevent);
    fn cuEventRecord(h_event: CUevent, h_stream: CUstream);
    fn cuEventRecordWithFlags(h_event: CUevent, h_stream: CUstream, flags: ::core::ffi::c_uint);
    fn cuFuncGetAttribute(pi: *mut ::core::ffi::c_int, attrib: CUfunction_attribute, hfunc: CUfunction);
    fn cuMemCreate(handle: *mut CUmemGenericAllocationHandle, size: usize, prop: *const ::core::ffi::c_void, flags: ::core::ffi::c_ulonglong);
    fn cuMemRelease(handle: CUmemGenericAllocationHandle);
    fn cuMemAddressReserve(ptr: *mut CUdeviceptr, size: usize, alignment: usize, addr: CUdeviceptr, flags: ::core::ffi::c_ulonglong);
    fn cuMemAddressFree(ptr: CUdeviceptr, size: usize);
    fn cuMemMap(ptr: CUdeviceptr, size: usize, offset: usize, handle: CUmemGenericAllocationHandle, flags: ::core::ffi::c_ulonglong);
    fn cuMemUnmap(ptr: CUdeviceptr, size: usize);
    fn cuMemSetAccess(ptr: CUdeviceptr, size: usize, desc: *const ::core::ffi::c_void, count: usize);
    fn cuFuncGetName(name: *mut *const ::core::ffi::c_char, hfunc: CUfunction);
    fn cuFuncGetParamInfo(func: CUfunction, param_index: usize, param_offset: *mut usize, param_size: *mut usize);
    fn cuFuncSetAttribute(hfunc: CUfunction, attrib: CUfunction_attribute, value: ::core::ffi::c_int);
    // The enumerations as `u32`: they are the guest's values, which a Rust enum could not
    // hold if out of range (the driver checks them).
    fn cuTensorMapEncodeTiled(tensor_map: *mut CUtensorMap, tensor_data_type: u32, tensor_rank: cuuint32_t, global_address: *mut ::core::ffi::c_void, global_dim: *const cuuint64_t, global_strides: *const cuuint64_t, box_dim: *const cuuint32_t, element_strides: *const cuuint32_t, interleave: u32, swizzle: u32, l2_promotion: u32, oob_fill: u32);
    fn cuTensorMapReplaceAddress(tensor_map: *mut CUtensorMap, global_address: *mut ::core::ffi::c_void);
    fn cuGetErrorName(error: CUresult, p_str: *mut *const ::core::ffi::c_char);
    fn cuGraphAddEmptyNode(ph_graph_node: *mut CUgraphNode, h_graph: CUgraph, dependencies: *const CUgraphNode, num_dependencies: usize);
    fn cuGraphAddKernelNode_v2(ph_graph_node: *mut CUgraphNode, h_graph: CUgraph, dependencies: *const CUgraphNode, num_dependencies: usize, node_params: *const CUDA_KERNEL_NODE_PARAMS);
    fn cuGraphAddMemcpyNode(ph_graph_node: *mut CUgraphNode, h_graph: CUgraph, dependencies: *const CUgraphNode, num_dependencies: usize, copy_params: *const CUDA_MEMCPY3D, ctx: CUcontext);
    fn cuGraphAddMemsetNode(ph_graph_node: *mut CUgraphNode, h_graph: CUgraph, dependencies: *const CUgraphNode, num_dependencies: usize, memset_params: *const CUDA_MEMSET_NODE_PARAMS, ctx: CUcontext);
    fn cuGraphCreate(ph_graph: *mut CUgraph, flags: ::core::ffi::c_uint);
    fn cuGraphDestroy(h_graph: CUgraph);
    fn cuGraphExecDestroy(h_graph_exec: CUgraphExec);
    fn cuGraphInstantiateWithFlags(ph_graph_exec: *mut CUgraphExec, h_graph: CUgraph, flags: ::core::ffi::c_ulonglong);
    fn cuGraphLaunch(h_graph_exec: CUgraphExec, h_stream: CUstream);
    fn cuInit(flags: ::core::ffi::c_uint);
    fn cuIpcCloseMemHandle(dptr: CUdeviceptr);
    fn cuIpcGetEventHandle(p_handle: *mut CUipcEventHandle, event: CUevent);
    fn cuIpcOpenEventHandle(ph_event: *mut CUevent, handle: CUipcEventHandle);
    fn cuIpcGetMemHandle(p_handle: *mut CUipcMemHandle, dptr: CUdeviceptr);
    fn cuIpcOpenMemHandle_v2(pdptr: *mut CUdeviceptr, handle: CUipcMemHandle, flags: ::core::ffi::c_uint);
    fn cuMemGetAddressRange_v2(pbase: *mut CUdeviceptr, psize: *mut usize, dptr: CUdeviceptr);
    fn cuLaunchCooperativeKernel(f: CUfunction, grid_dim_x: ::core::ffi::c_uint, grid_dim_y: ::core::ffi::c_uint, grid_dim_z: ::core::ffi::c_uint, block_dim_x: ::core::ffi::c_uint, block_dim_y: ::core::ffi::c_uint, block_dim_z: ::core::ffi::c_uint, shared_mem_bytes: ::core::ffi::c_uint, h_stream: CUstream, kernel_params: *mut *mut ::core::ffi::c_void);
    fn cuLaunchKernelEx(config: *const CUlaunchConfig, f: CUfunction, kernel_params: *mut *mut ::core::ffi::c_void, extra: *mut *mut ::core::ffi::c_void);
    fn cuOccupancyMaxActiveClusters(num_clusters: *mut ::core::ffi::c_int, func: CUfunction, config: *const CUlaunchConfig);
    fn cuOccupancyMaxPotentialClusterSize(cluster_size: *mut ::core::ffi::c_int, func: CUfunction, config: *const CUlaunchConfig);
    fn cuLaunchKernel(f: CUfunction, grid_dim_x: ::core::ffi::c_uint, grid_dim_y: ::core::ffi::c_uint, grid_dim_z: ::core::ffi::c_uint, block_dim_x: ::core::ffi::c_uint, block_dim_y: ::core::ffi::c_uint, block_dim_z: ::core::ffi::c_uint, shared_mem_bytes: ::core::ffi::c_uint, h_stream: CUstream, kernel_params: *mut *mut ::core::ffi::c_void, extra: *mut *mut ::core::ffi::c_void);
    fn cuLinkAddData_v2(state: CUlinkState, type_: CUjitInputType, data: *mut ::core::ffi::c_void, size: usize, name: *const ::core::ffi::c_char, num_options: ::core::ffi::c_uint, options: *mut CUjit_option, option_values: *mut *mut ::core::ffi::c_void);
    fn cuLinkComplete(state: CUlinkState, cubin_out: *mut *mut ::core::ffi::c_void, size_out: *mut usize);
    fn cuLinkCreate_v2(num_options: ::core::ffi::c_uint, options: *mut CUjit_option, option_values: *mut *mut ::core::ffi::c_void, state_out: *mut CUlinkState);
    fn cuLinkDestroy(state: CUlinkState);
    fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytesize: usize);
    fn cuMemFreeHost(p: *mut ::core::ffi::c_void);
    fn cuMemFree_v2(dptr: CUdeviceptr);
    fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize);
    fn cuMemHostAlloc(pp: *mut *mut ::core::ffi::c_void, bytesize: usize, flags: ::core::ffi::c_uint);
    fn cuMemHostRegister_v2(p: *mut ::core::ffi::c_void, bytesize: usize, flags: ::core::ffi::c_uint);
    fn cuMemHostGetDevicePointer_v2(pdptr: *mut CUdeviceptr, p: *mut ::core::ffi::c_void, flags: ::core::ffi::c_uint);
    fn cuMemHostUnregister(p: *mut ::core::ffi::c_void);
    fn cuMemcpy2DAsync_v2(p_copy: *const CUDA_MEMCPY2D, h_stream: CUstream);
    fn cuMemcpy3DAsync_v2(p_copy: *const CUDA_MEMCPY3D, h_stream: CUstream);
    fn cuMemcpyDtoDAsync_v2(dst_device: CUdeviceptr, src_device: CUdeviceptr, byte_count: usize, h_stream: CUstream);
    fn cuMemcpyDtoHAsync_v2(dst_host: *mut ::core::ffi::c_void, src_device: CUdeviceptr, byte_count: usize, h_stream: CUstream);
    fn cuMemcpyHtoDAsync_v2(dst_device: CUdeviceptr, src_host: *const ::core::ffi::c_void, byte_count: usize, h_stream: CUstream);
    fn cuMemsetD16Async(dst_device: CUdeviceptr, us: ::core::ffi::c_ushort, n: usize, h_stream: CUstream);
    fn cuMemsetD2D16Async(dst_device: CUdeviceptr, dst_pitch: usize, us: ::core::ffi::c_ushort, width: usize, height: usize, h_stream: CUstream);
    fn cuMemsetD2D32Async(dst_device: CUdeviceptr, dst_pitch: usize, ui: ::core::ffi::c_uint, width: usize, height: usize, h_stream: CUstream);
    fn cuMemsetD2D8Async(dst_device: CUdeviceptr, dst_pitch: usize, uc: ::core::ffi::c_uchar, width: usize, height: usize, h_stream: CUstream);
    fn cuMemsetD32Async(dst_device: CUdeviceptr, ui: ::core::ffi::c_uint, n: usize, h_stream: CUstream);
    fn cuMemsetD8Async(dst_device: CUdeviceptr, uc: ::core::ffi::c_uchar, n: usize, h_stream: CUstream);
    fn cuModuleGetFunction(hfunc: *mut CUfunction, hmod: CUmodule, name: *const ::core::ffi::c_char);
    fn cuModuleGetFunctionCount(count: *mut ::core::ffi::c_uint, module: CUmodule);
    fn cuModuleEnumerateFunctions(functions: *mut CUfunction, num_functions: ::core::ffi::c_uint, module: CUmodule);
    fn cuModuleGetGlobal_v2(dptr: *mut CUdeviceptr, bytes: *mut usize, hmod: CUmodule, name: *const ::core::ffi::c_char);
    fn cuModuleLoadDataEx(module: *mut CUmodule, image: *const ::core::ffi::c_void, num_options: ::core::ffi::c_uint, options: *mut CUjit_option, option_values: *mut *mut ::core::ffi::c_void);
    fn cuModuleUnload(hmod: CUmodule);
    fn cuStreamCreateWithPriority(ph_stream: *mut CUstream, flags: ::core::ffi::c_uint, priority: ::core::ffi::c_int);
    fn cuStreamDestroy_v2(h_stream: CUstream);
    fn cuStreamQuery(h_stream: CUstream);
    fn cuStreamWaitEvent(h_stream: CUstream, h_event: CUevent, flags: ::core::ffi::c_uint);
    fn cuSurfObjectCreate(p_surf_object: *mut CUsurfObject, p_res_desc: *const CUDA_RESOURCE_DESC);
    fn cuSurfObjectDestroy(surf_object: CUsurfObject);
    fn cuTexObjectCreate(p_tex_object: *mut CUtexObject, p_res_desc: *const CUDA_RESOURCE_DESC, p_tex_desc: *const CUDA_TEXTURE_DESC, p_res_view_desc: *const CUDA_RESOURCE_VIEW_DESC);
    fn cuTexObjectDestroy(tex_object: CUtexObject);
}
