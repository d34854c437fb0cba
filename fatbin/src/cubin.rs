// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Kernel information from a cubin (an ELF64 object for one GPU architecture).
//!
//! ptxas records each kernel's parameters in a section `.nv.info.<mangled name>`: a list of
//! attribute records `{u8 format, u8 attribute, ...}`. Format 4 (`EIFMT_SVAL`) is followed by
//! `u16 len` and `len` bytes; the others (`NVAL`, `BVAL`, `HVAL`) by two inline bytes. The
//! attributes used here, as measured with CUDA 12.4 and 13.0:
//!
//! * `EIATTR_KPARAM_INFO` (0x17, 12 bytes), one per parameter, usually in descending ordinal
//!   order: `u32 index, u16 ordinal, u16 offset, u32 packed`, where `packed` holds the pointee
//!   log-alignment (bits 0-7), space (8-11), constant bank (12-16), a not-in-cbank bit (17)
//!   and the size (bits 18-31).
//! * `EIATTR_KPARAM_INFO_V2` (0x45, 12 bytes), used instead when the parameters take more than
//!   4 KiB: `u32 index, u16 ordinal, u16 offset, u32 size`.
//! * `EIATTR_CBANK_PARAM_SIZE` (0x19, `HVAL`): total parameter bytes, not rounded up.
//! * `EIATTR_PARAM_CBANK` (0x0a, 8 bytes): `u32 symbol, u16 offset, u16 size` of the
//!   parameters in constant bank 0 (offset 0x210 on sm_90).
//! * `EIATTR_MAX_THREADS` (0x05) and `EIATTR_REQNTID` (0x10): three `u32`s each;
//!   `EIATTR_MAXREG_COUNT` (0x1b, `HVAL`).
//!
//! The global `.nv.info` section holds per-function records keyed by symbol index
//! (`u32 symbol, u32 value`): `EIATTR_REGCOUNT` (0x2f), `EIATTR_FRAME_SIZE` (0x11),
//! `EIATTR_MIN_STACK_SIZE` (0x12), `EIATTR_MAX_STACK_SIZE` (0x23).
//!
//! Kernels are the `STT_FUNC` symbols with `STO_CUDA_ENTRY` (0x10) in `st_other`; device
//! functions compiled with `-rdc` also get an (empty) `.nv.info.<name>` and are skipped.

use std::collections::{HashMap, HashSet};

use crate::{MAX_PARAM_BYTES, u16_at, u32_at, u64_at};

/// `EIATTR_MAX_THREADS`: `__launch_bounds__` / `.maxntid` (x, y, z).
pub const EIATTR_MAX_THREADS: u8 = 0x05;
/// `EIATTR_PARAM_CBANK`: where the parameters sit in constant bank 0.
pub const EIATTR_PARAM_CBANK: u8 = 0x0a;
/// `EIATTR_REQNTID`: `.reqntid` (x, y, z).
pub const EIATTR_REQNTID: u8 = 0x10;
/// `EIATTR_FRAME_SIZE` (global `.nv.info`).
pub const EIATTR_FRAME_SIZE: u8 = 0x11;
/// `EIATTR_MIN_STACK_SIZE` (global `.nv.info`).
pub const EIATTR_MIN_STACK_SIZE: u8 = 0x12;
/// `EIATTR_KPARAM_INFO`: one parameter.
pub const EIATTR_KPARAM_INFO: u8 = 0x17;
/// `EIATTR_CBANK_PARAM_SIZE`: total parameter bytes.
pub const EIATTR_CBANK_PARAM_SIZE: u8 = 0x19;
/// `EIATTR_MAXREG_COUNT`: register limit (`__maxnreg__` / `-maxrregcount`, 0xff if none).
pub const EIATTR_MAXREG_COUNT: u8 = 0x1b;
/// `EIATTR_MAX_STACK_SIZE` (global `.nv.info`).
pub const EIATTR_MAX_STACK_SIZE: u8 = 0x23;
/// `EIATTR_REGCOUNT`: registers used (global `.nv.info`).
pub const EIATTR_REGCOUNT: u8 = 0x2f;
/// `EIATTR_CUDA_API_VERSION`.
pub const EIATTR_CUDA_API_VERSION: u8 = 0x37;
/// `EIATTR_KPARAM_INFO_V2`: one parameter, used when parameters exceed 4 KiB.
pub const EIATTR_KPARAM_INFO_V2: u8 = 0x45;

