// SPDX-License-Identifier: Apache-2.0 OR MIT
//! C types of the CUDA runtime API and helpers for raw pointers from C.

use std::ffi::{c_int, c_void};

use crate::error::{Error, Result};
pub use crate::error::{cublasStatus_t, cudaError_t, curandStatus_t};

/// `cudaStream_t`.
pub type cudaStream_t = *mut c_void;
/// `cudaEvent_t`.
pub type cudaEvent_t = *mut c_void;

/// `dim3`, passed by value exactly like the C struct.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct dim3 {
    /// x.
    pub x: u32,
    /// y.
    pub y: u32,
    /// z.
    pub z: u32,
}

impl dim3 {
    /// As an array.
    pub fn arr(self) -> [u32; 3] {
        [self.x, self.y, self.z]
    }
}

/// `cudaMemcpyKind`.
pub mod memcpy_kind {
    /// `cudaMemcpyHostToHost`.
    pub const H2H: i32 = 0;
    /// `cudaMemcpyHostToDevice`.
    pub const H2D: i32 = 1;
    /// `cudaMemcpyDeviceToHost`.
    pub const D2H: i32 = 2;
    /// `cudaMemcpyDeviceToDevice`.
    pub const D2D: i32 = 3;
    /// `cudaMemcpyDefault`.
    pub const DEFAULT: i32 = 4;
}

/// `CUdeviceptr`: a device address in the driver API.
pub type CUdeviceptr = u64;

/// `cudaMemHandleTypePosixFileDescriptor`: the only shareable handle type here (memory pools
/// export POSIX descriptors on every executor).
pub const HANDLE_POSIX_FD: c_int = 1;

/// `cudaStreamLegacy`.
pub const STREAM_LEGACY: usize = 0x1;
/// `cudaStreamPerThread`.
pub const STREAM_PER_THREAD: usize = 0x2;

/// `struct cudaFuncAttributes` (the same in CUDA 12 and 13).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct cudaFuncAttributes {
    pub sharedSizeBytes: usize,
    pub constSizeBytes: usize,
    pub localSizeBytes: usize,
    pub maxThreadsPerBlock: c_int,
    pub numRegs: c_int,
    pub ptxVersion: c_int,
    pub binaryVersion: c_int,
    pub cacheModeCA: c_int,
    pub maxDynamicSharedSizeBytes: c_int,
    pub preferredShmemCarveout: c_int,
    pub clusterDimMustBeSet: c_int,
    pub requiredClusterWidth: c_int,
    pub requiredClusterHeight: c_int,
    pub requiredClusterDepth: c_int,
    pub clusterSchedulingPolicyPreference: c_int,
    pub nonPortableClusterSizeAllowed: c_int,
    pub reserved: [c_int; 16],
}
const _: () = assert!(size_of::<cudaFuncAttributes>() == 144);

/// `struct cudaPointerAttributes`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cudaPointerAttributes {
    pub type_: c_int,
    pub device: c_int,
    pub devicePointer: *mut c_void,
    pub hostPointer: *mut c_void,
    pub reserved: [std::ffi::c_long; 8],
}

/// CUDA 12's `struct cudaPointerAttributes` (CUDA 13 appended `reserved`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cudaPointerAttributesV12 {
    pub type_: c_int,
    pub device: c_int,
    pub devicePointer: *mut c_void,
    pub hostPointer: *mut c_void,
}
const _: () = assert!(size_of::<cudaPointerAttributesV12>() == 24);
const _: () = assert!(size_of::<cudaPointerAttributes>() == 88);

/// `cudaMemoryType`.
pub mod memory_type {
    /// Unregistered host memory.
    pub const UNREGISTERED: i32 = 0;
    /// Page-locked host memory.
    pub const HOST: i32 = 1;
    /// Device memory.
    pub const DEVICE: i32 = 2;
    /// Managed memory.
    pub const MANAGED: i32 = 3;
}

