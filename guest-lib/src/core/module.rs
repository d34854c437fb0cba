// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Modules and libraries: loading images (fat binaries, nvcc's wrappers around them, PTX),
//! the kernels and globals in them, and libraries, which belong to the process and are
//! loaded again after a device reset. The driver's `cuModule*`/`cuLibrary*` and the
//! runtime's `cudaLibrary*` are shims over these.

use std::ffi::c_uint;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use vcuda_protocol::{
    FunctionGetReq, FunctionGetResp, HandleReq, MODULE_HAS_DATA, ModuleFunctionReq,
    ModuleFunctionResp, ModuleLoadReq, PARAMS_UNKNOWN, ParamInfo, TensorMapEncodeReq,
    TensorMapReplaceReq, ops,
};
use zerocopy::FromBytes;

use crate::client::{self, Client};
use crate::core::context::{current, disown, own};
use crate::core::function::Function;
use crate::error::CuError;

/// A loaded module: the backend's handle and the functions looked up in it.
pub struct Module {
    /// The session generation it was loaded in, and the backend's handle there.
    loaded: std::sync::Mutex<(u64, u64)>,
    /// A library's image (`cuLibraryLoadData`): a library belongs to the process, not to a
    /// context, so it outlives a primary context reset and is loaded again after one.
    image: Option<Box<[u8]>>,
    functions: std::sync::Mutex<Vec<Arc<Function>>>,
    /// `__managed__` variables handed out (`cuLibraryGetManaged`): name, address, size. The
    /// memory is kept for the process; a reload binds the module to it again.
    managed: std::sync::Mutex<Vec<(String, u64, u64)>>,
    /// Its kernels' names, once asked for (`cuModuleEnumerateFunctions`).
    names: std::sync::OnceLock<Vec<String>>,
    /// The `__managed__` variables a library's PTX declares, read from its image on the
    /// first `cuModuleGetGlobal` (see [`get_global`]).
    managed_names: std::sync::OnceLock<Vec<String>>,
    /// Addresses of the variables handed out by [`get_global`] in the current generation,
    /// recorded as device memory until the module unloads.
    globals: std::sync::Mutex<Vec<u64>>,
}

/// Libraries (`cuLibraryLoadData`), which no context owns.
static LIBRARIES: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

impl Module {
    /// The backend's handle in the session's current generation: a library is loaded again
    /// after a device reset; a context's module is gone with it (`CUDA_ERROR_INVALID_HANDLE`).
    fn handle(&self, c: &Client) -> Result<u64, CuError> {
        let mut g = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        let generation = c.generation();
        if g.0 == generation {
            return Ok(g.1);
        }
        let image = self.image.as_deref().ok_or(CuError::INVALID_HANDLE)?;
        let h = load_image(c, image)?;
        *g = (generation, h);
        // A device reset forgot the variables' ranges with the rest of device memory.
        self.globals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        // The kernels the program holds (`CUkernel`s the runtime caches) follow the library.
        for f in self
            .functions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            match function_get(c, h, f.name.to_bytes()) {
                Ok((resp, _)) => f.rebind(resp.handle),
                Err(e) => log::debug!("kernel {:?} after a reload: {e:?}", f.name),
            }
        }
        for (name, addr, size) in self
            .managed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            if crate::shared::maps_managed(c)
                && let Err(e) = crate::core::registry::bind_symbol(c, h, name, *addr, *size)
            {
                log::debug!("managed variable {name} after a reload: {e:?}");
            }
        }
        Ok(h)
    }
}

