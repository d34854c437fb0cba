// SPDX-License-Identifier: Apache-2.0 OR MIT
//! CUDA fat binary parsing: wrappers, entries, decompression and kernel parameter layouts.
//!
//! An `nvcc -cudart=shared` program hands `__cudaRegisterFatBinary` a pointer to a 24-byte
//! wrapper (`.nvFatBinSegment`) whose `data` field points at a fat binary (`.nv_fatbin`). This
//! crate turns that into something the rest of vcuda can use:
//!
//! * [`fatbin_from_wrapper`] finds the bytes and their length in the guest process, trusting
//!   nothing but the headers it checks, and [`prelinked_fatbins`] the per-unit fat binaries
//!   (with their PTX) of a device-linked `-rdc` program (the only `unsafe` functions).
//! * [`parse`] splits one or more concatenated fat binaries into [`Entry`]s (PTX, cubin ELF,
//!   LTO-IR), and [`Entry::data`] / [`Entry::ptx_text`] decompress them (LZ4 raw block or zstd
//!   frame) with every size bounded.
//! * [`cubin::kernel_params`] reads each kernel's parameter layout from a cubin's `.nv.info.*`
//!   sections; [`ptx::entry_params`] computes the same from PTX `.entry` declarations.
//! * [`kernel_layouts`] combines both, preferring cubin information, into the table the guest
//!   library uses to marshal `void** args` into one buffer ([`ParamLayout::pack`]).
//!
//! Every parser here takes untrusted bytes: malformed input gives an error, never a panic, an
//! out-of-bounds read or an unbounded allocation.
//!
//! # Format
//!
//! All integers are little-endian. A fat binary is a 16-byte header
//! `{u32 magic 0xBA55ED50, u16 version 1, u16 header_size, u64 fat_size}` followed by
//! `fat_size` bytes of entries. Each entry starts with a header of at least 64 bytes (its own
//! `header_size`; 64/80 in CUDA 13, 72/88 in CUDA 12.4, longer with `-G`):
//!
//! | offset | type | field |
//! |---|---|---|
//! | 0x00 | u16 | kind: 1 PTX, 2 ELF cubin, 8 LTO-IR |
//! | 0x04 | u32 | header size |
//! | 0x08 | u64 | payload size (padded to 8) |
//! | 0x10 | u32 | compressed size (0 when not compressed) |
//! | 0x14 | u32 | PTX: offset in the header of the ptxas options `{u32 offset, u32 len}` |
//! | 0x18 | u16, u16 | minor, major version (PTX ISA for PTX, ELF ABI 1.7/1.8 for cubins) |
//! | 0x1c | u32 | arch (90 = sm_90) |
//! | 0x20 | u32, u32 | offset and length in the header of the source file name (`-G`) |
//! | 0x28 | u64 | flags ([`EntryFlags`]) |
//! | 0x38 | u64 | decompressed size (0 when not compressed) |

mod build;
mod container;
pub mod cubin;
mod layout;
pub mod ptx;
mod wrapper;

pub use build::{ptx_fatbin, without_foreign_cubins};
pub use container::{
    Compression, Container, Entry, EntryFlags, EntryKind, FATBIN_MAGIC, Fatbin, FatbinError,
    MAX_DECOMPRESSED_SIZE, MAX_FATBIN_SIZE, MAX_LINK_UNITS, fatbin_len, parse,
};
pub use layout::{LayoutError, LayoutSource, Param, ParamLayout, kernel_layouts, module_variables};
pub use wrapper::{
    MAX_PRELINKED, WRAPPER_LINK_VERSION, WRAPPER_MAGIC, WRAPPER_VERSION, fatbin_from_wrapper,
    prelinked_fatbins,
};

/// Largest kernel parameter buffer accepted anywhere in this crate: 64 KiB, the size of
/// constant bank 0 (CUDA 12.1+ allows 32764 bytes of parameters).
pub const MAX_PARAM_BYTES: u32 = 64 * 1024;

/// Reads a little-endian integer at `off`, or `None` when out of bounds.
pub(crate) fn le<const N: usize>(b: &[u8], off: usize) -> Option<[u8; N]> {
    b.get(off..off.checked_add(N)?)?.try_into().ok()
}

pub(crate) fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    le(b, off).map(u16::from_le_bytes)
}

pub(crate) fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    le(b, off).map(u32::from_le_bytes)
}

pub(crate) fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    le(b, off).map(u64::from_le_bytes)
}
