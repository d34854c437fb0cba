// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Streams, events, modules, functions and launches.

use crate::core::function::{
    CUlaunchAttribute, Function, cooperative_requested, launch_events, plain_launch_attribute,
};
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use vcuda_protocol::{
    FunctionGetReq, FunctionGetResp, HandleReq, LaunchReq, MAX_PARAM_LEN, MODULE_HAS_DATA,
    ModuleFunctionReq, ModuleFunctionResp, ModuleLoadReq, PARAMS_UNKNOWN, ParamInfo, SymbolGetReq,
    SymbolGetResp, ops,
};
use zerocopy::FromBytes;

use super::out;
use crate::client::{self, Client};
use crate::core::context::{current, disown, own};
use crate::error::CuError;
use crate::ffi::CUdeviceptr;
use crate::ffi::{cudaEvent_t, cudaStream_t};

/// A loaded module: the backend's handle and the functions looked up in it.
pub struct Module {
    handle: u64,
    functions: std::sync::Mutex<Vec<Arc<Function>>>,
    /// Its kernels' names, once asked for (`cuModuleEnumerateFunctions`).
    names: std::sync::OnceLock<Vec<String>>,
}

/// The session, for a driver call: a current context and no sticky error.
pub(super) fn session() -> Result<&'static Client, CuError> {
    current()?;
    let c = client::client()?;
    c.check_sticky()?;
    Ok(c)
}

/// The size of a module image: a fat binary (header and payload), an ELF cubin (up to its
/// section headers), or NUL-terminated PTX text.
///
/// # Safety
///
/// `image` points to a readable image of one of those kinds.
unsafe fn image_len(image: *const u8) -> Result<usize, CuError> {
    // SAFETY: every image is at least 16 bytes or NUL-terminated text (the caller's
    // contract); each read below stays within what the header read so far describes.
    unsafe {
        let magic = image.cast::<u32>().read_unaligned();
        if magic == 0xBA55_ED50 {
            let size = image.add(8).cast::<u64>().read_unaligned();
            return usize::try_from(size)
                .ok()
                .and_then(|s| s.checked_add(16))
                .filter(|&s| s <= vcuda_protocol::MAX_SEGMENT_LEN as usize)
                .ok_or(CuError::INVALID_IMAGE);
        }
        if magic == 0x464C_457F {
            // The CPU executor runs PTX, not machine code.
            return Err(CuError::NO_BINARY_FOR_GPU);
        }
        Ok(CStr::from_ptr(image.cast::<c_char>())
            .to_bytes_with_nul()
            .len())
    }
}

/// A fat binary holding `ptx` (text with its NUL) as its one PTX entry.
pub fn ptx_fatbin(ptx: &[u8]) -> Vec<u8> {
    ptx_units_fatbin(&[ptx])
}

/// A fat binary holding each of `units` (PTX text, NUL-terminated) as a PTX entry for the
/// same arch (sm_90): translation units the backend links together.
pub fn ptx_units_fatbin(units: &[&[u8]]) -> Vec<u8> {
    vcuda_fatbin::ptx_fatbin(units, 90)
}

fn load(pmod: *mut *mut Module, image: *const c_void) -> Result<(), CuError> {
    let c = session()?;
    if image.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: the driver API's contract: `image` is a module image.
    let len = unsafe { image_len(image.cast()) }?;
    // SAFETY: `len` bytes of the image are readable (computed from the image itself).
    let bytes = unsafe { std::slice::from_raw_parts(image.cast::<u8>(), len) };
    let wrapped;
    let bytes = if bytes.starts_with(&0xBA55_ED50u32.to_le_bytes()) {
        bytes
    } else {
        wrapped = ptx_fatbin(bytes);
        &wrapped
    };
    let req = ModuleLoadReq {
        hash: Sha256::digest(bytes).into(),
        size: bytes.len() as u64,
        flags: MODULE_HAS_DATA,
        reserved: 0,
    };
    let resp = c.call_with::<ops::ModuleLoad>(&req, &[], &[bytes], &mut [])?;
    let m = Box::into_raw(Box::new(Module {
        handle: resp.handle,
        functions: std::sync::Mutex::default(),
        names: std::sync::OnceLock::new(),
    }));
    own(|o| o.modules.push(m as usize))?;
    // SAFETY: the caller's output pointer.
    unsafe { out(pmod, m) }
}

/// Unloads a module made by [`load`] (once).
pub fn unload(m: usize) {
    // Its kernels stop being `cudaKernel_t`s the runtime takes before they are freed.
    crate::core::library::forget_module(m);
    // SAFETY: `m` came from `Box::into_raw` in `load` and its owner gives it up once.
    let m = unsafe { Box::from_raw(m as *mut Module) };
    if let Ok(c) = client::client() {
        let _ = c.call::<ops::ModuleUnload>(&HandleReq { handle: m.handle });
    }
}