/// Writes `v` through an output pointer from C, which may be null.
///
/// # Safety
/// `p` is null or valid for writing a `T` (the CUDA API's contract for output parameters).
pub unsafe fn write_out<T>(p: *mut T, v: T) -> Result<()> {
    if p.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: non-null, and valid for writes by the caller's contract.
    unsafe { p.write_unaligned(v) };
    Ok(())
}

/// Reads the value an input pointer from C points at (null: `INVALID_VALUE`).
///
/// # Safety
/// `p` is null or valid for reading a `T` (the CUDA API's contract for input parameters).
pub unsafe fn read_in<T: Copy>(p: *const T) -> Result<T> {
    if p.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: non-null, and valid for reads by the caller's contract.
    Ok(unsafe { p.read_unaligned() })
}

/// `n` values from C as a slice (null with `n > 0`: `INVALID_VALUE`).
///
/// # Safety
/// `p` is null or valid, and aligned, for reads of `n` values of `T` for `'a`.
pub unsafe fn slice_in<'a, T>(p: *const T, n: usize) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: non-null; valid for `n` values by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// A NUL-terminated string from C (null: `INVALID_VALUE`).
///
/// # Safety
/// `p` is null or a NUL-terminated string valid for `'a`.
pub unsafe fn c_str<'a>(p: *const std::ffi::c_char) -> Result<&'a std::ffi::CStr> {
    if p.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: non-null; NUL-terminated by the caller's contract.
    Ok(unsafe { std::ffi::CStr::from_ptr(p) })
}

/// A file path from C (null: `INVALID_VALUE`).
///
/// # Safety
/// As [`c_str`].
pub unsafe fn c_path<'a>(p: *const std::ffi::c_char) -> Result<&'a std::path::Path> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: the caller's contract.
    let s = unsafe { c_str(p)? };
    Ok(std::path::Path::new(std::ffi::OsStr::from_bytes(
        s.to_bytes(),
    )))
}