/// The backend's answer for kernel `name` of module `module`: its handle, layout size and
/// attributes, and its parameters' offsets and sizes.
fn function_get(
    c: &Client,
    module: u64,
    name: &[u8],
) -> Result<(FunctionGetResp, Vec<(u32, u32)>), CuError> {
    let p = c.call_raw::<ops::FunctionGet>(&FunctionGetReq { module }, name, &[], &mut [])?;
    let (resp, tail) = FunctionGetResp::read_from_prefix(&p).map_err(|_| CuError(999))?;
    if resp.n_params == PARAMS_UNKNOWN {
        log::error!(
            "no parameter layout for kernel {}",
            String::from_utf8_lossy(name)
        );
        return Err(CuError::NOT_SUPPORTED);
    }
    let infos = <[ParamInfo]>::ref_from_bytes(tail).map_err(|_| CuError(999))?;
    Ok((resp, infos.iter().map(|p| (p.offset, p.size)).collect()))
}

/// The session, for a driver call: a current context and no sticky error.
pub(crate) fn session() -> Result<&'static Client, CuError> {
    current()?;
    let c = client::client()?;
    c.check_sticky()?;
    Ok(c)
}

/// The magic of a fat binary and of an ELF file.
pub(crate) const FATBIN_MAGIC: u32 = 0xBA55_ED50;
pub(crate) const ELF_MAGIC: u32 = 0x464C_457F;

/// The length of a fat binary whose header gives `size` bytes of payload (the 16-byte header
/// and that, at most [`vcuda_fatbin::MAX_FATBIN_SIZE`]; what is sent, less the cubins for
/// other GPUs, must also fit in one request: [`crate::core::registry::image_fits`]).
pub(crate) fn fatbin_len(size: u64) -> Result<usize, CuError> {
    size.checked_add(16)
        .filter(|&s| s <= vcuda_fatbin::MAX_FATBIN_SIZE)
        .and_then(|s| usize::try_from(s).ok())
        .ok_or(CuError::INVALID_IMAGE)
}

/// The module image at the start of `bytes` (a file's contents): a fat binary, or PTX text
/// up to and with its NUL.
fn image_in(bytes: &[u8]) -> Result<&[u8], CuError> {
    let word = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap_or_default()))
    };
    match word(0) {
        Some(FATBIN_MAGIC) => {
            let size = bytes
                .get(8..16)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
                .ok_or(CuError::INVALID_IMAGE)?;
            bytes.get(..fatbin_len(size)?).ok_or(CuError::INVALID_IMAGE)
        }
        Some(ELF_MAGIC) => bytes.get(..elf_len(bytes)?).ok_or(CuError::INVALID_IMAGE),
        _ => {
            let nul = bytes
                .iter()
                .position(|&b| b == 0)
                .ok_or(CuError::INVALID_IMAGE)?;
            Ok(&bytes[..=nul])
        }
    }
}

/// [`vcuda_fatbin::cubin::elf_tables_end`]: where a bare cubin's header tables end, from
/// its 64-byte header (a cubin carries no size; its tables lie inside it).
pub(crate) fn elf_tables_end(h: &[u8]) -> Result<usize, CuError> {
    vcuda_fatbin::cubin::elf_tables_end(h).map_err(|_| CuError::INVALID_IMAGE)
}

