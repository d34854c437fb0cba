// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Fat binary containers and their entries.

use std::{borrow::Cow, fmt, io::Read, str::Utf8Error};

use crate::{u16_at, u32_at, u64_at};

/// Magic number of a fat binary header (`0xBA55ED50`).
pub const FATBIN_MAGIC: u32 = 0xBA55_ED50;
/// The only fat binary header version seen so far.
const FATBIN_VERSION: u16 = 1;
/// Size of the fat binary header.
const FATBIN_HEADER_SIZE: usize = 16;
/// Largest fat binary header we accept (real ones are 16 bytes).
const MAX_FATBIN_HEADER_SIZE: u16 = 256;
/// Smallest entry header: the fields up to and including the decompressed size.
const MIN_ENTRY_HEADER_SIZE: u32 = 0x40;
/// Largest entry header we accept (CUDA 13 `-G` PTX headers are 160 bytes).
const MAX_ENTRY_HEADER_SIZE: u32 = 64 * 1024;

/// Largest fat binary (one container) accepted, 1 GiB.
pub const MAX_FATBIN_SIZE: u64 = 1 << 30;
/// Largest decompressed entry produced by [`Entry::data`], 256 MiB.
pub const MAX_DECOMPRESSED_SIZE: u64 = 256 << 20;
/// Most PTX translation units linked into one module ([`Fatbin::ptx_units`]).
pub const MAX_LINK_UNITS: usize = 4096;
/// LZ4 cannot expand more than 255:1 (plus a few bytes of slack for tiny inputs).
const LZ4_MAX_RATIO: u64 = 255;

/// Errors from parsing fat binaries and decompressing their entries.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FatbinError {
    /// A null wrapper or data pointer.
    #[error("Null pointer")]
    NullPointer,
    /// A misaligned pointer, or one whose range wraps around the address space.
    #[error("Bad pointer {0:#x}")]
    BadPointer(usize),
    /// The wrapper does not start with `0x466243B1`.
    #[error("Bad wrapper magic {0:#x}")]
    BadWrapperMagic(u32),
    /// The wrapper version is neither 1 nor 2.
    #[error("Unsupported wrapper version {0}")]
    BadWrapperVersion(u32),
    /// No fat binary header at `offset`.
    #[error("Bad fat binary magic {magic:#x} at offset {offset}")]
    BadMagic {
        /// Offset in the input.
        offset: usize,
        /// The value found.
        magic: u32,
    },
    /// A fat binary header version other than 1.
    #[error("Unsupported fat binary version {0}")]
    BadVersion(u16),
    /// A header whose size field is too small or too large.
    #[error("Bad header size {size} at offset {offset}")]
    BadHeaderSize {
        /// Offset of the header in the input.
        offset: usize,
        /// The declared size.
        size: u64,
    },
    /// A structure extends past the end of the input or of its container.
    #[error("Truncated at offset {offset}: {need} bytes declared, {have} available")]
    Truncated {
        /// Offset of the structure in the input.
        offset: usize,
        /// Bytes the structure declares.
        need: u64,
        /// Bytes available.
        have: u64,
    },
    /// A declared size above one of the crate's limits.
    #[error("Size {size} exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The declared size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// An entry with both the LZ4 and the zstd flag.
    #[error("Entry flags {0:#x} name two compressions")]
    AmbiguousCompression(u64),
    /// A compressed entry whose sizes do not fit together.
    #[error(
        "Bad compressed sizes: compressed {compressed}, payload {payload}, decompressed {decompressed}"
    )]
    BadCompressedSize {
        /// Declared compressed size.
        compressed: u64,
        /// Payload size.
        payload: u64,
        /// Declared decompressed size.
        decompressed: u64,
    },
    /// LZ4 decompression failed.
    #[error("LZ4 decompression failed")]
    Lz4(#[source] lz4_flex::block::DecompressError),
    /// Zstd decompression failed.
    #[error("Zstd decompression failed")]
    Zstd(#[source] std::io::Error),
    /// Decompression produced more or fewer bytes than declared.
    #[error("Decompressed {actual} bytes, {declared} declared")]
    SizeMismatch {
        /// Declared decompressed size.
        declared: u64,
        /// Bytes produced (capped at `declared + 1`).
        actual: u64,
    },
    /// [`Entry::ptx_text`] on an entry that is not PTX.
    #[error("Not a PTX entry")]
    NotPtx,
    /// The PTX text is not UTF-8.
    #[error("PTX is not UTF-8")]
    PtxUtf8(#[source] Utf8Error),
}

type Result<T, E = FatbinError> = std::result::Result<T, E>;

/// What an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// PTX assembly text (NUL-terminated).
    Ptx,
    /// A cubin: an ELF64 object with SASS for one architecture.
    Cubin,
    /// NVVM IR for link-time optimization (`-gencode code=lto_90`, kind 8).
    LtoIr,
    /// Anything else, with its raw kind number.
    Other(u16),
}

impl From<u16> for EntryKind {
    fn from(v: u16) -> Self {
        match v {
            1 => EntryKind::Ptx,
            2 => EntryKind::Cubin,
            8 => EntryKind::LtoIr,
            v => EntryKind::Other(v),
        }
    }
}

/// How an entry's payload is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Stored as is.
    None,
    /// An LZ4 raw block (CUDA 12 default for PTX; `-Xfatbin -compress-all` for cubins).
    Lz4,
    /// A zstd frame (CUDA 13 default for PTX).
    Zstd,
}