/// The module behind a `CUmodule` of the current context.
fn module<'a>(m: *mut Module) -> Result<&'a Module, CuError> {
    let ok = !m.is_null() && {
        let mut found = false;
        own(|o| found = o.modules.contains(&(m as usize)))?;
        found
    };
    if !ok {
        return Err(CuError::INVALID_HANDLE);
    }
    // SAFETY: a live module of the current context (checked above); it is freed only by
    // `cuModuleUnload` or the context's destruction, which the caller must not race.
    Ok(unsafe { &*m })
}

/// The names of a module's kernels, asked of the backend once (`ModuleFunction`, one call
/// per kernel).
fn kernel_names<'a>(c: &Client, m: &'a Module) -> Result<&'a [String], CuError> {
    if let Some(n) = m.names.get() {
        return Ok(n);
    }
    let get = |index: u32| -> Result<(u32, String), CuError> {
        let req = ModuleFunctionReq {
            module: m.handle,
            index,
            reserved: 0,
        };
        let p = c.call_raw::<ops::ModuleFunction>(&req, &[], &[], &mut [])?;
        let (resp, tail) = ModuleFunctionResp::read_from_prefix(&p).map_err(|_| CuError(999))?;
        let name = tail.get(..resp.name_len as usize).ok_or(CuError(999))?;
        Ok((resp.count, String::from_utf8_lossy(name).into_owned()))
    };
    let (count, first) = get(0)?;
    let mut names = Vec::with_capacity(count as usize);
    if count > 0 {
        names.push(first);
        for i in 1..count {
            names.push(get(i)?.1);
        }
    }
    Ok(m.names.get_or_init(|| names))
}

/// `cuModuleEnumerateFunctions`: handles of up to `num` of the module's kernels.
fn enumerate(fs: *mut *const Function, num: c_uint, mp: *mut Module) -> Result<(), CuError> {
    let c = session()?;
    let m = module(mp)?;
    if fs.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    for (i, name) in kernel_names(c, m)?.iter().take(num as usize).enumerate() {
        let cname = std::ffi::CString::new(name.as_str()).map_err(|_| CuError::NOT_FOUND)?;
        let mut f = std::ptr::null();
        // SAFETY: a live module, a NUL-terminated name and a valid out pointer.
        match unsafe { cuModuleGetFunction(&mut f, mp, cname.as_ptr()) } {
            0 => {}
            e => return Err(CuError(e)),
        }
        // SAFETY: the caller's array of `num` handles (i < num).
        unsafe { fs.add(i).write(f) };
    }
    Ok(())
}

/// `cuModuleGetFunctionCount`.
fn function_count(count: *mut c_uint, mp: *mut Module) -> Result<(), CuError> {
    let c = session()?;
    let m = module(mp)?;
    let n = kernel_names(c, m)?.len() as c_uint;
    // SAFETY: the caller's output pointer.
    unsafe { out(count, n) }
}

/// `CUoccupancyB2DSize`: the dynamic shared memory a block size needs.
pub(crate) type BlockToSmem = Option<unsafe extern "C" fn(c_int) -> usize>;

/// `cuOccupancyMaxActiveBlocksPerMultiprocessor`: the runtime's occupancy calculator.
fn occupancy(
    blocks: *mut c_int,
    f: *const Function,
    block: c_int,
    smem: usize,
) -> Result<(), CuError> {
    let c = session()?;
    let f = function(f)?;
    if block <= 0 {
        return Err(CuError::INVALID_VALUE);
    }
    let n = resident_blocks(c, f, i64::from(block), smem)?;
    // SAFETY: the caller's output pointer.
    unsafe { out(blocks, n as c_int) }
}