/// [`vcuda_fatbin::cubin::elf_len`]: the length of the bare cubin `b` starts with (`b`
/// holds at least its header tables).
pub(crate) fn elf_len(b: &[u8]) -> Result<usize, CuError> {
    vcuda_fatbin::cubin::elf_len(b).map_err(|_| CuError::INVALID_IMAGE)
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

/// Loads the module of a fat binary and the units of a device-linked program (nvcc's
/// wrapper, which `abi` reads), as the runtime's registration does.
pub(crate) fn load_units(
    bytes: &[u8],
    units: &[&[u8]],
    library: bool,
) -> Result<*mut Module, CuError> {
    if units.is_empty() {
        return load_bytes(bytes, library);
    }
    // Fat binary sizes are multiples of 8, so each one stays aligned.
    let mut all = bytes.to_vec();
    for u in units {
        all.extend_from_slice(u);
    }
    load_bytes(&all, library)
}

/// Loads a module from `bytes`: a fat binary, or PTX text (with its NUL); a library keeps
/// its image (see [`Module::handle`]).
pub(crate) fn load_bytes(bytes: &[u8], library: bool) -> Result<*mut Module, CuError> {
    let c = session()?;
    let handle = load_image(c, bytes)?;
    let m = Box::into_raw(Box::new(Module {
        loaded: std::sync::Mutex::new((c.generation(), handle)),
        image: library.then(|| bytes.into()),
        functions: std::sync::Mutex::default(),
        managed: std::sync::Mutex::default(),
        names: std::sync::OnceLock::new(),
        managed_names: std::sync::OnceLock::new(),
        globals: std::sync::Mutex::new(Vec::new()),
    }));
    if library {
        LIBRARIES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(m as usize);
    } else if let Err(e) = own(|o| o.modules.push(m as usize)) {
        unload(m as usize);
        return Err(e);
    }
    Ok(m)
}

/// Loads `bytes` (a fat binary, a bare cubin, or PTX text) into the backend: its handle.
/// A cubin goes as it is (a GPU's driver loads it; the CPU executor, which runs PTX,
/// refuses it with `CUDA_ERROR_NO_BINARY_FOR_GPU`).
fn load_image(c: &Client, bytes: &[u8]) -> Result<u64, CuError> {
    let wrapped;
    let bytes = if bytes.starts_with(&ELF_MAGIC.to_le_bytes()) {
        bytes
    } else if bytes.starts_with(&FATBIN_MAGIC.to_le_bytes()) {
        match crate::core::registry::for_devices(c, bytes) {
            Some(kept) => {
                wrapped = kept;
                &wrapped
            }
            None => bytes,
        }
    } else {
        wrapped = ptx_fatbin(bytes);
        &wrapped
    };
    if !crate::core::registry::image_fits(bytes.len()) {
        return Err(CuError::INVALID_IMAGE);
    }
    let req = ModuleLoadReq {
        hash: Sha256::digest(bytes).into(),
        size: bytes.len() as u64,
        flags: MODULE_HAS_DATA,
        reserved: 0,
    };
    let resp = c.call_with::<ops::ModuleLoad>(&req, &[], &[bytes], &mut [])?;
    Ok(resp.handle)
}

/// Unloads a module made by [`load`] (once).
pub fn unload(m: usize) {
    // Its kernels stop being `cudaKernel_t`s the runtime takes before they are freed.
    crate::core::library::forget_module(m);
    // SAFETY: `m` came from `Box::into_raw` in `load` and its owner gives it up once.
    let m = unsafe { Box::from_raw(m as *mut Module) };
    if let Ok(c) = client::client() {
        let (generation, handle) = *m.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if generation == c.generation() {
            let _ = c.internal(|| c.call::<ops::ModuleUnload>(&HandleReq { handle }));
            for base in m
                .globals
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .drain(..)
            {
                c.mirror.remove(base, |k| k == crate::mirror::Kind::Device);
            }
        }
    }
}

/// Whether `m` is a library (not a context's module).
fn is_library(m: *mut Module) -> bool {
    LIBRARIES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&(m as usize))
}

/// A `__managed__` variable of module `m`: its managed memory (address, size), made on first
/// request. Where the backend maps the program's memory, fresh managed memory that the
/// backend fills from the module and binds the module's kernels to; elsewhere, the
/// variable where the module put it, kept coherent as managed memory by the library.
fn managed_var(c: &Client, m: &Module, name: &str) -> Result<(u64, u64), CuError> {
    let mut vars = m.managed.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, addr, size)) = vars.iter().find(|v| v.0 == name) {
        return Ok((addr, size));
    }
    let h = m.handle(c)?;
    let (ptr, size) = crate::core::registry::symbol(c, h, name)?;
    let addr = if crate::shared::maps_managed(c) {
        let p = crate::core::alloc::alloc_for_var(size as usize)?;
        crate::core::registry::bind_symbol(c, h, name, p, size)?;
        p
    } else {
        crate::core::registry::adopt_in_place(c, &[(ptr, size)])?;
        ptr
    };
    vars.push((name.to_owned(), addr, size));
    Ok((addr, size))
}