/// An entry's flags word (offset 0x28 of its header).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EntryFlags(pub u64);

impl EntryFlags {
    /// Code for a 64-bit host.
    pub const ADDRESS_64: u64 = 0x1;
    /// Built with debug information (`-G`).
    pub const DEBUG: u64 = 0x2;
    /// Built for Linux.
    pub const LINUX: u64 = 0x10;
    /// Payload is an LZ4 raw block.
    pub const LZ4: u64 = 0x2000;
    /// Payload is a zstd frame.
    pub const ZSTD: u64 = 0x8000;
    /// Arch-specific target (`sm_90a`), measured with CUDA 13.
    pub const ARCH_SPECIFIC: u64 = 0x10_0000;
    /// Family-specific target (`sm_100f`; set together with 0x20_0000), measured with CUDA 13.
    pub const FAMILY_SPECIFIC: u64 = 0x100_0000;

    /// Whether every bit of `mask` is set.
    pub fn contains(self, mask: u64) -> bool {
        self.0 & mask == mask
    }
    /// Code for a 64-bit host.
    pub fn is_64bit(self) -> bool {
        self.contains(Self::ADDRESS_64)
    }
    /// Built with `-G`.
    pub fn is_debug(self) -> bool {
        self.contains(Self::DEBUG)
    }
    /// Built for Linux.
    pub fn is_linux(self) -> bool {
        self.contains(Self::LINUX)
    }
    /// LZ4-compressed payload.
    pub fn is_lz4(self) -> bool {
        self.contains(Self::LZ4)
    }
    /// Zstd-compressed payload.
    pub fn is_zstd(self) -> bool {
        self.contains(Self::ZSTD)
    }
    /// `sm_XXa` code that runs only on exactly that architecture.
    pub fn is_arch_specific(self) -> bool {
        self.contains(Self::ARCH_SPECIFIC)
    }
}

impl fmt::Debug for EntryFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EntryFlags({:#x}", self.0)?;
        for (bit, name) in [
            (Self::ADDRESS_64, "64bit"),
            (Self::DEBUG, "debug"),
            (Self::LINUX, "linux"),
            (Self::LZ4, "lz4"),
            (Self::ZSTD, "zstd"),
            (Self::ARCH_SPECIFIC, "arch-specific"),
            (Self::FAMILY_SPECIFIC, "family-specific"),
        ] {
            if self.contains(bit) {
                write!(f, " {name}")?;
            }
        }
        write!(f, ")")
    }
}

/// One entry of a fat binary: a header and its payload, borrowed from the input.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    /// Offset of the entry header in the bytes given to [`parse`].
    pub offset: usize,
    /// What the payload holds.
    pub kind: EntryKind,
    /// Target architecture, e.g. 90 for `sm_90` / `compute_90`.
    pub arch: u32,
    /// Major version: PTX ISA major for PTX, ELF ABI major for cubins.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
    /// Flags word.
    pub flags: EntryFlags,
    /// Declared compressed size (0 when stored uncompressed).
    pub compressed_size: u32,
    /// Declared decompressed size (0 when stored uncompressed).
    pub decompressed_size: u64,
    /// The whole entry header.
    pub header: &'a [u8],
    /// The payload as stored (padded to 8 bytes; compressed if the flags say so).
    pub payload: &'a [u8],
}