/// `EIFMT_SVAL`: a `u16` length and that many bytes follow.
const EIFMT_SVAL: u8 = 4;
/// `STO_CUDA_ENTRY` in a symbol's `st_other`: the function is a kernel.
const STO_CUDA_ENTRY: u8 = 0x10;
const SHT_SYMTAB: u32 = 2;
const SHT_NOBITS: u32 = 8;
const STT_FUNC: u8 = 2;
const STT_OBJECT: u8 = 1;

/// Errors from reading a cubin.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CubinError {
    /// Not an ELF file.
    #[error("Not an ELF file")]
    NotElf,
    /// An ELF variant cubins never use.
    #[error("Unsupported ELF: {0}")]
    Unsupported(&'static str),
    /// A header, table or section that extends past the end of the file.
    #[error("Truncated {0}")]
    Truncated(&'static str),
    /// A section or symbol name that is out of bounds or not UTF-8.
    #[error("Bad name at string table offset {0}")]
    BadName(u32),
    /// An `.nv.info` record that runs past its section, or has an unknown format.
    #[error("Bad .nv.info record at offset {offset} of {section}")]
    BadRecord {
        /// Section name.
        section: String,
        /// Offset of the record in the section.
        offset: usize,
    },
    /// Parameter records that do not describe ordinals `0..n` once each, or exceed
    /// [`MAX_PARAM_BYTES`].
    #[error("Bad parameter info for {0}")]
    BadParams(String),
    /// Two `.nv.info` sections for one kernel.
    #[error("Duplicate kernel {0}")]
    Duplicate(String),
}

type Result<T, E = CubinError> = std::result::Result<T, E>;

/// One kernel parameter as the cubin describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelParam {
    /// The record's index field (0 in everything seen so far).
    pub index: u32,
    /// Position in the kernel's signature (`args[ordinal]`).
    pub ordinal: u16,
    /// Byte offset in the parameter buffer.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// The raw `packed` word of `EIATTR_KPARAM_INFO` (0 for `EIATTR_KPARAM_INFO_V2`).
    pub packed: u32,
}

/// What a cubin says about one kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelInfo {
    /// Mangled name.
    pub name: String,
    /// Parameters sorted by ordinal (ordinals `0..n`, each once).
    pub params: Vec<KernelParam>,
    /// `EIATTR_CBANK_PARAM_SIZE`: total parameter bytes (absent without parameters).
    pub param_size: Option<u32>,
    /// `EIATTR_PARAM_CBANK`: offset of the parameters in constant bank 0.
    pub param_cbank_offset: Option<u32>,
    /// `EIATTR_MAX_THREADS`.
    pub max_threads: Option<[u32; 3]>,
    /// `EIATTR_REQNTID`.
    pub reqntid: Option<[u32; 3]>,
    /// `EIATTR_MAXREG_COUNT` (0xff when unconstrained).
    pub max_reg_count: Option<u32>,
    /// `EIATTR_REGCOUNT`: registers per thread.
    pub registers: Option<u32>,
    /// `EIATTR_FRAME_SIZE`.
    pub frame_size: Option<u32>,
    /// `EIATTR_MIN_STACK_SIZE`.
    pub min_stack_size: Option<u32>,
    /// `EIATTR_MAX_STACK_SIZE`.
    pub max_stack_size: Option<u32>,
    /// `EIATTR_CUDA_API_VERSION` (e.g. 130 for CUDA 13.0).
    pub cuda_api_version: Option<u32>,
    /// Static shared memory: the size of `.nv.shared.<name>` (0 when absent). On sm_90 this
    /// includes the 1 KiB that the system reserves per block: `__shared__ int tile[64]` shows
    /// as 1280 bytes.
    pub shared_size: u64,
}

impl KernelInfo {
    /// Bytes of the parameter buffer: the declared total, or the end of the last parameter if
    /// that is larger (it never is in real cubins).
    pub fn param_bytes(&self) -> u32 {
        let end = self
            .params
            .iter()
            .map(|p| p.offset.saturating_add(p.size))
            .max()
            .unwrap_or(0);
        end.max(self.param_size.unwrap_or(0))
    }
}

#[derive(Debug, Clone, Copy)]
struct Section {
    name: u32,
    kind: u32,
    offset: u64,
    size: u64,
    link: u32,
}