/// Blocks of `block` threads with `smem` bytes of dynamic shared memory resident on one
/// multiprocessor: none when a block could not launch with that much shared memory.
fn resident_blocks(c: &Client, f: &Function, block: i64, smem: usize) -> Result<i64, CuError> {
    let info = c.device_info(crate::state::device())?;
    let limit = info
        .attr(vcuda_protocol::attr::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .unwrap_or(0)
        .max(0) as u64;
    let total = (smem as u64).saturating_add(f.attrs.shared_size_bytes);
    if total > limit {
        return Ok(0);
    }
    Ok(crate::core::misc::max_active_blocks(
        c,
        &f.attrs,
        block,
        smem as i64,
    )?)
}

/// `cuOccupancyMaxPotentialBlockSize`: the block size (a multiple of the warp size, at most
/// `limit` when it is positive) with the most resident threads per multiprocessor, the
/// largest of equals, as CUDA's calculator chooses; and the grid that fills the device.
fn potential_block_size(
    min_grid: *mut c_int,
    block: *mut c_int,
    f: *const Function,
    smem_of: BlockToSmem,
    smem: usize,
    limit: c_int,
) -> Result<(), CuError> {
    let c = session()?;
    let f = function(f)?;
    let info = c.device_info(crate::state::device())?;
    let a = |n| i64::from(info.attr(n).unwrap_or(0));
    use vcuda_protocol::attr;
    let mut max =
        a(attr::MAX_THREADS_PER_BLOCK).min(i64::from(f.attrs.max_threads_per_block.max(1)));
    if limit > 0 {
        max = max.min(i64::from(limit));
    }
    let (mut best, mut best_blocks, mut best_threads) = (0i64, 0i64, 0i64);
    let mut size = max / 32 * 32;
    if size == 0 {
        size = max;
    }
    while size > 0 {
        let dynamic = match smem_of {
            // SAFETY: the program's callback, called with a block size, as CUDA does.
            Some(cb) => unsafe { cb(size as c_int) },
            None => smem,
        };
        let n = resident_blocks(c, f, size, dynamic)?;
        if n * size > best_threads {
            (best, best_blocks, best_threads) = (size, n, n * size);
        }
        if best_threads == a(attr::MAX_THREADS_PER_MULTI_PROCESSOR) {
            break;
        }
        size -= 32;
    }
    let sms = a(attr::MULTI_PROCESSOR_COUNT);
    // SAFETY: the caller's output pointers.
    unsafe {
        out(min_grid, (best_blocks * sms) as c_int)?;
        out(block, best as c_int)
    }
}

/// The function behind a `CUfunction`.
fn function<'a>(f: *const Function) -> Result<&'a Function, CuError> {
    // SAFETY: the driver API's contract: a function handle from cuModuleGetFunction whose
    // module is still loaded (its `Arc` lives in the module's list).
    unsafe { f.as_ref() }.ok_or(CuError::INVALID_HANDLE)
}

fn c_name(name: *const c_char) -> Result<&'static str, CuError> {
    if name.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: a NUL-terminated string (the driver API's contract).
    unsafe { CStr::from_ptr(name) }
        .to_str()
        .map_err(|_| CuError::NOT_FOUND)
}

/// A launch's parameter bytes from `kernelParams` (`args`) or a `CU_LAUNCH_PARAM_*` list
/// (`extra`), laid out as `f` declares them.
pub(super) fn pack_params(
    f: &Function,
    args: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Result<Vec<u8>, CuError> {
    if f.param_size > MAX_PARAM_LEN {
        return Err(CuError::INVALID_VALUE);
    }
    let mut params = vec![0u8; f.param_size as usize];
    if !args.is_null() {
        for (i, &(off, size)) in f.params.iter().enumerate() {
            // SAFETY: the driver API's contract: one pointer per kernel parameter.
            let a = unsafe { *args.add(i) };
            if a.is_null() {
                return Err(CuError::INVALID_VALUE);
            }
            let dst = params
                .get_mut(off as usize..(off + size) as usize)
                .ok_or(CuError::INVALID_VALUE)?;
            // SAFETY: `a` points to the argument, `size` bytes as the kernel declares.
            dst.copy_from_slice(unsafe {
                std::slice::from_raw_parts(a.cast::<u8>(), size as usize)
            });
        }
    } else if !extra.is_null() {
        // CU_LAUNCH_PARAM_BUFFER_POINTER (1), _SIZE (2), _END (0) pairs.
        let (mut buf, mut len) = (std::ptr::null::<u8>(), None);
        let mut i = 0;
        loop {
            // SAFETY: the driver API's contract: a list of (key, value) ending with END.
            let key = unsafe { *extra.add(i) } as usize;
            match key {
                0 => break,
                // SAFETY: as above; a key is followed by its value.
                1 => buf = unsafe { *extra.add(i + 1) }.cast(),
                // SAFETY: as above; the value points to a size_t.
                2 => len = Some(unsafe { *(*extra.add(i + 1)).cast::<usize>() }),
                _ => return Err(CuError::INVALID_VALUE),
            }
            i += 2;
        }
        let len = len.ok_or(CuError::INVALID_VALUE)?;
        if buf.is_null() || len < f.param_size as usize {
            return Err(CuError::INVALID_VALUE);
        }
        // SAFETY: the caller's buffer of `len` >= param_size bytes.
        params.copy_from_slice(unsafe { std::slice::from_raw_parts(buf, f.param_size as usize) });
    } else if !f.params.is_empty() {
        return Err(CuError::INVALID_VALUE);
    }
    Ok(params)
}

/// A graph kernel node for `f` (`cuGraphAddKernelNode`): its parameters copied now.
pub(super) fn kernel_node(
    f: *const Function,
    grid: [u32; 3],
    block: [u32; 3],
    shmem: c_uint,
    args: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Result<crate::core::graph::Kind, CuError> {
    session()?;
    let f = function(f)?;
    if grid.contains(&0) || block.contains(&0) {
        return Err(CuError::INVALID_VALUE);
    }
    let params = pack_params(f, args, extra)?;
    Ok(graph_kernel(f, grid, block, shmem, params))
}

/// The graph kernel node of a driver launch of `f` with `params` (captured or added).
fn graph_kernel(
    f: &Function,
    grid: [u32; 3],
    block: [u32; 3],
    shmem: c_uint,
    params: Vec<u8>,
) -> crate::core::graph::Kind {
    let d3 = |v: [u32; 3]| crate::ffi::dim3 {
        x: v[0],
        y: v[1],
        z: v[2],
    };
    crate::core::graph::Kind::Kernel(crate::core::graph::Kernel::driver(
        f as *const Function as usize,
        f.handle,
        (d3(grid), d3(block), shmem),
        params,
        f.params.clone(),
    ))
}

#[allow(clippy::too_many_arguments)]
fn launch(
    f: *const Function,
    grid: [u32; 3],
    block: [u32; 3],
    shmem: c_uint,
    stream: cudaStream_t,
    args: *mut *mut c_void,
    extra: *mut *mut c_void,
    cooperative: bool,
) -> Result<(), CuError> {
    let c = session()?;
    let f = function(f)?;
    if grid.contains(&0) || block.contains(&0) {
        return Err(CuError::INVALID_VALUE);
    }
    if cooperative {
        crate::core::misc::check_cooperative(c, &f.attrs, grid, block, shmem)?;
    }
    let params = pack_params(f, args, extra)?;
    let stream = crate::core::stream::capture_stream_handle(c, stream, false)?;
    let captured = crate::core::capture::add(stream, || {
        if cooperative {
            // As the runtime's: a graph kernel node here has no cooperative attribute.
            return Err(crate::error::Error(
                vcuda_protocol::status::STREAM_CAPTURE_UNSUPPORTED,
            ));
        }
        Ok(graph_kernel(f, grid, block, shmem, params.clone()))
    })?;
    if captured {
        return Ok(());
    }
    let req = LaunchReq {
        function: f.handle,
        stream,
        grid,
        block,
        shared_mem: shmem,
        param_len: params.len() as u32,
    };
    if cooperative {
        c.post_with::<ops::LaunchCooperative>(&req, &params, &[])?;
    } else {
        c.post_with::<ops::Launch>(&req, &params, &[])?;
    }
    Ok(())
}

/// `cuModuleLoad` (and `cuLibraryLoadFromFile`): loads the module image in the file `path`.
///
/// # Safety
///
/// `m` is null or valid for a write; `path` is null or a NUL-terminated string.
pub(crate) unsafe fn load_file(m: *mut *mut Module, path: *const c_char) -> Result<(), CuError> {
    if path.is_null() {
        return Err(CuError::INVALID_VALUE);
    }
    // SAFETY: a NUL-terminated path (the driver API's contract).
    let p = unsafe { CStr::from_ptr(path) }
        .to_string_lossy()
        .into_owned();
    let mut bytes = std::fs::read(&p).map_err(|_| CuError(301))?; // CUDA_ERROR_FILE_NOT_FOUND
    // PTX text must end with its NUL; fat binaries are kept 8-byte aligned.
    bytes.push(0);
    let mut aligned = vec![0u64; bytes.len().div_ceil(8)];
    // SAFETY: `aligned` holds at least `bytes.len()` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            aligned.as_mut_ptr().cast::<u8>(),
            bytes.len(),
        )
    };
    // The same load as cuModuleLoadData's, from a buffer that lives for the call.
    load(m, aligned.as_ptr().cast())
}

entry_lib! {
    fn cuStreamCreate(s: *mut cudaStream_t, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::core::stream::stream_create_with_priority(s, flags, 0) }.map_err(crate::error::CuError::from)?;
        // SAFETY: written just above.
        own(|o| o.streams.push(unsafe { *s } as usize))
    }

    fn cuStreamCreateWithPriority(s: *mut cudaStream_t, flags: c_uint, priority: c_int) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::core::stream::stream_create_with_priority(s, flags, priority) }.map_err(crate::error::CuError::from)?;
        // SAFETY: written just above.
        own(|o| o.streams.push(unsafe { *s } as usize))
    }

    fn cuStreamDestroy_v2(s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handle.
        unsafe { crate::core::stream::stream_destroy(s) }.map_err(crate::error::CuError::from)?;
        disown(|o| o.streams.retain(|&x| x != s as usize));
        Ok(())
    }

    fn cuStreamSynchronize(s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handle.
        unsafe { crate::core::stream::stream_synchronize(s) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamQuery(s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handle.
        unsafe { crate::core::stream::stream_query(s) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamWaitEvent(s: cudaStream_t, e: cudaEvent_t, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handles.
        unsafe { crate::core::stream::stream_wait_event(s, e, flags) }.map_err(crate::error::CuError::from)
    }

    fn cuEventCreate(e: *mut cudaEvent_t, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // CU_EVENT_* and cudaEvent* flags have the same values.
        // SAFETY: forwarding the caller's output pointer.
        unsafe { crate::core::stream::event_create_with_flags(e, flags) }.map_err(crate::error::CuError::from)?;
        // SAFETY: written just above.
        own(|o| o.events.push(unsafe { *e } as usize))
    }

    fn cuEventDestroy_v2(e: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handle.
        unsafe { crate::core::stream::event_destroy(e) }.map_err(crate::error::CuError::from)?;
        disown(|o| o.events.retain(|&x| x != e as usize));
        Ok(())
    }

    fn cuEventRecord(e: cudaEvent_t, s: cudaStream_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handles.
        unsafe { crate::core::stream::event_record_call(e, s) }.map_err(crate::error::CuError::from)
    }

    fn cuEventRecordWithFlags(e: cudaEvent_t, s: cudaStream_t, flags: c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handles.
        unsafe { crate::core::stream::event_record_with_flags(e, s, flags) }.map_err(crate::error::CuError::from)
    }

    fn cuEventQuery(e: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handle.
        unsafe { crate::core::stream::event_query(e) }.map_err(crate::error::CuError::from)
    }

    fn cuEventSynchronize(e: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: the runtime checks the handle.
        unsafe { crate::core::stream::event_synchronize(e) }.map_err(crate::error::CuError::from)
    }

    fn cuEventElapsedTime_v2(ms: *mut f32, start: cudaEvent_t, end: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer; the runtime checks the handles.
        unsafe { crate::core::stream::event_elapsed_time(ms, start, end) }.map_err(crate::error::CuError::from)
    }

    fn cuModuleLoadData(m: *mut *mut Module, image: *const c_void) -> Result<(), CuError> {
        load(m, image)
    }

    fn cuModuleLoadFatBinary(m: *mut *mut Module, image: *const c_void) -> Result<(), CuError> {
        load(m, image)
    }

    fn cuEventElapsedTime(ms: *mut f32, start: cudaEvent_t, end: cudaEvent_t) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer; the runtime checks the handles.
        unsafe { crate::core::stream::event_elapsed_time(ms, start, end) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamGetPriority(s: cudaStream_t, priority: *mut c_int) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer; the runtime checks the handle.
        unsafe { crate::core::stream::stream_get_priority(s, priority) }.map_err(crate::error::CuError::from)
    }

    fn cuStreamGetFlags(s: cudaStream_t, flags: *mut c_uint) -> Result<(), CuError> {
        current()?;
        // SAFETY: forwarding the caller's output pointer; the runtime checks the handle.
        unsafe { crate::core::stream::stream_get_flags(s, flags) }.map_err(crate::error::CuError::from)
    }

    fn cuFuncSetCacheConfig(f: *const Function, config: c_int) -> Result<(), CuError> {
        session()?;
        function(f)?;
        // A preference (CU_FUNC_CACHE_PREFER_*), as the runtime's cudaFuncSetCacheConfig
        // takes it: the split of L1 and shared memory is the device's business.
        if !(0..=3).contains(&config) {
            return Err(CuError::INVALID_VALUE);
        }
        Ok(())
    }

    fn cuModuleLoadDataEx(m: *mut *mut Module, image: *const c_void, _n: c_uint, _opts: *mut c_int, _vals: *mut *mut c_void) -> Result<(), CuError> {
        // JIT options (log buffers, optimization level) ask for nothing the backend needs;
        // its JIT log stays on the backend.
        load(m, image)
    }

    fn cuModuleUnload(m: *mut Module) -> Result<(), CuError> {
        module(m)?;
        disown(|o| o.modules.retain(|&x| x != m as usize));
        unload(m as usize);
        Ok(())
    }

    fn cuModuleGetFunction(pf: *mut *const Function, mp: *mut Module, name: *const c_char) -> Result<(), CuError> {
        let c = session()?;
        let m = module(mp)?;
        let name = c_name(name)?;
        // The same name gives the same handle, as CUDA's does.
        let known = m
            .functions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|f| f.name.as_bytes() == name.as_bytes())
            .map(Arc::as_ptr);
        if let Some(ptr) = known {
            // SAFETY: the caller's output pointer; the function lives as long as its module.
            return unsafe { out(pf, ptr) };
        }
        let p = c.call_raw::<ops::FunctionGet>(&FunctionGetReq { module: m.handle }, name.as_bytes(), &[], &mut [])?;
        let (resp, tail) = FunctionGetResp::read_from_prefix(&p).map_err(|_| CuError(999))?;
        if resp.n_params == PARAMS_UNKNOWN {
            log::error!("no parameter layout for kernel {name}");
            return Err(CuError::NOT_SUPPORTED);
        }
        let infos = <[ParamInfo]>::ref_from_bytes(tail).map_err(|_| CuError(999))?;
        let f = Arc::new(Function {
            handle: resp.handle,
            params: infos.iter().map(|p| (p.offset, p.size)).collect(),
            param_size: resp.param_size,
            attrs: resp.attrs,
            name: std::ffi::CString::new(name).map_err(|_| CuError::NOT_FOUND)?,
            module: mp as usize,
        });
        let ptr = Arc::as_ptr(&f);
        m.functions.lock().unwrap_or_else(|e| e.into_inner()).push(f);
        // SAFETY: the caller's output pointer; the function lives as long as its module.
        unsafe { out(pf, ptr) }
    }

    fn cuModuleGetGlobal_v2(dptr: *mut CUdeviceptr, bytes: *mut usize, m: *mut Module, name: *const c_char) -> Result<(), CuError> {
        let c = session()?;
        let m = module(m)?;
        let name = c_name(name)?;
        let r: SymbolGetResp = c.call_with::<ops::SymbolGet>(&SymbolGetReq { module: m.handle }, name.as_bytes(), &[], &mut [])?;
        if !dptr.is_null() {
            // SAFETY: the caller's output pointer (non-null).
            unsafe { out(dptr, r.ptr)? };
        }
        if !bytes.is_null() {
            // SAFETY: the caller's output pointer (non-null).
            unsafe { out(bytes, r.size as usize)? };
        }
        Ok(())
    }

    fn cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks: *mut c_int, f: *const Function, block: c_int, smem: usize) -> Result<(), CuError> {
        occupancy(blocks, f, block, smem)
    }

    fn cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks: *mut c_int, f: *const Function, block: c_int, smem: usize, _flags: c_uint) -> Result<(), CuError> {
        occupancy(blocks, f, block, smem)
    }

    fn cuOccupancyMaxPotentialBlockSize(min_grid: *mut c_int, block: *mut c_int, f: *const Function, smem_of: BlockToSmem, smem: usize, limit: c_int) -> Result<(), CuError> {
        potential_block_size(min_grid, block, f, smem_of, smem, limit)
    }

    fn cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid: *mut c_int, block: *mut c_int, f: *const Function, smem_of: BlockToSmem, smem: usize, limit: c_int, _flags: c_uint) -> Result<(), CuError> {
        potential_block_size(min_grid, block, f, smem_of, smem, limit)
    }

    fn cuOccupancyAvailableDynamicSMemPerBlock(smem: *mut usize, f: *const Function, blocks: c_int, block: c_int) -> Result<(), CuError> {
        let c = session()?;
        let f = function(f)?;
        if blocks <= 0 || block <= 0 {
            return Err(CuError::INVALID_VALUE);
        }
        let info = c.device_info(crate::state::device())?;
        let attrs = crate::core::launch::current_attrs(f.handle, &f.attrs);
        let avail = crate::core::attrs::available_dynamic_smem(info, &attrs, blocks);
        // SAFETY: the caller's output pointer.
        unsafe { out(smem, avail) }
    }

    fn cuFuncGetAttribute(v: *mut c_int, attrib: c_int, f: *const Function) -> Result<(), CuError> {
        let f = function(f)?;
        let a = &crate::core::launch::current_attrs(f.handle, &f.attrs);
        let value = match attrib {
            0 => a.max_threads_per_block,
            1 => a.shared_size_bytes as c_int,
            2 => a.const_size_bytes as c_int,
            3 => a.local_size_bytes as c_int,
            4 => a.num_regs,
            5 => a.ptx_version,
            6 => a.binary_version,
            7 => a.cache_mode_ca,
            8 => a.max_dynamic_shared_size_bytes,
            9 => a.preferred_shmem_carveout,
            10..=19 => 0,
            _ => return Err(CuError::INVALID_VALUE),
        };
        // SAFETY: the caller's output pointer.
        unsafe { out(v, value) }
    }

    fn cuFuncSetAttribute(f: *const Function, attrib: c_int, value: c_int) -> Result<(), CuError> {
        let c = session()?;
        let f = function(f)?;
        crate::core::launch::set_attribute(c, f.handle, attrib, value)?;
        Ok(())
    }

    fn cuFuncGetParamInfo(f: *const Function, index: usize, offset: *mut usize, size: *mut usize) -> Result<(), CuError> {
        let &(o, s) = function(f)?.params.get(index).ok_or(CuError::INVALID_VALUE)?;
        // SAFETY: the caller's output pointers.
        unsafe {
            out(offset, o as usize)?;
            out(size, s as usize)
        }
    }

    fn cuLaunchKernel(f: *const Function, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: c_uint, s: cudaStream_t, args: *mut *mut c_void, extra: *mut *mut c_void) -> Result<(), CuError> {
        launch(f, [gx, gy, gz], [bx, by, bz], shmem, s, args, extra, false)
    }

    fn cuLaunchCooperativeKernel(f: *const Function, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: c_uint, s: cudaStream_t, args: *mut *mut c_void) -> Result<(), CuError> {
        launch(f, [gx, gy, gz], [bx, by, bz], shmem, s, args, std::ptr::null_mut(), true)
    }
}