impl<'a> Entry<'a> {
    /// Bytes of the contents once decompressed, as declared (the payload's length when it
    /// is stored uncompressed).
    pub fn contents_size(&self) -> u64 {
        if self.flags.contains(EntryFlags::LZ4) || self.flags.contains(EntryFlags::ZSTD) {
            self.decompressed_size
        } else {
            self.payload.len() as u64
        }
    }

    fn parse(bytes: &'a [u8], offset: usize, end: usize) -> Result<(Self, usize)> {
        let avail = (end - offset) as u64;
        let trunc = |need: u64| FatbinError::Truncated {
            offset,
            need,
            have: avail,
        };
        let b = &bytes[offset..end];
        let kind = u16_at(b, 0).ok_or_else(|| trunc(MIN_ENTRY_HEADER_SIZE.into()))?;
        let header_size = u32_at(b, 4).ok_or_else(|| trunc(MIN_ENTRY_HEADER_SIZE.into()))?;
        if !(MIN_ENTRY_HEADER_SIZE..=MAX_ENTRY_HEADER_SIZE).contains(&header_size) {
            return Err(FatbinError::BadHeaderSize {
                offset,
                size: header_size.into(),
            });
        }
        let header = b
            .get(..header_size as usize)
            .ok_or_else(|| trunc(header_size.into()))?;
        // The header is at least MIN_ENTRY_HEADER_SIZE bytes, so these reads succeed.
        let payload_size = u64_at(header, 8).unwrap_or(0);
        let total = u64::from(header_size)
            .checked_add(payload_size)
            .filter(|&t| t <= avail)
            .ok_or_else(|| trunc(u64::from(header_size).saturating_add(payload_size)))?;
        let payload = &b[header_size as usize..total as usize];
        let entry = Entry {
            offset,
            kind: kind.into(),
            arch: u32_at(header, 0x1c).unwrap_or(0),
            minor: u16_at(header, 0x18).unwrap_or(0),
            major: u16_at(header, 0x1a).unwrap_or(0),
            flags: EntryFlags(u64_at(header, 0x28).unwrap_or(0)),
            compressed_size: u32_at(header, 0x10).unwrap_or(0),
            decompressed_size: u64_at(header, 0x38).unwrap_or(0),
            header,
            payload,
        };
        Ok((entry, offset + total as usize))
    }

    /// How the payload is compressed.
    ///
    /// # Errors
    ///
    /// [`FatbinError::AmbiguousCompression`] when both compression flags are set.
    pub fn compression(&self) -> Result<Compression> {
        match (self.flags.is_lz4(), self.flags.is_zstd()) {
            (false, false) => Ok(Compression::None),
            (true, false) => Ok(Compression::Lz4),
            (false, true) => Ok(Compression::Zstd),
            (true, true) => Err(FatbinError::AmbiguousCompression(self.flags.0)),
        }
    }

