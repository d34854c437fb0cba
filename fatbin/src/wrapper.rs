// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The `__fatBinC_Wrapper_t` that `__cudaRegisterFatBinary` receives.

use std::{ffi::c_void, mem::align_of, ptr, slice};

use crate::{FatbinError, fatbin_len, parse};

/// Magic number of a fat binary wrapper (`FATBINC_MAGIC`).
pub const WRAPPER_MAGIC: u32 = 0x4662_43B1;
/// Wrapper version of one translation unit (`FATBINC_VERSION`).
pub const WRAPPER_VERSION: u32 = 1;
/// Wrapper version of a device-linked (`-rdc`) program (`FATBINC_LINK_VERSION`).
pub const WRAPPER_LINK_VERSION: u32 = 2;

/// `__fatBinC_Wrapper_t` from `fatbinary_section.h`.
#[repr(C)]
struct Wrapper {
    magic: u32,
    version: u32,
    data: *const u64,
    /// Version 1: an offline file name; version 2: the array of prelinked fat binaries.
    filename_or_fatbins: *const c_void,
}

const _: () = assert!(std::mem::size_of::<Wrapper>() == 24);

/// Finds the fat binary that a `__cudaRegisterFatBinary` wrapper points to and returns its
/// bytes, header included.
///
/// The length is the one the fat binary header declares (`header_size + fat_size`); nothing
/// past it is read. A wrapper's `data` points at exactly one fat binary: CUDA 13 places
/// another wrapper's fat binary right before or after it in `.nv_fatbin`, so following
/// headers beyond the declared size would swallow fat binaries that belong to someone else.
/// Before returning, the entry headers inside are walked (all within the declared length) and
/// checked with [`parse`].
///
/// # Errors
///
/// A null or misaligned pointer, a bad wrapper magic or version (1 and 2 are accepted), a bad
/// fat binary header, a size above [`crate::MAX_FATBIN_SIZE`], or malformed entry headers.
///
/// # Safety
///
/// `wrapper` must be null or point to a readable, 8-byte aligned 24-byte wrapper
/// `{i32 magic; i32 version; const u64* data; void* filename_or_fatbins}` as nvcc emits in
/// `.nvFatBinSegment`. When its magic and version are valid, `data` must be null or point to
/// at least 16 readable bytes, and if those form a valid fat binary header, to the whole
/// `header_size + fat_size` bytes it declares. That memory must not be written while the
/// returned slice (lifetime `'a`, chosen by the caller) is alive. Registered fat binaries
/// live in the program's read-only image until it unloads, so `'static` is right for them.
pub unsafe fn fatbin_from_wrapper<'a>(wrapper: *const c_void) -> Result<&'a [u8], FatbinError> {
    // SAFETY: the caller's contract.
    let w = unsafe { read_wrapper(wrapper) }?;
    // SAFETY: the caller's contract covers `data` (see above).
    unsafe { fatbin_at(w.data.cast::<u8>()) }
}

/// Reads the wrapper at `wrapper`, checking its magic and version.
///
/// # Safety
///
/// As [`fatbin_from_wrapper`]: `wrapper` is null or points to a readable 24-byte wrapper.
unsafe fn read_wrapper(wrapper: *const c_void) -> Result<Wrapper, FatbinError> {
    let wrapper = wrapper.cast::<Wrapper>();
    if wrapper.is_null() {
        return Err(FatbinError::NullPointer);
    }
    if !wrapper.is_aligned() {
        return Err(FatbinError::BadPointer(wrapper as usize));
    }
    // SAFETY: the caller guarantees a non-null wrapper points to 24 readable bytes; it is
    // aligned (checked above) and every bit pattern is a valid `Wrapper` (integers and raw
    // pointers), so reading it is sound. Nothing is dereferenced yet.
    let w = unsafe { ptr::read(wrapper) };
    if w.magic != WRAPPER_MAGIC {
        return Err(FatbinError::BadWrapperMagic(w.magic));
    }
    if w.version != WRAPPER_VERSION && w.version != WRAPPER_LINK_VERSION {
        return Err(FatbinError::BadWrapperVersion(w.version));
    }
    Ok(w)
}

/// The fat binary whose header is at `data`, checked with [`parse`].
///
/// # Safety
///
/// `data` is null or points to at least 16 readable bytes, and if those form a valid fat
/// binary header, to the whole `header_size + fat_size` bytes it declares, unchanged for
/// `'a`.
unsafe fn fatbin_at<'a>(data: *const u8) -> Result<&'a [u8], FatbinError> {
    if data.is_null() {
        return Err(FatbinError::NullPointer);
    }
    if !(data as usize).is_multiple_of(align_of::<u64>()) {
        return Err(FatbinError::BadPointer(data as usize));
    }
    // SAFETY: with a valid magic and version the caller guarantees `data` points to at least
    // 16 readable bytes, unchanged while we read; u8 has no alignment or validity needs.
    let header = unsafe { slice::from_raw_parts(data, 16) };
    let len = fatbin_len(header)?;
    // fatbin_len caps len at MAX_FATBIN_SIZE (1 GiB), far below isize::MAX; the range must
    // not wrap around the address space either.
    if (data as usize).checked_add(len).is_none() {
        return Err(FatbinError::BadPointer(data as usize));
    }
    // SAFETY: the header is valid (checked by fatbin_len), so the caller guarantees `len`
    // readable bytes at `data`, not written for 'a; `len` <= 1 GiB < isize::MAX and the range
    // does not wrap (checked above).
    let bytes = unsafe { slice::from_raw_parts(data, len) };
    parse(bytes)?;
    Ok(bytes)
}

/// Most prelinked fat binaries followed from one link wrapper (one per translation unit).
pub const MAX_PRELINKED: usize = 1 << 16;