// The library API (`cuLibrary*`, CUDA 12): a library is a module loaded for the whole
// process, a kernel the function it holds; cuda-python's `cuda.core` and Numba load code
// this way. `CUlibrary` is a `CUmodule` here and `CUkernel` a `CUfunction`, which
// `cuLaunchKernel` takes either way (as on CUDA 12).
entry_lib! {
    fn cuLibraryLoadData(lib: *mut *mut Module, code: *const c_void, _jit_opts: *mut c_int, _jit_vals: *mut *mut c_void, _n_jit: c_uint, _lib_opts: *mut c_int, _lib_vals: *mut *mut c_void, _n_lib: c_uint) -> Result<(), CuError> {
        load(lib, code)
    }

    fn cuLibraryUnload(lib: *mut Module) -> Result<(), CuError> {
        module(lib)?;
        disown(|o| o.modules.retain(|&x| x != lib as usize));
        unload(lib as usize);
        Ok(())
    }

    fn cuLibraryGetModule(m: *mut *mut Module, lib: *mut Module) -> Result<(), CuError> {
        module(lib)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(m, lib) }
    }

    fn cuLibraryGetKernel(k: *mut *const Function, lib: *mut Module, name: *const c_char) -> Result<(), CuError> {
        // SAFETY: the same contract as cuModuleGetFunction's.
        match unsafe { cuModuleGetFunction(k, lib, name) } {
            0 => Ok(()),
            e => Err(CuError(e)),
        }
    }

    fn cuKernelGetFunction(f: *mut *const Function, k: *const Function) -> Result<(), CuError> {
        function(k)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(f, k) }
    }

    fn cuLibraryGetGlobal(dptr: *mut CUdeviceptr, bytes: *mut usize, lib: *mut Module, name: *const c_char) -> Result<(), CuError> {
        // SAFETY: the same contract as cuModuleGetGlobal's.
        match unsafe { cuModuleGetGlobal_v2(dptr, bytes, lib, name) } {
            0 => Ok(()),
            e => Err(CuError(e)),
        }
    }

    fn cuKernelGetAttribute(v: *mut c_int, attrib: c_int, k: *const Function, _dev: c_int) -> Result<(), CuError> {
        // SAFETY: the same contract as cuFuncGetAttribute's.
        match unsafe { cuFuncGetAttribute(v, attrib, k) } {
            0 => Ok(()),
            e => Err(CuError(e)),
        }
    }

    fn cuKernelSetAttribute(attrib: c_int, value: c_int, k: *const Function, _dev: c_int) -> Result<(), CuError> {
        // SAFETY: the same contract as cuFuncSetAttribute's.
        match unsafe { cuFuncSetAttribute(k, attrib, value) } {
            0 => Ok(()),
            e => Err(CuError(e)),
        }
    }

    fn cuLibraryLoadFromFile(lib: *mut *mut Module, file: *const c_char, _jit_opts: *mut c_int, _jit_vals: *mut *mut c_void, _n_jit: c_uint, _lib_opts: *mut c_int, _lib_vals: *mut *mut c_void, _n_lib: c_uint) -> Result<(), CuError> {
        // SAFETY: the same contract as cuModuleLoad's.
        unsafe { load_file(lib, file) }
    }

    fn cuLibraryGetKernelCount(count: *mut c_uint, lib: *mut Module) -> Result<(), CuError> {
        function_count(count, lib)
    }

    fn cuLibraryEnumerateKernels(ks: *mut *const Function, num: c_uint, lib: *mut Module) -> Result<(), CuError> {
        enumerate(ks, num, lib)
    }

    fn cuModuleGetFunctionCount(count: *mut c_uint, m: *mut Module) -> Result<(), CuError> {
        function_count(count, m)
    }

    fn cuModuleEnumerateFunctions(fs: *mut *const Function, num: c_uint, m: *mut Module) -> Result<(), CuError> {
        enumerate(fs, num, m)
    }

    fn cuFuncGetName(name: *mut *const c_char, f: *const Function) -> Result<(), CuError> {
        let f = function(f)?;
        // SAFETY: the caller's output pointer; the name lives as long as the function.
        unsafe { out(name, f.name.as_ptr()) }
    }

    fn cuKernelGetName(name: *mut *const c_char, k: *const Function) -> Result<(), CuError> {
        // SAFETY: the same contract as cuFuncGetName's.
        match unsafe { cuFuncGetName(name, k) } {
            0 => Ok(()),
            e => Err(CuError(e)),
        }
    }

    fn cuFuncGetModule(m: *mut *mut Module, f: *const Function) -> Result<(), CuError> {
        let f = function(f)?;
        if f.module == 0 {
            // A kernel of the runtime's registered code: its module is the runtime's own.
            return Err(CuError::NOT_FOUND);
        }
        // SAFETY: the caller's output pointer.
        unsafe { out(m, f.module as *mut Module) }
    }

    fn cuKernelGetLibrary(lib: *mut *mut Module, k: *const Function) -> Result<(), CuError> {
        // SAFETY: the same contract as cuFuncGetModule's.
        match unsafe { cuFuncGetModule(lib, k) } {
            0 => Ok(()),
            e => Err(CuError(e)),
        }
    }

    fn cuKernelGetParamInfo(k: *const Function, index: usize, offset: *mut usize, size: *mut usize) -> Result<(), CuError> {
        // SAFETY: the same contract as cuFuncGetParamInfo's.
        match unsafe { cuFuncGetParamInfo(k, index, offset, size) } {
            0 => Ok(()),
            e => Err(CuError(e)),
        }
    }
}