/// A host byte range from C as a slice.
///
/// # Safety
/// `p` is valid for reads of `len` bytes for `'a` (the API's contract for source buffers).
pub unsafe fn host_slice<'a>(p: *const c_void, len: usize) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: non-null; valid for `len` bytes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// A writable host byte range from C as a slice.
///
/// # Safety
/// `p` is valid for writes of `len` bytes for `'a` and not otherwise accessed meanwhile.
pub unsafe fn host_slice_mut<'a>(p: *mut c_void, len: usize) -> Result<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: non-null; valid for `len` bytes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// A kernel launch's arguments as C gives them: `kernelParams` (one pointer per kernel
/// parameter) or, where that is null, a `CU_LAUNCH_PARAM_BUFFER_POINTER`/`_SIZE`/`_END`
/// list (`extra`). Read only by [`KernelArgs::pack`], for the kernel they were given for.
#[derive(Clone, Copy, Debug)]
pub struct KernelArgs {
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
}

/// `CU_LAUNCH_PARAM_END`, `CU_LAUNCH_PARAM_BUFFER_POINTER`, `CU_LAUNCH_PARAM_BUFFER_SIZE`.
const PARAM_END: usize = 0;
const PARAM_BUFFER_POINTER: usize = 1;
const PARAM_BUFFER_SIZE: usize = 2;

impl KernelArgs {
    /// The arguments of a launch.
    ///
    /// # Safety
    /// For as long as the value is used, and for the kernel it is packed for: `params` is
    /// null or holds one pointer per parameter, each valid for reads of that parameter's
    /// size; `extra` is null or a list of (key, value) pairs ending with
    /// `CU_LAUNCH_PARAM_END`, whose size value points to a `size_t` and whose buffer holds
    /// at least that many bytes (the CUDA API's contract for its caller).
    pub unsafe fn new(params: *mut *mut c_void, extra: *mut *mut c_void) -> Self {
        Self { params, extra }
    }

    /// No arguments (a kernel without parameters).
    pub fn none() -> Self {
        Self {
            params: std::ptr::null_mut(),
            extra: std::ptr::null_mut(),
        }
    }

    /// The parameter buffer (`size` bytes) of a kernel whose parameters lie at `layout`
    /// (offset, size): copied from `kernelParams`, or from `extra`'s buffer, which must
    /// give its size and hold at least `size` bytes; with neither, only a kernel without
    /// parameters launches.
    pub fn pack(&self, layout: &[(u32, u32)], size: u32) -> Result<Vec<u8>> {
        let mut out = vec![0u8; size as usize];
        if !self.params.is_null() {
            for (i, &(off, len)) in layout.iter().enumerate() {
                // SAFETY: `params` holds one pointer per parameter (`new`'s contract).
                let a = unsafe { self.params.add(i).read_unaligned() };
                if a.is_null() {
                    return Err(Error::INVALID_VALUE);
                }
                let dst = out
                    .get_mut(off as usize..(off as usize + len as usize))
                    .ok_or(Error::INVALID_VALUE)?;
                // SAFETY: `a` points to the parameter, `len` bytes as the kernel declares.
                dst.copy_from_slice(unsafe {
                    std::slice::from_raw_parts(a.cast::<u8>(), len as usize)
                });
            }
        } else if !self.extra.is_null() {
            let (mut buf, mut given) = (std::ptr::null::<u8>(), None);
            let mut i = 0;
            loop {
                // SAFETY: a list of (key, value) pairs ending with END (`new`'s contract).
                let key = unsafe { self.extra.add(i).read_unaligned() } as usize;
                // SAFETY: as above; a key other than END is followed by its value.
                let value = || unsafe { self.extra.add(i + 1).read_unaligned() };
                match key {
                    PARAM_END => break,
                    PARAM_BUFFER_POINTER => buf = value().cast::<u8>(),
                    PARAM_BUFFER_SIZE => {
                        let p = value().cast::<usize>();
                        if p.is_null() {
                            return Err(Error::INVALID_VALUE);
                        }
                        // SAFETY: the size value points to a `size_t` (`new`'s contract).
                        given = Some(unsafe { p.read_unaligned() });
                    }
                    _ => return Err(Error::INVALID_VALUE),
                }
                i += 2;
            }
            if buf.is_null() || given.is_none_or(|l| l < size as usize) {
                return Err(Error::INVALID_VALUE);
            }
            // SAFETY: the caller's buffer of at least `given` >= `size` bytes.
            out.copy_from_slice(unsafe { std::slice::from_raw_parts(buf, size as usize) });
        } else if !layout.is_empty() {
            return Err(Error::INVALID_VALUE);
        }
        Ok(out)
    }
}

/// Writes `s` as a NUL-terminated string into the caller's buffer of `len` bytes,
/// truncated to fit (null or `len` <= 0: `INVALID_VALUE`).
///
/// # Safety
/// `buf` is null or valid for writes of `len` bytes.
pub unsafe fn write_c_string(buf: *mut std::ffi::c_char, len: c_int, s: &str) -> Result<()> {
    if buf.is_null() || len <= 0 {
        return Err(Error::INVALID_VALUE);
    }
    // SAFETY: non-null; the caller's `len` bytes.
    let dst = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len as usize) };
    let n = s.len().min(dst.len() - 1);
    dst[..n].copy_from_slice(&s.as_bytes()[..n]);
    dst[n] = 0;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel of two parameters: 4 bytes at 0, 8 bytes at 8 (16 bytes in all).
    const LAYOUT: [(u32, u32); 2] = [(0, 4), (8, 8)];

    #[test]
    fn kernel_params_are_packed_at_their_offsets() {
        let (mut a, mut b) = (0x1122_3344u32, 0x5566_7788_99aa_bbccu64);
        let mut ptrs = [(&raw mut a).cast::<c_void>(), (&raw mut b).cast::<c_void>()];
        let ptrs = ptrs.as_mut_ptr();
        // SAFETY: one pointer per parameter, each to a value of the parameter's size.
        let args = unsafe { KernelArgs::new(ptrs, std::ptr::null_mut()) };
        let p = args.pack(&LAYOUT, 16).unwrap();
        assert_eq!(&p[..4], &a.to_ne_bytes());
        assert_eq!(&p[4..8], &[0; 4]);
        assert_eq!(&p[8..], &b.to_ne_bytes());
        // SAFETY: the array's second entry, written through the pointer `args` holds.
        unsafe { ptrs.add(1).write(std::ptr::null_mut()) };
        assert_eq!(args.pack(&LAYOUT, 16), Err(Error::INVALID_VALUE));
    }

    #[test]
    fn a_launch_param_list_gives_the_buffer() {
        let mut buf: Vec<u8> = (0..24).collect();
        let mut size = 24usize;
        let size = &raw mut size;
        let mut list = [
            PARAM_BUFFER_POINTER as *mut c_void,
            buf.as_mut_ptr().cast(),
            PARAM_BUFFER_SIZE as *mut c_void,
            size.cast(),
            PARAM_END as *mut c_void,
        ];
        let list = list.as_mut_ptr();
        // SAFETY: a list ending with END; its buffer holds `size` bytes.
        let args = unsafe { KernelArgs::new(std::ptr::null_mut(), list) };
        // Entry `i` of the list, rewritten through the pointer `args` holds.
        let set = |i: usize, v: *mut c_void| {
            // SAFETY: `i` is within the list's five entries.
            unsafe { list.add(i).write(v) }
        };
        assert_eq!(args.pack(&LAYOUT, 16).unwrap(), buf[..16].to_vec());
        // A buffer smaller than the kernel's parameters, or no size given, is refused.
        // SAFETY: the size the list points to.
        unsafe { size.write(8) };
        assert_eq!(args.pack(&LAYOUT, 16), Err(Error::INVALID_VALUE));
        set(3, std::ptr::null_mut());
        assert_eq!(args.pack(&LAYOUT, 16), Err(Error::INVALID_VALUE));
        set(2, PARAM_END as *mut c_void);
        assert_eq!(args.pack(&LAYOUT, 16), Err(Error::INVALID_VALUE));
        set(0, 7 as *mut c_void);
        assert_eq!(args.pack(&LAYOUT, 16), Err(Error::INVALID_VALUE));
    }

    #[test]
    fn without_arguments_only_a_kernel_without_parameters_launches() {
        assert_eq!(KernelArgs::none().pack(&[], 0), Ok(Vec::new()));
        assert_eq!(
            KernelArgs::none().pack(&LAYOUT, 16),
            Err(Error::INVALID_VALUE)
        );
    }

    #[test]
    fn a_c_string_is_truncated_to_the_buffer_with_its_nul() {
        let mut buf = [0x55 as std::ffi::c_char; 8];
        // SAFETY: a buffer of the length given.
        unsafe { write_c_string(buf.as_mut_ptr(), 8, "0000:01:00.0").unwrap() };
        assert_eq!(buf.map(|c| c as u8), *b"0000:01\0");
        // SAFETY: as above.
        unsafe { write_c_string(buf.as_mut_ptr(), 8, "ab").unwrap() };
        assert_eq!(&buf.map(|c| c as u8)[..3], b"ab\0");
        // SAFETY: null and empty buffers are refused before any write.
        unsafe {
            assert_eq!(
                write_c_string(std::ptr::null_mut(), 8, "x"),
                Err(Error::INVALID_VALUE)
            );
            assert_eq!(
                write_c_string(buf.as_mut_ptr(), 0, "x"),
                Err(Error::INVALID_VALUE)
            );
        }
    }
}