    /// The decompressed contents: borrowed when stored uncompressed (including the padding),
    /// owned otherwise (exactly the declared decompressed size).
    ///
    /// # Errors
    ///
    /// Inconsistent sizes, a declared size above [`MAX_DECOMPRESSED_SIZE`], or a corrupt stream.
    pub fn data(&self) -> Result<Cow<'a, [u8]>> {
        let compression = self.compression()?;
        if compression == Compression::None {
            return Ok(Cow::Borrowed(self.payload));
        }
        let compressed = u64::from(self.compressed_size);
        let declared = self.decompressed_size;
        let bad = || FatbinError::BadCompressedSize {
            compressed,
            payload: self.payload.len() as u64,
            decompressed: declared,
        };
        if compressed == 0 || compressed > self.payload.len() as u64 || declared == 0 {
            return Err(bad());
        }
        if declared > MAX_DECOMPRESSED_SIZE {
            return Err(FatbinError::TooLarge {
                size: declared,
                limit: MAX_DECOMPRESSED_SIZE,
            });
        }
        let input = &self.payload[..compressed as usize];
        let out = match compression {
            Compression::Lz4 => {
                if declared > compressed.saturating_mul(LZ4_MAX_RATIO).saturating_add(64) {
                    return Err(bad());
                }
                let mut out = vec![0u8; declared as usize];
                let n =
                    lz4_flex::block::decompress_into(input, &mut out).map_err(FatbinError::Lz4)?;
                if n as u64 != declared {
                    return Err(FatbinError::SizeMismatch {
                        declared,
                        actual: n as u64,
                    });
                }
                out
            }
            Compression::Zstd => zstd_decompress(input, declared)?,
            Compression::None => unreachable!("handled above"),
        };
        Ok(Cow::Owned(out))
    }

    /// The PTX text: the decompressed payload up to its first NUL byte.
    ///
    /// # Errors
    ///
    /// [`FatbinError::NotPtx`] for other kinds, anything [`Entry::data`] returns, or
    /// [`FatbinError::PtxUtf8`].
    pub fn ptx_text(&self) -> Result<Cow<'a, str>> {
        if self.kind != EntryKind::Ptx {
            return Err(FatbinError::NotPtx);
        }
        let until_nul = |b: &[u8]| b.iter().position(|&c| c == 0).unwrap_or(b.len());
        match self.data()? {
            Cow::Borrowed(b) => {
                let b = &b[..until_nul(b)];
                std::str::from_utf8(b)
                    .map(Cow::Borrowed)
                    .map_err(FatbinError::PtxUtf8)
            }
            Cow::Owned(mut v) => {
                v.truncate(until_nul(&v));
                String::from_utf8(v)
                    .map(Cow::Owned)
                    .map_err(|e| FatbinError::PtxUtf8(e.utf8_error()))
            }
        }
    }

    /// A `{u32 offset, u32 len}` string inside the header, NULs and spaces trimmed.
    fn header_string(&self, field: usize) -> Option<&'a str> {
        let off = u32_at(self.header, field)? as usize;
        let len = u32_at(self.header, field + 4)? as usize;
        if off == 0 || len == 0 {
            return None;
        }
        let bytes = self.header.get(off..off.checked_add(len)?)?;
        let s = std::str::from_utf8(bytes)
            .ok()?
            .trim_matches(|c: char| c == '\0' || c.is_whitespace());
        (!s.is_empty()).then_some(s)
    }

    /// The source file name recorded in the header (present with `-G`).
    pub fn identifier(&self) -> Option<&'a str> {
        self.header_string(0x20)
    }

    /// The ptxas options recorded with a PTX entry (e.g. `-g` with `-G`).
    pub fn ptxas_options(&self) -> Option<&'a str> {
        if self.kind != EntryKind::Ptx {
            return None;
        }
        let at = u32_at(self.header, 0x14)? as usize;
        self.header_string(at)
    }
}

/// Decompresses one zstd frame into at most `declared` bytes.
fn zstd_decompress(input: &[u8], declared: u64) -> Result<Vec<u8>> {
    use ruzstd::decoding::StreamingDecoder;
    let io = |e: ruzstd::decoding::errors::FrameDecoderError| {
        FatbinError::Zstd(std::io::Error::other(e))
    };
    // A window much larger than the output is never needed; bound it (and so the decoder's
    // up-front allocation) by the declared size, allowing 8 MiB for any encoder's choice.
    let window = declared
        .next_power_of_two()
        .clamp(8 << 20, MAX_DECOMPRESSED_SIZE);
    let decoder = StreamingDecoder::new_with_max_window_size(input, window).map_err(io)?;
    // Grow the output as data arrives, so a lying header costs only what the stream yields.
    let mut out = Vec::with_capacity(declared.min(1 << 20) as usize);
    decoder
        .take(declared + 1)
        .read_to_end(&mut out)
        .map_err(FatbinError::Zstd)?;
    if out.len() as u64 != declared {
        return Err(FatbinError::SizeMismatch {
            declared,
            actual: out.len() as u64,
        });
    }
    Ok(out)
}

/// One fat binary (header plus entries) within the parsed bytes.
#[derive(Debug, Clone)]
pub struct Container<'a> {
    /// Offset of the fat binary header in the bytes given to [`parse`].
    pub offset: usize,
    /// The whole fat binary, header included.
    pub bytes: &'a [u8],
    /// Its entries, in order.
    pub entries: Vec<Entry<'a>>,
}