/// The module behind a `CUmodule` of the current context, or a library.
fn module<'a>(m: *mut Module) -> Result<&'a Module, CuError> {
    let ok = !m.is_null()
        && (is_library(m) || {
            let mut found = false;
            own(|o| found = o.modules.contains(&(m as usize)))?;
            found
        });
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
            module: m.handle(c)?,
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

/// `cuModuleEnumerateFunctions`: handles of up to `num` of the module's kernels
/// (`has_out`: whether the caller gave an array for them).
pub(crate) fn enumerate(
    has_out: bool,
    num: c_uint,
    mp: *mut Module,
) -> Result<Vec<*const Function>, CuError> {
    let c = session()?;
    let m = module(mp)?;
    if !has_out {
        return Err(CuError::INVALID_VALUE);
    }
    kernel_names(c, m)?
        .iter()
        .take(num as usize)
        .map(|name| get_function(mp, name))
        .collect()
}

/// `cuModuleGetFunctionCount`: how many kernels the module holds.
pub(crate) fn function_count(mp: *mut Module) -> Result<c_uint, CuError> {
    let c = session()?;
    let m = module(mp)?;
    Ok(kernel_names(c, m)?.len() as c_uint)
}

/// The function behind a `CUfunction`.
pub(crate) fn function<'a>(f: *const Function) -> Result<&'a Function, CuError> {
    // SAFETY: the driver API's contract: a function handle from cuModuleGetFunction whose
    // module is still loaded (its `Arc` lives in the module's list).
    let f = unsafe { f.as_ref() }.ok_or(CuError::INVALID_HANDLE)?;
    if f.module != 0 {
        // SAFETY: `f` came from its module's list (above), so the module is alive as long
        // as `f` is. A library's kernels follow its reloads after a reset (no lock but the
        // module's own on this launch path).
        let m = unsafe { &*(f.module as *const Module) };
        if m.image.is_some() {
            m.handle(client::client()?)?;
        }
    }
    Ok(f)
}

/// `cuModuleLoad` (and `cuLibraryLoadFromFile`): loads the module image in the file `path`.
pub(crate) fn load_file(path: &std::path::Path, library: bool) -> Result<*mut Module, CuError> {
    let mut bytes = std::fs::read(path).map_err(|_| CuError(301))?; // CUDA_ERROR_FILE_NOT_FOUND
    // As for an image in memory: the context and sticky error before the image's checks.
    session()?;
    // PTX text must end with its NUL.
    bytes.push(0);
    load_bytes(image_in(&bytes)?, library)
}

/// `cuModuleUnload`: a module of the current context.
pub(crate) fn unload_module(m: *mut Module) -> Result<(), CuError> {
    module(m)?;
    disown(|o| o.modules.retain(|&x| x != m as usize));
    unload(m as usize);
    Ok(())
}

/// `cuLibraryUnload` (and `cudaLibraryUnload`): a library, or a module of the current
/// context.
pub(crate) fn unload_library(lib: *mut Module) -> Result<(), CuError> {
    module(lib)?;
    if is_library(lib) {
        LIBRARIES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&x| x != lib as usize);
    } else {
        disown(|o| o.modules.retain(|&x| x != lib as usize));
    }
    unload(lib as usize);
    Ok(())
}

/// Checks that `m` is a module of the current context or a library.
pub(crate) fn check_module(m: *mut Module) -> Result<(), CuError> {
    module(m).map(|_| ())
}

/// `cuModuleGetFunction` (and `cuLibraryGetKernel`, `cudaLibraryGetKernel`): kernel `name`
/// of module `mp`. The same name gives the same handle, as CUDA's does; the function lives
/// as long as its module.
pub(crate) fn get_function(mp: *mut Module, name: &str) -> Result<*const Function, CuError> {
    let c = session()?;
    let m = module(mp)?;
    let known = m
        .functions
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|f| f.name.as_bytes() == name.as_bytes())
        .map(Arc::as_ptr);
    if let Some(ptr) = known {
        return Ok(ptr);
    }
    let (resp, params) = function_get(c, m.handle(c)?, name.as_bytes())?;
    let f = Arc::new(Function {
        handle: resp.handle.into(),
        params,
        param_size: resp.param_size,
        attrs: resp.attrs,
        name: std::ffi::CString::new(name).map_err(|_| CuError::NOT_FOUND)?,
        module: mp as usize,
    });
    let ptr = Arc::as_ptr(&f);
    m.functions
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(f);
    Ok(ptr)
}