/// A minimal bounds-checked ELF64 little-endian reader.
struct Elf<'a> {
    data: &'a [u8],
    sections: Vec<Section>,
    shstrndx: usize,
}

impl<'a> Elf<'a> {
    fn parse(data: &'a [u8]) -> Result<Self> {
        if data.get(..4) != Some(b"\x7fELF") {
            return Err(CubinError::NotElf);
        }
        let hdr = |off, what| u64_at(data, off).ok_or(CubinError::Truncated(what));
        if data.get(4) != Some(&2) {
            return Err(CubinError::Unsupported("not ELF64"));
        }
        if data.get(5) != Some(&1) {
            return Err(CubinError::Unsupported("not little-endian"));
        }
        let shoff = hdr(0x28, "ELF header")?;
        let shentsize = u16_at(data, 0x3a).ok_or(CubinError::Truncated("ELF header"))?;
        let mut shnum = u64::from(u16_at(data, 0x3c).ok_or(CubinError::Truncated("ELF header"))?);
        let mut shstrndx =
            u32::from(u16_at(data, 0x3e).ok_or(CubinError::Truncated("ELF header"))?);
        if shoff == 0 {
            return Ok(Elf {
                data,
                sections: Vec::new(),
                shstrndx: 0,
            });
        }
        if shentsize != 64 {
            return Err(CubinError::Unsupported("section header size"));
        }
        let shdr = |i: u64| -> Result<Section> {
            let off = i
                .checked_mul(64)
                .and_then(|o| o.checked_add(shoff))
                .and_then(|o| usize::try_from(o).ok())
                .ok_or(CubinError::Truncated("section headers"))?;
            let b = data
                .get(
                    off..off
                        .checked_add(64)
                        .ok_or(CubinError::Truncated("section headers"))?,
                )
                .ok_or(CubinError::Truncated("section headers"))?;
            // The 64-byte slice makes every read below succeed.
            Ok(Section {
                name: u32_at(b, 0).unwrap_or(0),
                kind: u32_at(b, 4).unwrap_or(0),
                offset: u64_at(b, 0x18).unwrap_or(0),
                size: u64_at(b, 0x20).unwrap_or(0),
                link: u32_at(b, 0x28).unwrap_or(0),
            })
        };
        // Extended numbering: the real counts live in section 0.
        if shnum == 0 || shstrndx == 0xffff {
            let s0 = shdr(0)?;
            if shnum == 0 {
                shnum = s0.size;
            }
            if shstrndx == 0xffff {
                shstrndx = s0.link;
            }
        }
        // Every header must lie in the file, which also bounds the allocation below.
        if shnum
            .checked_mul(64)
            .and_then(|n| n.checked_add(shoff))
            .is_none_or(|end| end > data.len() as u64)
        {
            return Err(CubinError::Truncated("section headers"));
        }
        let sections = (0..shnum).map(shdr).collect::<Result<Vec<_>>>()?;
        Ok(Elf {
            data,
            sections,
            shstrndx: shstrndx as usize,
        })
    }

    fn bytes(&self, s: &Section) -> Result<&'a [u8]> {
        if s.kind == SHT_NOBITS {
            return Ok(&[]);
        }
        let start = usize::try_from(s.offset).map_err(|_| CubinError::Truncated("section"))?;
        let len = usize::try_from(s.size).map_err(|_| CubinError::Truncated("section"))?;
        self.data
            .get(
                start
                    ..start
                        .checked_add(len)
                        .ok_or(CubinError::Truncated("section"))?,
            )
            .ok_or(CubinError::Truncated("section"))
    }

    fn section_name(&self, s: &Section) -> Result<&'a str> {
        let strtab = self
            .sections
            .get(self.shstrndx)
            .ok_or(CubinError::Truncated("shstrtab"))?;
        cstr(self.bytes(strtab)?, s.name)
    }
}