/// One or more concatenated fat binaries.
#[derive(Debug, Clone, Default)]
pub struct Fatbin<'a> {
    /// The fat binaries, in order.
    pub containers: Vec<Container<'a>>,
}

impl<'a> Fatbin<'a> {
    /// All entries of all containers, in order.
    pub fn entries(&self) -> impl Iterator<Item = &Entry<'a>> + '_ {
        self.containers.iter().flat_map(|c| c.entries.iter())
    }

    /// The PTX entry with the highest arch that is at most `max_arch` (the first such entry
    /// when several share it).
    pub fn best_ptx(&self, max_arch: u32) -> Option<&Entry<'a>> {
        self.entries()
            .filter(|e| e.kind == EntryKind::Ptx && e.arch <= max_arch)
            .fold(None, |best: Option<&Entry<'a>>, e| match best {
                Some(b) if b.arch >= e.arch => Some(b),
                _ => Some(e),
            })
    }

    /// The PTX translation units to link for a device of `max_arch`: from each container
    /// that has PTX at or below it, the PTX entries of the highest such arch (those built for
    /// that exact arch or family, `sm_90a`, only where nothing generic is there). A fat binary
    /// from nvcc gives one unit; a device-linked (`-rdc`) program's image followed by its
    /// units' prelinked fat binaries (what vcuda's library registers) gives one per
    /// translation unit, and a JIT link of several PTX inputs puts them in one container.
    ///
    /// # Errors
    ///
    /// [`FatbinError::TooLarge`] for more than [`MAX_LINK_UNITS`] units, or units whose
    /// declared contents add up to more than [`MAX_DECOMPRESSED_SIZE`] (before anything is
    /// decompressed).
    pub fn ptx_units(&self, max_arch: u32) -> Result<Vec<&Entry<'a>>> {
        let mut out = Vec::new();
        for c in &self.containers {
            let ptx = || {
                c.entries
                    .iter()
                    .filter(|e| e.kind == EntryKind::Ptx && e.arch <= max_arch)
            };
            let Some(best) = ptx().map(|e| e.arch).max() else {
                continue;
            };
            let specific = |e: &Entry<'_>| {
                e.flags.contains(EntryFlags::ARCH_SPECIFIC)
                    || e.flags.contains(EntryFlags::FAMILY_SPECIFIC)
            };
            let generic = ptx().any(|e| e.arch == best && !specific(e));
            out.extend(ptx().filter(|e| e.arch == best && (!generic || !specific(e))));
            if out.len() > MAX_LINK_UNITS {
                return Err(FatbinError::TooLarge {
                    size: out.len() as u64,
                    limit: MAX_LINK_UNITS as u64,
                });
            }
        }
        let total = out
            .iter()
            .fold(0u64, |t, e| t.saturating_add(e.contents_size()));
        if total > MAX_DECOMPRESSED_SIZE {
            return Err(FatbinError::TooLarge {
                size: total,
                limit: MAX_DECOMPRESSED_SIZE,
            });
        }
        Ok(out)
    }

    /// The cubin that runs on `arch`: an exact match if any, else the highest-arch cubin of
    /// the same major version below it (SASS is compatible within a major version), never an
    /// arch-specific (`sm_XXa`) cubin for another arch.
    pub fn best_cubin(&self, arch: u32) -> Option<&Entry<'a>> {
        let cubins = || self.entries().filter(|e| e.kind == EntryKind::Cubin);
        if let Some(e) = cubins().find(|e| e.arch == arch) {
            return Some(e);
        }
        cubins()
            .filter(|e| e.arch < arch && e.arch / 10 == arch / 10 && !e.flags.is_arch_specific())
            .fold(None, |best: Option<&Entry<'a>>, e| match best {
                Some(b) if b.arch >= e.arch => Some(b),
                _ => Some(e),
            })
    }
}

/// Validates the fat binary header at the start of `bytes` and returns the length it
/// declares (header plus `fat_size`). Reads only the first 16 bytes.
///
/// # Errors
///
/// Too few bytes for a header, a bad magic, version or header size, or a total above
/// [`MAX_FATBIN_SIZE`].
pub fn fatbin_len(bytes: &[u8]) -> Result<usize> {
    header_len(bytes, 0)
}