/// `cuModuleGetGlobal` (and `cuLibraryGetGlobal`, `cudaLibraryGetGlobal`): variable `name`
/// of module `m`, its address and size.
///
/// A `__managed__` variable of a library is its managed memory, as [`get_managed`] gives
/// it: the driver keeps such variables in managed memory, and CUDA 12's static runtime
/// finds them with `cuModuleGetGlobal` and reads and writes them from the host through the
/// address it returns.
pub(crate) fn get_global(m: *mut Module, name: &str) -> Result<(u64, u64), CuError> {
    let c = session()?;
    let m = module(m)?;
    if let Some(image) = &m.image
        && m.managed_names
            .get_or_init(|| managed_names(image))
            .iter()
            .any(|n| n == name)
    {
        return managed_var(c, m, name);
    }
    let (ptr, size) = crate::core::registry::symbol(c, m.handle(c)?, name)?;
    let mut globals = m.globals.lock().unwrap_or_else(|e| e.into_inner());
    if !globals.contains(&ptr) {
        crate::core::registry::record_global(c, ptr, size);
        globals.push(ptr);
    }
    Ok((ptr, size))
}

/// The names of the `__managed__` variables (`.attribute(.managed)`) the PTX of `image` (a
/// fat binary, or PTX text) declares.
fn managed_names(image: &[u8]) -> Vec<String> {
    let texts: Vec<std::borrow::Cow<'_, str>> = match vcuda_fatbin::parse(image) {
        Ok(f) => f
            .ptx_units(u32::MAX)
            .map(|units| units.iter().filter_map(|e| e.ptx_text().ok()).collect())
            .unwrap_or_default(),
        Err(_) => image
            .split(|&b| b == 0)
            .next()
            .and_then(|t| std::str::from_utf8(t).ok())
            .map(|t| vec![t.into()])
            .unwrap_or_default(),
    };
    texts
        .iter()
        .flat_map(|t| t.lines())
        .filter(|l| l.contains(".attribute(.managed)"))
        .filter_map(|l| {
            // `.visible .global .attribute(.managed) .align 4 .b8 table[256];`
            let decl = l.split(['=', ';', '[']).next()?;
            decl.split_whitespace().last().map(str::to_owned)
        })
        .collect()
}

/// `cuLibraryGetManaged`: `__managed__` variable `name` of library `lib` (see
/// [`managed_var`]).
pub(crate) fn get_managed(lib: *mut Module, name: &str) -> Result<(u64, u64), CuError> {
    let c = session()?;
    let m = module(lib)?;
    managed_var(c, m, name)
}

/// `cuTensorMapEncodeTiled`: the backend's executor encodes the map, in the layout its
/// kernels read (the driver's on a GPU, the interpreter's on the CPU executor), and checks
/// the arguments as the driver does.
pub fn tensor_map_encode(req: &TensorMapEncodeReq) -> Result<[u64; 16], CuError> {
    Ok(session()?.call::<ops::TensorMapEncode>(req)?.map)
}