/// `CUlaunchConfig`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUlaunchConfig {
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared_mem: c_uint,
    pub(crate) stream: cudaStream_t,
    attrs: *const CUlaunchAttribute,
    num_attrs: c_uint,
}

entry_lib! {
    fn cuLaunchKernelEx(config: *const CUlaunchConfig, f: *const Function, args: *mut *mut c_void, extra: *mut *mut c_void) -> Result<(), CuError> {
        // SAFETY: the caller's launch configuration, checked for null.
        let cfg = unsafe { config.as_ref() }.ok_or(CuError::INVALID_VALUE)?;
        if cfg.num_attrs > 0 {
            if cfg.attrs.is_null() {
                return Err(CuError::INVALID_VALUE);
            }
            // SAFETY: `num_attrs` attributes at `attrs` (the driver API's contract).
            let attrs = unsafe { std::slice::from_raw_parts(cfg.attrs, cfg.num_attrs as usize) };
            if let Some(a) = attrs.iter().find(|a| !plain_launch_attribute(a)) {
                log::warn!("cuLaunchKernelEx: launch attribute {} is not supported", a.id);
                return Err(CuError::NOT_SUPPORTED);
            }
        }
        let attrs: &[CUlaunchAttribute] = if cfg.num_attrs > 0 {
            // SAFETY: as above.
            unsafe { std::slice::from_raw_parts(cfg.attrs, cfg.num_attrs as usize) }
        } else {
            &[]
        };
        let cooperative = cooperative_requested(attrs);
        launch(f, cfg.grid, cfg.block, cfg.shared_mem, cfg.stream, args, extra, cooperative)?;
        for e in launch_events(attrs) {
            // SAFETY: the runtime checks the handles.
            unsafe { crate::core::stream::event_record_call(e as cudaEvent_t, cfg.stream) }.map_err(crate::error::CuError::from)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wrappers are vcuda-fatbin's builder for sm_90 (whose own test checks the entry
    /// header nvcc writes).
    #[test]
    fn a_wrapped_ptx_entry_is_the_builders_for_sm_90() {
        let ptx = b"//\n.version 8.5\n.target sm_90\n.address_size 64\n\0";
        assert_eq!(ptx_fatbin(ptx), vcuda_fatbin::ptx_fatbin(&[ptx], 90));
        let units: [&[u8]; 2] = [ptx, b".version 8.5\n.target sm_90\n\0"];
        assert_eq!(
            ptx_units_fatbin(&units),
            vcuda_fatbin::ptx_fatbin(&units, 90)
        );
    }
}