fn header_len(bytes: &[u8], offset: usize) -> Result<usize> {
    let b = &bytes[offset..];
    let have = b.len() as u64;
    let trunc = |need| FatbinError::Truncated { offset, need, have };
    let magic = u32_at(b, 0).ok_or(trunc(FATBIN_HEADER_SIZE as u64))?;
    if magic != FATBIN_MAGIC {
        return Err(FatbinError::BadMagic { offset, magic });
    }
    let version = u16_at(b, 4).ok_or(trunc(FATBIN_HEADER_SIZE as u64))?;
    if version != FATBIN_VERSION {
        return Err(FatbinError::BadVersion(version));
    }
    let header_size = u16_at(b, 6).ok_or(trunc(FATBIN_HEADER_SIZE as u64))?;
    if !(FATBIN_HEADER_SIZE as u16..=MAX_FATBIN_HEADER_SIZE).contains(&header_size) {
        return Err(FatbinError::BadHeaderSize {
            offset,
            size: header_size.into(),
        });
    }
    let fat_size = u64_at(b, 8).ok_or(trunc(FATBIN_HEADER_SIZE as u64))?;
    let total = fat_size.saturating_add(header_size.into());
    if total > MAX_FATBIN_SIZE {
        return Err(FatbinError::TooLarge {
            size: total,
            limit: MAX_FATBIN_SIZE,
        });
    }
    Ok(total as usize)
}