/// The names of a cubin's module variables: its object symbols in the sections of
/// `__device__` (`.nv.global`, `.nv.global.init`) and `__constant__` (`.nv.constant1` and
/// up; bank 0 holds kernel parameters) memory.
///
/// # Errors
///
/// Not an ELF64 little-endian file, or tables out of bounds.
pub fn variables(elf: &[u8]) -> Result<Vec<String>> {
    let elf = Elf::parse(elf)?;
    let mut out = Vec::new();
    for s in elf.sections.iter().filter(|s| s.kind == SHT_SYMTAB) {
        let strtab = elf
            .sections
            .get(s.link as usize)
            .ok_or(CubinError::Truncated("symbol string table"))?;
        let strtab = elf.bytes(strtab)?;
        for sym in elf.bytes(s)?.chunks_exact(24) {
            let shndx = u16_at(sym, 6).unwrap_or(0) as usize;
            if sym[4] & 0xf != STT_OBJECT {
                continue;
            }
            let Some(section) = elf.sections.get(shndx) else {
                continue;
            };
            let sname = elf.section_name(section)?;
            let data = sname == ".nv.global"
                || sname == ".nv.global.init"
                || sname.strip_prefix(".nv.constant").is_some_and(|b| {
                    b != "0" && !b.is_empty() && b.bytes().all(|c| c.is_ascii_digit())
                });
            let name = cstr(strtab, u32_at(sym, 0).unwrap_or(0))?;
            if data && !name.is_empty() {
                out.push(name.to_owned());
            }
        }
    }
    Ok(out)
}

/// Largest bare cubin [`elf_len`] sizes (NVRTC's and nvcc's are kilobytes to megabytes).
pub const MAX_CUBIN_LEN: u64 = 1 << 30;

/// Where the header tables of the ELF64 cubin whose 64-byte header is `h` end. A bare cubin
/// (`cuModuleLoadData` of NVRTC's or `nvcc -cubin`'s output) carries no size: its length
/// is found from its tables ([`elf_len`]), which lie inside it.
///
/// # Errors
///
/// Not a 64-bit little-endian ELF header, or tables that overflow or end past
/// [`MAX_CUBIN_LEN`].
pub fn elf_tables_end(h: &[u8]) -> Result<usize> {
    if h.get(..4) != Some(b"\x7fELF") {
        return Err(CubinError::NotElf);
    }
    if h.get(4) != Some(&2) || h.get(5) != Some(&1) {
        return Err(CubinError::Unsupported("not ELF64 little-endian"));
    }
    let field = |off, f: fn(&[u8], usize) -> Option<u64>| {
        f(h, off).ok_or(CubinError::Truncated("ELF header"))
    };
    let at16 = |b: &[u8], o| u16_at(b, o).map(u64::from);
    let table = |off: u64, size: u64, n: u64| off.checked_add(size.checked_mul(n)?);
    let ph = table(field(0x20, u64_at)?, field(0x36, at16)?, field(0x38, at16)?);
    let sh = table(field(0x28, u64_at)?, field(0x3a, at16)?, field(0x3c, at16)?);
    ph.zip(sh)
        .map(|(a, b)| a.max(b).max(64))
        .filter(|&e| e <= MAX_CUBIN_LEN)
        .and_then(|e| usize::try_from(e).ok())
        .ok_or(CubinError::Unsupported(
            "tables past the largest cubin taken",
        ))
}

/// The length of the ELF64 cubin `b` starts with (`b` holds at least its header tables,
/// [`elf_tables_end`]): the end of its last table, section (but `SHT_NOBITS`) or segment.
///
/// # Errors
///
/// As [`elf_tables_end`], malformed section or program headers, or an end past
/// [`MAX_CUBIN_LEN`].
pub fn elf_len(b: &[u8]) -> Result<usize> {
    let mut end = elf_tables_end(b)? as u64;
    let elf = Elf::parse(b)?;
    let extent = |off: u64, size: u64| {
        off.checked_add(size)
            .ok_or(CubinError::Truncated("section"))
    };
    for s in elf.sections.iter().filter(|s| s.kind != SHT_NOBITS) {
        end = end.max(extent(s.offset, s.size)?);
    }
    let phdr = |at: u64| {
        usize::try_from(at)
            .ok()
            .and_then(|at| u64_at(b, at))
            .ok_or(CubinError::Truncated("program headers"))
    };
    let (phoff, phentsize, phnum) = (
        phdr(0x20)?,
        u16_at(b, 0x36).map_or(0, u64::from),
        u16_at(b, 0x38).map_or(0, u64::from),
    );
    if phnum > 0 && phentsize < 56 {
        return Err(CubinError::Unsupported("program header size"));
    }
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        end = end.max(extent(phdr(ph + 8)?, phdr(ph + 0x20)?)?);
    }
    if end > MAX_CUBIN_LEN {
        return Err(CubinError::Unsupported(
            "larger than the largest cubin taken",
        ));
    }
    usize::try_from(end).map_err(|_| CubinError::Unsupported("larger than the largest cubin taken"))
}