/// The prelinked fat binaries of a device-linked (`-rdc`) program: one per translation unit,
/// each holding that unit's relocatable cubin and its PTX. A version-2 wrapper's data is the
/// device-linked image (cubins only, no PTX); nvcc's link stub fills its second field with
/// a NULL-terminated array of pointers to the units' fat binaries before it registers the
/// wrapper. A version-1 wrapper has none (an empty list).
///
/// # Errors
///
/// A bad wrapper (as [`fatbin_from_wrapper`]), a misaligned array, more than
/// [`MAX_PRELINKED`] entries, or a unit whose fat binary is malformed.
///
/// # Safety
///
/// As [`fatbin_from_wrapper`]; for a version-2 wrapper, its second field is null or points to
/// a readable, NULL-terminated array of pointers, each to a fat binary as `data` must be.
pub unsafe fn prelinked_fatbins<'a>(wrapper: *const c_void) -> Result<Vec<&'a [u8]>, FatbinError> {
    // SAFETY: the caller's contract.
    let w = unsafe { read_wrapper(wrapper) }?;
    if w.version != WRAPPER_LINK_VERSION || w.filename_or_fatbins.is_null() {
        return Ok(Vec::new());
    }
    let list = w.filename_or_fatbins.cast::<*const u8>();
    if !list.is_aligned() {
        return Err(FatbinError::BadPointer(list as usize));
    }
    let mut out = Vec::new();
    for i in 0..=MAX_PRELINKED {
        // SAFETY: the caller guarantees a NULL-terminated array: every index up to and
        // including the terminator is readable, and we stop at the terminator. `i` stays
        // far below isize::MAX / 8.
        let unit = unsafe { ptr::read(list.add(i)) };
        if unit.is_null() {
            return Ok(out);
        }
        if i == MAX_PRELINKED {
            break;
        }
        // SAFETY: each array element points to a fat binary (the caller's contract).
        out.push(unsafe { fatbin_at(unit) }?);
    }
    // More units than any program has: a corrupt or hostile list.
    Err(FatbinError::TooLarge {
        size: MAX_PRELINKED as u64 + 1,
        limit: MAX_PRELINKED as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls [`fatbin_from_wrapper`] on `w`; the tests keep `w.data` null or pointing at a
    /// live array that holds every byte its header declares.
    fn call(w: &Wrapper) -> Result<usize, FatbinError> {
        // SAFETY: `w` is a live, aligned wrapper and its data pointer is valid (see above).
        unsafe { fatbin_from_wrapper(ptr::from_ref(w).cast()) }.map(<[u8]>::len)
    }

    #[test]
    fn rejects_bad_wrappers() {
        // An 8-byte aligned fat binary: header + one 64-byte entry header with no payload.
        let mut data = [0u64; 12];
        data[0] = 0x0010_0001_ba55_ed50;
        data[1] = 64;
        data[2] = 0x0000_0040_0101_0002;
        let mut w = Wrapper {
            magic: WRAPPER_MAGIC,
            version: 1,
            data: data.as_ptr(),
            filename_or_fatbins: ptr::null(),
        };
        assert_eq!(call(&w).unwrap(), 80);
        w.version = 3;
        assert!(matches!(call(&w), Err(FatbinError::BadWrapperVersion(3))));
        w.version = 2;
        data[1] = 1 << 40; // rejected before the length is used
        w.data = data.as_ptr();
        assert!(matches!(call(&w), Err(FatbinError::TooLarge { .. })));
        data[1] = 72; // more than the entries fill: the parse fails inside the declared bytes
        w.data = data.as_ptr();
        assert!(matches!(call(&w), Err(FatbinError::BadHeaderSize { .. })));
        w.data = data[1..].as_ptr().cast::<u8>().wrapping_add(4).cast();
        assert!(matches!(call(&w), Err(FatbinError::BadPointer(_))));
        w.data = ptr::null();
        assert!(matches!(call(&w), Err(FatbinError::NullPointer)));
        w.magic = 0;
        assert!(matches!(call(&w), Err(FatbinError::BadWrapperMagic(0))));
        // SAFETY: a null wrapper is allowed by the contract.
        let null = unsafe { fatbin_from_wrapper(ptr::null()) };
        assert!(matches!(null, Err(FatbinError::NullPointer)));
    }

    #[test]
    fn prelinked_units_are_followed_to_the_terminator() {
        let mut data = [0u64; 10];
        data[0] = 0x0010_0001_ba55_ed50;
        data[1] = 64;
        data[2] = 0x0000_0040_0101_0002;
        let unit = data.as_ptr().cast::<u8>();
        let list = [unit, unit, ptr::null()];
        let mut w = Wrapper {
            magic: WRAPPER_MAGIC,
            version: WRAPPER_LINK_VERSION,
            data: data.as_ptr(),
            filename_or_fatbins: list.as_ptr().cast(),
        };
        let units = |w: &Wrapper| {
            // SAFETY: `w` is live and aligned, `list` is NULL-terminated and each element
            // points at `data`, which holds every byte its header declares.
            unsafe { prelinked_fatbins(ptr::from_ref(w).cast()) }
        };
        let got = units(&w).unwrap();
        assert_eq!(got.iter().map(|u| u.len()).collect::<Vec<_>>(), [80, 80]);
        w.version = WRAPPER_VERSION;
        assert!(units(&w).unwrap().is_empty());
        w.version = WRAPPER_LINK_VERSION;
        w.filename_or_fatbins = ptr::null();
        assert!(units(&w).unwrap().is_empty());
        let bad = [data[1..].as_ptr().cast::<u8>(), ptr::null()];
        w.filename_or_fatbins = bad.as_ptr().cast();
        assert!(matches!(units(&w), Err(FatbinError::BadMagic { .. })));
    }
}