/// `cuTensorMapReplaceAddress`.
pub fn tensor_map_replace_address(map: [u64; 16], address: u64) -> Result<[u64; 16], CuError> {
    let req = TensorMapReplaceReq { map, address };
    Ok(session()?.call::<ops::TensorMapReplaceAddress>(&req)?.map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn managed_variables_are_found_in_ptx() {
        let ptx = b".version 8.5\n.target sm_90\n.address_size 64\n\
            .visible .global .attribute(.managed) .align 4 .u32 counter = 5;\n\
            .visible .global .attribute(.managed) .align 4 .b8 table[256];\n\
            .global .attribute(.managed) .align 8 .b8 cfg[16] = {3, 0, 0, 0};\n\
            .visible .global .align 4 .u32 plain;\n\0";
        let want = ["counter", "table", "cfg"];
        assert_eq!(managed_names(ptx), want);
        assert_eq!(managed_names(&ptx_fatbin(ptx)), want);
        assert!(managed_names(b"\x7fELF").is_empty());
    }

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

    /// A file's contents: a fat binary up to the size its header gives, PTX up to its NUL,
    /// and neither an ELF cubin nor a header that claims more than the file holds.
    #[test]
    fn a_bare_cubins_length_is_its_last_table_section_or_segment() {
        // Header, a 100-byte section at 64, a NOBITS section claiming 4 KiB at 164, the
        // section table (3 entries) at 200, one segment reaching 520.
        let mut b = vec![0u8; 200 + 3 * 64 + 56];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        let put = |b: &mut Vec<u8>, at: usize, v: u64, n: usize| {
            b[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
        };
        put(&mut b, 0x28, 200, 8);
        put(&mut b, 0x3a, 64, 2);
        put(&mut b, 0x3c, 3, 2);
        put(&mut b, 0x20, 392, 8);
        put(&mut b, 0x36, 56, 2);
        put(&mut b, 0x38, 1, 2);
        put(&mut b, 200 + 64 + 4, 1, 4);
        put(&mut b, 200 + 64 + 0x18, 64, 8);
        put(&mut b, 200 + 64 + 0x20, 100, 8);
        put(&mut b, 200 + 128 + 4, 8, 4);
        put(&mut b, 200 + 128 + 0x18, 164, 8);
        put(&mut b, 200 + 128 + 0x20, 4096, 8);
        put(&mut b, 392 + 8, 400, 8);
        put(&mut b, 392 + 0x20, 120, 8);
        assert_eq!(elf_tables_end(&b[..64]), Ok(448));
        assert_eq!(elf_len(&b), Ok(520));
        b.resize(520, 0);
        let mut file = b.clone();
        file.extend_from_slice(b"trailing bytes");
        assert_eq!(image_in(&file).unwrap(), &b[..]);
        // A section past the largest cubin taken, and tables that overflow.
        let mut huge = b.clone();
        put(&mut huge, 200 + 64 + 0x20, 1 << 31, 8);
        assert_eq!(elf_len(&huge), Err(CuError::INVALID_IMAGE));
        put(&mut huge, 0x28, u64::MAX - 8, 8);
        assert_eq!(elf_tables_end(&huge), Err(CuError::INVALID_IMAGE));
    }

    #[test]
    fn an_image_is_found_in_a_files_bytes() {
        let fat = ptx_fatbin(b".version 8.5\n\0");
        let mut file = fat.clone();
        file.extend_from_slice(b"trailing bytes\0");
        assert_eq!(image_in(&file).unwrap(), &fat[..]);
        let mut short = fat.clone();
        short.truncate(fat.len() - 1);
        assert_eq!(image_in(&short).err(), Some(CuError::INVALID_IMAGE));
        assert_eq!(
            image_in(b"\x50\xed\x55\xba\x01\x00").err(),
            Some(CuError::INVALID_IMAGE)
        );
        assert_eq!(image_in(b".version 8.5\0junk").unwrap(), b".version 8.5\0");
        assert_eq!(image_in(b"no nul").err(), Some(CuError::INVALID_IMAGE));
        assert_eq!(
            image_in(b"\x7fELF\x02\x01").err(),
            Some(CuError::INVALID_IMAGE)
        );
        let huge = [
            &FATBIN_MAGIC.to_le_bytes()[..],
            &[0; 4],
            &u64::MAX.to_le_bytes(),
        ]
        .concat();
        assert_eq!(image_in(&huge).err(), Some(CuError::INVALID_IMAGE));
    }
}