/// Parses one fat binary or several concatenated ones (such as a whole `.nv_fatbin` section).
///
/// Zero bytes between and after containers (alignment padding) are skipped.
///
/// # Errors
///
/// Any malformed header, or a size that points past the end of `bytes` or of its container.
pub fn parse(bytes: &[u8]) -> Result<Fatbin<'_>> {
    let mut fatbin = Fatbin::default();
    let mut offset = 0;
    while offset < bytes.len() {
        if bytes[offset] == 0 {
            offset += 1;
            continue;
        }
        let len = header_len(bytes, offset)?;
        let end = offset
            .checked_add(len)
            .filter(|&e| e <= bytes.len())
            .ok_or(FatbinError::Truncated {
                offset,
                need: len as u64,
                have: (bytes.len() - offset) as u64,
            })?;
        // header_len checked header_size <= len.
        let mut at = offset + u16_at(bytes, offset + 6).unwrap_or(16) as usize;
        let mut entries = Vec::new();
        while at < end {
            let (entry, next) = Entry::parse(bytes, at, end)?;
            entries.push(entry);
            at = next;
        }
        fatbin.containers.push(Container {
            offset,
            bytes: &bytes[offset..end],
            entries,
        });
        offset = end;
    }
    if fatbin.containers.is_empty() {
        return Err(FatbinError::Truncated {
            offset: 0,
            need: FATBIN_HEADER_SIZE as u64,
            have: 0,
        });
    }
    Ok(fatbin)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry_header(kind: u16, payload: &[u8], flags: u64, csize: u32, dsize: u64) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[0..2].copy_from_slice(&kind.to_le_bytes());
        h[4..8].copy_from_slice(&64u32.to_le_bytes());
        h[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        h[0x10..0x14].copy_from_slice(&csize.to_le_bytes());
        h[0x1c..0x20].copy_from_slice(&90u32.to_le_bytes());
        h[0x28..0x30].copy_from_slice(&flags.to_le_bytes());
        h[0x38..0x40].copy_from_slice(&dsize.to_le_bytes());
        h.extend_from_slice(payload);
        h
    }

    fn container(entries: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = entries.concat();
        let mut v = FATBIN_MAGIC.to_le_bytes().to_vec();
        v.extend_from_slice(&1u16.to_le_bytes());
        v.extend_from_slice(&16u16.to_le_bytes());
        v.extend_from_slice(&(body.len() as u64).to_le_bytes());
        v.extend(body);
        v
    }

    #[test]
    fn lz4_entry_round_trips() {
        let text = b".version 8.4\n.target sm_90\n.entry k() { ret; }\n\0";
        let mut c = lz4_flex::block::compress(text);
        let csize = c.len() as u32;
        c.resize(c.len().div_ceil(8) * 8, 0);
        let bin = container(&[entry_header(1, &c, 0x2011, csize, text.len() as u64)]);
        let fb = parse(&bin).unwrap();
        let e = fb.entries().next().unwrap();
        assert_eq!(e.compression().unwrap(), Compression::Lz4);
        assert!(e.ptx_text().unwrap().contains(".entry k"));
    }

    #[test]
    fn lying_sizes_are_errors() {
        // Declared decompressed size far above what LZ4 can produce from 8 bytes.
        let bin = container(&[entry_header(1, &[0; 8], 0x2011, 8, 1 << 27)]);
        let fb = parse(&bin).unwrap();
        assert!(matches!(
            fb.entries().next().unwrap().data(),
            Err(FatbinError::BadCompressedSize { .. })
        ));
        // Above the global cap.
        let bin = container(&[entry_header(1, &[0; 8], 0x8011, 8, 1 << 40)]);
        let fb = parse(&bin).unwrap();
        assert!(matches!(
            fb.entries().next().unwrap().data(),
            Err(FatbinError::TooLarge { .. })
        ));
        // Both compressions.
        let bin = container(&[entry_header(1, &[0; 8], 0xa011, 8, 8)]);
        let fb = parse(&bin).unwrap();
        assert!(matches!(
            fb.entries().next().unwrap().data(),
            Err(FatbinError::AmbiguousCompression(_))
        ));
    }

    #[test]
    fn zstd_output_is_bounded_by_declared_size() {
        // A zstd frame: RLE block of 1000 'a' (content size omitted).
        let frame: Vec<u8> = vec![
            0x28, 0xb5, 0x2f, 0xfd, // magic
            0x00, 0x58, // FHD: no checksum, no content size; window descriptor
            // block header: last=1, type=RLE(1), size=1000 -> (1000<<3)|(1<<1)|1
            0x43, 0x1f, 0x00, b'a',
        ];
        let mut p = frame.clone();
        p.resize(16, 0);
        let ok = container(&[entry_header(1, &p, 0x8011, frame.len() as u32, 1000)]);
        let fb = parse(&ok).unwrap();
        assert_eq!(fb.entries().next().unwrap().data().unwrap().len(), 1000);
        let short = container(&[entry_header(1, &p, 0x8011, frame.len() as u32, 10)]);
        let fb = parse(&short).unwrap();
        assert!(matches!(
            fb.entries().next().unwrap().data(),
            Err(FatbinError::SizeMismatch {
                declared: 10,
                actual: 11
            })
        ));
    }

    #[test]
    fn truncated_headers_are_errors() {
        let bin = container(&[entry_header(2, &[0; 8], 0x11, 0, 0)]);
        for len in 0..bin.len() {
            assert!(parse(&bin[..len]).is_err(), "len {len}");
        }
        assert!(parse(&bin).is_ok());
        let mut bad = bin.clone();
        bad[8] = 0xff; // fat_size too large for the input
        assert!(matches!(parse(&bad), Err(FatbinError::Truncated { .. })));
        let mut bad = bin.clone();
        bad[16 + 4] = 8; // entry header size below the minimum
        assert!(matches!(
            parse(&bad),
            Err(FatbinError::BadHeaderSize { .. })
        ));
    }

    #[test]
    fn concatenated_with_padding() {
        let a = container(&[entry_header(2, &[1; 8], 0x11, 0, 0)]);
        let b = container(&[entry_header(1, b"x\0\0\0\0\0\0\0", 0x11, 0, 0)]);
        let mut bin = a.clone();
        bin.extend_from_slice(&[0; 8]);
        bin.extend_from_slice(&b);
        bin.extend_from_slice(&[0; 8]);
        let fb = parse(&bin).unwrap();
        assert_eq!(fb.containers.len(), 2);
        assert_eq!(fb.containers[1].offset, a.len() + 8);
        assert_eq!(fatbin_len(&bin).unwrap(), a.len());
        assert_eq!(fb.best_ptx(90).unwrap().ptx_text().unwrap(), "x");
        assert!(fb.best_ptx(89).is_none());
        assert_eq!(fb.best_cubin(90).unwrap().arch, 90);
        assert_eq!(fb.best_cubin(95).unwrap().arch, 90);
        assert!(fb.best_cubin(100).is_none());
    }
}