/// The NUL-terminated UTF-8 string at `off` of a string table.
fn cstr(table: &[u8], off: u32) -> Result<&str> {
    let rest = table.get(off as usize..).ok_or(CubinError::BadName(off))?;
    let len = rest
        .iter()
        .position(|&c| c == 0)
        .ok_or(CubinError::BadName(off))?;
    std::str::from_utf8(&rest[..len]).map_err(|_| CubinError::BadName(off))
}

/// One `.nv.info` record.
#[derive(Debug, Clone, Copy)]
struct Record<'a> {
    attr: u8,
    /// The `SVAL` bytes, or the two inline bytes of the other formats.
    value: &'a [u8],
}

impl Record<'_> {
    fn u32(&self, i: usize) -> Option<u32> {
        u32_at(self.value, i * 4)
    }
    fn hval(&self) -> Option<u32> {
        u16_at(self.value, 0).map(u32::from)
    }
    fn triple(&self) -> Option<[u32; 3]> {
        Some([self.u32(0)?, self.u32(1)?, self.u32(2)?])
    }
}

fn records<'a>(section: &str, data: &'a [u8]) -> Result<Vec<Record<'a>>> {
    let bad = |offset| CubinError::BadRecord {
        section: section.to_owned(),
        offset,
    };
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let head = data.get(at..at + 4).ok_or_else(|| bad(at))?;
        let (format, attr) = (head[0], head[1]);
        let (value, next) = match format {
            EIFMT_SVAL => {
                let len = u16::from_le_bytes([head[2], head[3]]) as usize;
                (
                    data.get(at + 4..at + 4 + len).ok_or_else(|| bad(at))?,
                    at + 4 + len,
                )
            }
            1..=3 => (&head[2..4], at + 4),
            _ => return Err(bad(at)),
        };
        out.push(Record { attr, value });
        at = next;
    }
    Ok(out)
}

/// Per-function values from the global `.nv.info` section, keyed by symbol index.
#[derive(Debug, Default, Clone, Copy)]
struct FunctionAttrs {
    registers: Option<u32>,
    frame_size: Option<u32>,
    min_stack_size: Option<u32>,
    max_stack_size: Option<u32>,
}

/// Reads every kernel's parameter layout and a few cheap attributes from a cubin.
///
/// Kernels are listed in section order; kernels without an `.nv.info.<name>` section are not
/// listed (look them up in the PTX instead, see [`crate::kernel_layouts`]).
///
/// # Errors
///
/// Not an ELF64 little-endian file, anything out of bounds, a malformed `.nv.info` record,
/// inconsistent parameter records, or two sections for one kernel.
pub fn kernel_params(elf: &[u8]) -> Result<Vec<KernelInfo>> {
    let elf = Elf::parse(elf)?;
    // Symbols: name -> (index, st_other, type).
    let mut symbols: HashMap<&str, (u32, u8, u8)> = HashMap::new();
    let mut global: HashMap<u32, FunctionAttrs> = HashMap::new();
    let mut shared: HashMap<&str, u64> = HashMap::new();
    for s in &elf.sections {
        if s.kind == SHT_SYMTAB {
            let strtab = elf
                .sections
                .get(s.link as usize)
                .ok_or(CubinError::Truncated("symbol string table"))?;
            let strtab = elf.bytes(strtab)?;
            for (i, sym) in elf.bytes(s)?.chunks_exact(24).enumerate() {
                let name = cstr(strtab, u32_at(sym, 0).unwrap_or(0))?;
                let (info, other) = (sym[4], sym[5]);
                symbols.entry(name).or_insert((i as u32, other, info & 0xf));
            }
            continue;
        }
        let name = elf.section_name(s)?;
        if name == ".nv.info" {
            for r in records(name, elf.bytes(s)?)? {
                let (Some(sym), Some(v)) = (r.u32(0), r.u32(1)) else {
                    continue;
                };
                let f = global.entry(sym).or_default();
                match r.attr {
                    EIATTR_REGCOUNT => f.registers = Some(v),
                    EIATTR_FRAME_SIZE => f.frame_size = Some(v),
                    EIATTR_MIN_STACK_SIZE => f.min_stack_size = Some(v),
                    EIATTR_MAX_STACK_SIZE => f.max_stack_size = Some(v),
                    _ => {}
                }
            }
        } else if let Some(kernel) = name.strip_prefix(".nv.shared.") {
            shared.insert(kernel, s.size);
        }
    }

    let mut kernels = Vec::new();
    let mut seen = HashSet::new();
    for s in &elf.sections {
        let name = elf.section_name(s)?;
        let Some(kernel) = name.strip_prefix(".nv.info.") else {
            continue;
        };
        let symbol = symbols.get(kernel).copied();
        if symbol.is_some_and(|(_, other, kind)| kind != STT_FUNC || other & STO_CUDA_ENTRY == 0) {
            continue; // a device function, not a kernel
        }
        if !seen.insert(kernel) {
            return Err(CubinError::Duplicate(kernel.to_owned()));
        }
        let mut info = KernelInfo {
            name: kernel.to_owned(),
            shared_size: shared.get(kernel).copied().unwrap_or(0),
            ..KernelInfo::default()
        };
        if let Some(f) = symbol.and_then(|(i, _, _)| global.get(&i)) {
            info.registers = f.registers;
            info.frame_size = f.frame_size;
            info.min_stack_size = f.min_stack_size;
            info.max_stack_size = f.max_stack_size;
        }
        let bad = || CubinError::BadParams(kernel.to_owned());
        for r in records(name, elf.bytes(s)?)? {
            match r.attr {
                EIATTR_KPARAM_INFO | EIATTR_KPARAM_INFO_V2 => {
                    let v = r.value;
                    let (Some(index), Some(ordinal), Some(offset), Some(word)) =
                        (u32_at(v, 0), u16_at(v, 4), u16_at(v, 6), u32_at(v, 8))
                    else {
                        return Err(bad());
                    };
                    let (size, packed) = if r.attr == EIATTR_KPARAM_INFO {
                        (word >> 18, word)
                    } else {
                        (word, 0)
                    };
                    info.params.push(KernelParam {
                        index,
                        ordinal,
                        offset: offset.into(),
                        size,
                        packed,
                    });
                }
                EIATTR_CBANK_PARAM_SIZE => info.param_size = r.hval(),
                EIATTR_PARAM_CBANK => info.param_cbank_offset = r.u32(1).map(|v| v & 0xffff),
                EIATTR_MAX_THREADS => info.max_threads = r.triple(),
                EIATTR_REQNTID => info.reqntid = r.triple(),
                EIATTR_MAXREG_COUNT => info.max_reg_count = r.hval(),
                EIATTR_CUDA_API_VERSION => info.cuda_api_version = r.u32(0),
                _ => {}
            }
        }
        info.params.sort_by_key(|p| p.ordinal);
        let ordinals_ok = info
            .params
            .iter()
            .enumerate()
            .all(|(i, p)| usize::from(p.ordinal) == i);
        let sizes_ok = info.params.iter().all(|p| {
            p.size > 0 && p.size <= MAX_PARAM_BYTES && p.offset + p.size <= MAX_PARAM_BYTES
        }) && info.param_size.is_none_or(|s| s <= MAX_PARAM_BYTES);
        if !ordinals_ok || !sizes_ok {
            return Err(bad());
        }
        kernels.push(info);
    }
    Ok(kernels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_elf() {
        assert!(matches!(kernel_params(b""), Err(CubinError::NotElf)));
        assert!(matches!(
            kernel_params(b"\x7fELF\x01\x01"),
            Err(CubinError::Unsupported(_))
        ));
        assert!(matches!(
            kernel_params(b"\x7fELF\x02\x01"),
            Err(CubinError::Truncated(_))
        ));
    }

    #[test]
    fn records_are_bounded() {
        assert!(records("s", &[4, 0x17, 12, 0, 1, 2]).is_err());
        assert!(records("s", &[3, 0x19]).is_err());
        assert!(records("s", &[9, 0x19, 0, 0]).is_err());
        let r = records("s", &[3, 0x19, 0x28, 0, 4, 0x37, 4, 0, 0x82, 0, 0, 0]).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].hval(), Some(0x28));
        assert_eq!(r[1].u32(0), Some(0x82));
    }
}
