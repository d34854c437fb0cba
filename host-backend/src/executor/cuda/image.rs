// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Checks a guest's module image before the driver parses it.
//!
//! `cuModuleLoadData` takes a bare pointer: the driver learns the image's size from the
//! image itself, so a lying header would have it read (and, for relocations, patch) past
//! the buffer. The guest sends what `__cudaRegisterFatBinary` received; before loading, its container and entry headers must lie inside the bytes we
//! hold ([`vcuda_fatbin::parse`]), compressed entries must decompress to their declared size,
//! PTX must be NUL-terminated, and every cubin must be an ELF64 whose header tables,
//! sections, string tables, symbols and relocations stay inside the cubin. This bounds what
//! the driver reads; the driver's own parsers still see guest-chosen content (see the
//! executor's security notes). A device-linked (`-rdc`) program's image is several fat
//! binaries: the driver gets the first (the linked image), or the PTX units of the rest
//! through the JIT linker; each one is checked the same way. A bare cubin (no fat binary
//! around it) is checked as a cubin entry is, and loaded as it is.

use thiserror::Error;
use vcuda_fatbin::{EntryKind, FatbinError};

/// Why an image is refused.
#[derive(Debug, Error)]
pub enum ImageError {
    /// The fat binary container is malformed.
    #[error("Bad fat binary")]
    Fatbin(#[from] FatbinError),
    /// No fat binary at the start, or more than [`MAX_CONTAINERS`].
    #[error("{0} fat binaries in one image")]
    Containers(usize),
    /// A PTX entry without its terminating NUL.
    #[error("PTX entry {0} is not NUL-terminated")]
    PtxUnterminated(usize),
    /// An entry header whose string records (the ptxas options of a PTX entry, the source
    /// file name) point outside the header.
    #[error("Entry {0}: a header record points outside the header")]
    HeaderRecord(usize),
    /// A cubin entry that is not a well-formed ELF64 object.
    #[error("Cubin entry {entry}: {what}")]
    Elf {
        /// Entry index.
        entry: usize,
        /// What is wrong.
        what: &'static str,
    },
}

/// Most fat binaries in one image: a device-linked program's image is followed by one
/// prelinked fat binary per translation unit.
pub const MAX_CONTAINERS: usize = 4096;

/// What [`check`] learned about an image.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImageInfo {
    /// Some code calls `vprintf` (device `printf`).
    pub uses_printf: bool,
    /// Fat binaries in the image: more than one for a device-linked (`-rdc`) program (the
    /// linked image, then each unit's relocatable code and PTX).
    pub containers: usize,
    /// PTX translation units to link ([`vcuda_fatbin::Fatbin::ptx_units`]): more than one in
    /// a JIT link's output of several PTX inputs, which the driver cannot load as it is.
    pub ptx_units: usize,
}

/// Checks `image` (see the module documentation). A bare cubin (what `nvcc -cubin` and
/// NVRTC's `nvrtcGetCUBIN` make, and `cuModuleLoadData` takes as it is) is checked as a
/// cubin entry would be.
pub fn check(image: &[u8]) -> Result<ImageInfo, ImageError> {
    if image.starts_with(b"\x7fELF") {
        check_elf(image).map_err(|what| ImageError::Elf { entry: 0, what })?;
        return Ok(ImageInfo {
            uses_printf: image.windows(7).any(|w| w == b"vprintf"),
            ..Default::default()
        });
    }
    let fb = vcuda_fatbin::parse(image)?;
    if fb.containers.is_empty()
        || fb.containers.len() > MAX_CONTAINERS
        || fb.containers[0].offset != 0
    {
        return Err(ImageError::Containers(fb.containers.len()));
    }
    let mut info = ImageInfo {
        containers: fb.containers.len(),
        ptx_units: fb.ptx_units(u32::MAX)?.len(),
        ..Default::default()
    };
    for (i, e) in fb.entries().enumerate() {
        // (Other kinds' headers the driver skips, with their entries.)
        if matches!(e.kind, EntryKind::Ptx | EntryKind::Cubin)
            && !header_records_inside(e.kind, e.header)
        {
            return Err(ImageError::HeaderRecord(i));
        }
        let data = match e.kind {
            EntryKind::Ptx => {
                let d = e.data()?;
                if !d.contains(&0) {
                    return Err(ImageError::PtxUnterminated(i));
                }
                d
            }
            EntryKind::Cubin => {
                let d = e.data()?;
                check_elf(&d).map_err(|what| ImageError::Elf { entry: i, what })?;
                d
            }
            // LTO-IR and unknown kinds: the loader skips what it cannot run; only their
            // bounds matter, and `parse` checked those.
            _ => continue,
        };
        info.uses_printf |= data.windows(7).any(|w| w == b"vprintf");
    }
    Ok(info)
}

/// Whether the `{u32 offset, u32 len}` string records an entry header holds lie inside it.
///
/// NVIDIA's driver follows them without checking: a PTX entry's header says at 0x14 where
/// the record of its ptxas options is (nvcc always writes one, empty without options), and
/// 0x20 holds the record of the source file name (`-G`; zero without). A header without a
/// valid options record (the field 0: the record read from the header's first bytes) made
/// the driver read megabytes past the image and crash (SIGSEGV, seen on an H100 with driver
/// 580).
fn header_records_inside(kind: EntryKind, header: &[u8]) -> bool {
    let total = header.len() as u64;
    let record_inside = |at: u64| match (u32_at(header, at), u32_at(header, at + 4)) {
        (Some(off), Some(len)) => inside(off, len, total),
        _ => false,
    };
    let options_ok = kind != EntryKind::Ptx
        || u32_at(header, 0x14).is_some_and(|at| at >= 0x40 && record_inside(at));
    let identifier_ok = match (u32_at(header, 0x20), u32_at(header, 0x24)) {
        (Some(0), Some(0)) => true,
        _ => record_inside(0x20),
    };
    options_ok && identifier_ok
}

fn u16_at(b: &[u8], at: u64) -> Option<u64> {
    let at = usize::try_from(at).ok()?;
    b.get(at..at.checked_add(2)?)
        .map(|s| u64::from(u16::from_le_bytes([s[0], s[1]])))
}

fn u32_at(b: &[u8], at: u64) -> Option<u64> {
    let at = usize::try_from(at).ok()?;
    b.get(at..at.checked_add(4)?)
        .map(|s| u64::from(u32::from_le_bytes([s[0], s[1], s[2], s[3]])))
}

fn u64_at(b: &[u8], at: u64) -> Option<u64> {
    let at = usize::try_from(at).ok()?;
    let s = b.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// `[off, off + len)` lies in `total` bytes.
fn inside(off: u64, len: u64, total: u64) -> bool {
    off.checked_add(len).is_some_and(|e| e <= total)
}

const SHT_SYMTAB: u64 = 2;
const SHT_STRTAB: u64 = 3;
const SHT_RELA: u64 = 4;
const SHT_NOBITS: u64 = 8;
const SHT_REL: u64 = 9;

/// One ELF64 section header, the fields we check.
#[derive(Clone, Copy)]
struct Section {
    name: u64,
    kind: u64,
    offset: u64,
    size: u64,
    link: u64,
    info: u64,
    entsize: u64,
}

/// Checks that an ELF64 little-endian object's tables and sections stay inside it.
pub fn check_elf(b: &[u8]) -> Result<(), &'static str> {
    let len = b.len() as u64;
    if len < 64 || b[..4] != *b"\x7fELF" {
        return Err("not an ELF object");
    }
    if b[4] != 2 || b[5] != 1 {
        return Err("not 64-bit little-endian");
    }
    let field = |at, f: fn(&[u8], u64) -> Option<u64>| f(b, at).ok_or("truncated header");
    let phoff = field(0x20, u64_at)?;
    let shoff = field(0x28, u64_at)?;
    let phentsize = field(0x36, u16_at)?;
    let phnum = field(0x38, u16_at)?;
    let shentsize = field(0x3a, u16_at)?;
    let shnum = field(0x3c, u16_at)?;
    let shstrndx = field(0x3e, u16_at)?;

    if phnum > 0 {
        if phentsize < 56 || !inside(phoff, phnum * phentsize, len) {
            return Err("program headers out of bounds");
        }
        for i in 0..phnum {
            let ph = phoff + i * phentsize;
            let off = field(ph + 8, u64_at)?;
            let filesz = field(ph + 0x20, u64_at)?;
            if !inside(off, filesz, len) {
                return Err("segment out of bounds");
            }
        }
    }
    if shnum == 0 {
        // Extended section numbering is never used by cubins; refuse it.
        return if shoff == 0 && shstrndx == 0 {
            Ok(())
        } else {
            Err("extended section numbering")
        };
    }
    if shentsize < 64 || !inside(shoff, shnum * shentsize, len) {
        return Err("section headers out of bounds");
    }
    if shstrndx >= shnum {
        return Err("bad section name table index");
    }
    let sections: Vec<Section> = (0..shnum)
        .map(|i| {
            let sh = shoff + i * shentsize;
            Ok(Section {
                name: field(sh, u32_at)?,
                kind: field(sh + 4, u32_at)?,
                offset: field(sh + 0x18, u64_at)?,
                size: field(sh + 0x20, u64_at)?,
                link: field(sh + 0x28, u32_at)?,
                info: field(sh + 0x2c, u32_at)?,
                entsize: field(sh + 0x38, u64_at)?,
            })
        })
        .collect::<Result<_, &'static str>>()?;
    for s in &sections {
        if s.kind != SHT_NOBITS && !inside(s.offset, s.size, len) {
            return Err("section out of bounds");
        }
        if s.link >= shnum {
            return Err("bad section link");
        }
        if s.kind == SHT_STRTAB && s.size > 0 && b[(s.offset + s.size - 1) as usize] != 0 {
            return Err("string table not NUL-terminated");
        }
    }
    let names = sections[shstrndx as usize];
    if shstrndx != 0 {
        if names.kind != SHT_STRTAB {
            return Err("section name table is no string table");
        }
        if sections.iter().any(|s| s.name >= names.size.max(1)) {
            return Err("section name out of bounds");
        }
    }
    for s in &sections {
        match s.kind {
            SHT_SYMTAB => check_symtab(b, s, &sections)?,
            SHT_REL | SHT_RELA => check_relocs(b, s, &sections)?,
            _ => {}
        }
    }
    Ok(())
}

fn check_symtab(b: &[u8], s: &Section, sections: &[Section]) -> Result<(), &'static str> {
    if s.entsize != 24 || !s.size.is_multiple_of(24) {
        return Err("bad symbol table entry size");
    }
    let strtab = sections[s.link as usize];
    if strtab.kind != SHT_STRTAB {
        return Err("symbol table without string table");
    }
    for i in 0..s.size / 24 {
        let sym = s.offset + i * 24;
        let name = u32_at(b, sym).ok_or("truncated symbol")?;
        let shndx = u16_at(b, sym + 6).ok_or("truncated symbol")?;
        if name > 0 && name >= strtab.size {
            return Err("symbol name out of bounds");
        }
        // Ordinary section indices must exist; 0xff00.. are special (ABS, COMMON, ...).
        if shndx < 0xff00 && shndx as usize >= sections.len() {
            return Err("symbol in a missing section");
        }
    }
    Ok(())
}

fn check_relocs(b: &[u8], s: &Section, sections: &[Section]) -> Result<(), &'static str> {
    let entsize = if s.kind == SHT_RELA { 24 } else { 16 };
    if s.entsize != entsize || !s.size.is_multiple_of(entsize) {
        return Err("bad relocation entry size");
    }
    let symtab = sections[s.link as usize];
    let target = sections
        .get(s.info as usize)
        .ok_or("relocation for a missing section")?;
    let nsyms = if symtab.kind == SHT_SYMTAB {
        symtab.size / 24
    } else {
        0
    };
    for i in 0..s.size / entsize {
        let r = s.offset + i * entsize;
        let offset = u64_at(b, r).ok_or("truncated relocation")?;
        let sym = u64_at(b, r + 8).ok_or("truncated relocation")? >> 32;
        // The patched word must start inside its section.
        if offset >= target.size {
            return Err("relocation outside its section");
        }
        if sym >= nsyms.max(1) {
            return Err("relocation names a missing symbol");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64: null section, .shstrtab, .symtab (2 symbols), .strtab, .text,
    /// .rel.text.
    fn elf() -> Vec<u8> {
        let shstr = b"\0.shstrtab\0.symtab\0.strtab\0.text\0.rel.text\0".to_vec();
        let strtab = b"\0kernel\0".to_vec();
        let mut symtab = vec![0u8; 48];
        symtab[24..28].copy_from_slice(&1u32.to_le_bytes()); // "kernel"
        symtab[30..32].copy_from_slice(&4u16.to_le_bytes()); // in .text
        let text = vec![0u8; 32];
        let mut rel = vec![0u8; 16];
        rel[0..8].copy_from_slice(&8u64.to_le_bytes());
        rel[8..16].copy_from_slice(&((1u64 << 32) | 1).to_le_bytes());

        let mut b = vec![0u8; 64];
        let place = |data: &[u8], b: &mut Vec<u8>| {
            let off = b.len() as u64;
            b.extend_from_slice(data);
            off
        };
        let o_shstr = place(&shstr, &mut b);
        let o_sym = place(&symtab, &mut b);
        let o_str = place(&strtab, &mut b);
        let o_text = place(&text, &mut b);
        let o_rel = place(&rel, &mut b);
        let shoff = b.len() as u64;
        // (name, type, offset, size, link, info, entsize)
        let secs: [(u32, u32, u64, u64, u32, u32, u64); 6] = [
            (0, 0, 0, 0, 0, 0, 0),
            (1, 3, o_shstr, shstr.len() as u64, 0, 0, 0),
            (11, 2, o_sym, 48, 3, 1, 24),
            (19, 3, o_str, strtab.len() as u64, 0, 0, 0),
            (27, 1, o_text, 32, 0, 0, 0),
            (33, 9, o_rel, 16, 2, 4, 16),
        ];
        for (name, kind, off, size, link, info, ent) in secs {
            let mut sh = vec![0u8; 64];
            sh[0..4].copy_from_slice(&name.to_le_bytes());
            sh[4..8].copy_from_slice(&kind.to_le_bytes());
            sh[0x18..0x20].copy_from_slice(&off.to_le_bytes());
            sh[0x20..0x28].copy_from_slice(&size.to_le_bytes());
            sh[0x28..0x2c].copy_from_slice(&link.to_le_bytes());
            sh[0x2c..0x30].copy_from_slice(&info.to_le_bytes());
            sh[0x38..0x40].copy_from_slice(&ent.to_le_bytes());
            b.extend(sh);
        }
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        b[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        b[0x3c..0x3e].copy_from_slice(&6u16.to_le_bytes());
        b[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
        b
    }

    fn shdr(b: &[u8], i: usize) -> usize {
        u64_at(b, 0x28).unwrap() as usize + i * 64
    }

    fn fatbin(entries: &[(u16, &[u8])]) -> Vec<u8> {
        let mut body = Vec::new();
        for &(kind, payload) in entries {
            // As nvcc writes them: a PTX entry's header (80 bytes) ends with its ptxas
            // options record (empty); a cubin's has none (64 bytes).
            let len = if kind == 1 { 80 } else { 64 };
            let mut h = vec![0u8; len];
            h[0..2].copy_from_slice(&kind.to_le_bytes());
            h[4..8].copy_from_slice(&(len as u32).to_le_bytes());
            h[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
            h[0x1c..0x20].copy_from_slice(&90u32.to_le_bytes());
            h[0x28..0x30].copy_from_slice(&0x11u64.to_le_bytes());
            if kind == 1 {
                h[0x14..0x18].copy_from_slice(&64u32.to_le_bytes());
                h[64..68].copy_from_slice(&72u32.to_le_bytes());
            }
            body.extend(h);
            body.extend_from_slice(payload);
        }
        let mut v = 0xBA55_ED50u32.to_le_bytes().to_vec();
        v.extend_from_slice(&1u16.to_le_bytes());
        v.extend_from_slice(&16u16.to_le_bytes());
        v.extend_from_slice(&(body.len() as u64).to_le_bytes());
        v.extend(body);
        v
    }

    /// The header records NVIDIA's driver follows must lie in the header: a PTX entry
    /// without a ptxas-options record crashed the driver.
    #[test]
    fn header_records_outside_the_header_are_refused() {
        let ptx = b".version 9.0\n.target sm_90\n\0\0\0\0";
        let good = fatbin(&[(1, ptx)]);
        check(&good).unwrap();
        // Entry header at 16; its fields at 16 + field.
        let set = |b: &mut Vec<u8>, at: usize, v: u32| {
            b[16 + at..16 + at + 4].copy_from_slice(&v.to_le_bytes());
        };
        for (at, v) in [
            (0x14, 0),      // no options record (what crashed the driver)
            (0x14, 76),     // the record runs past the header
            (0x14, 0x10),   // the record overlaps the fixed fields
            (64, 200),      // the options start past the header
            (68, u32::MAX), // the options run past the header
            (0x20, 8),      // a file name record that runs past the header
        ] {
            let mut b = good.clone();
            set(&mut b, at, v);
            if at == 0x20 {
                set(&mut b, 0x24, 100);
            }
            assert!(
                matches!(check(&b), Err(ImageError::HeaderRecord(0))),
                "field {at:#x} = {v}"
            );
        }
        // A cubin needs no options record.
        check(&fatbin(&[(2, &elf())])).unwrap();
    }

    #[test]
    fn a_well_formed_image_passes() {
        check_elf(&elf()).unwrap();
        let ptx = b".version 9.0\n.target sm_90\n\0\0\0\0";
        let info = check(&fatbin(&[(2, &elf()), (1, ptx)])).unwrap();
        assert!(!info.uses_printf);
        let printf = b".extern .func (.param .b32 r) vprintf (.param .b64 f, .param .b64 a);\0\0";
        assert!(check(&fatbin(&[(1, printf)])).unwrap().uses_printf);
    }

    #[test]
    fn a_bare_cubin_is_checked_and_taken() {
        let e = elf();
        assert_eq!(check(&e).unwrap(), ImageInfo::default());
        let mut lying = e.clone();
        let at = shdr(&lying, 4) + 0x18;
        lying[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            check(&lying),
            Err(ImageError::Elf { entry: 0, .. })
        ));
    }

    #[test]
    fn lying_elf_headers_are_refused() {
        let good = elf();
        let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
        let mut b = good.clone();
        b[0x3c..0x3e].copy_from_slice(&60u16.to_le_bytes());
        cases.push(("more sections than fit", b));
        let mut b = good.clone();
        let s = shdr(&b, 4) + 0x20;
        b[s..s + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        cases.push(("huge .text", b));
        let mut b = good.clone();
        let s = shdr(&b, 3) + 0x18;
        let last = u64_at(&b, s as u64).unwrap() as usize + 7;
        b[last] = b'x';
        cases.push(("unterminated .strtab", b));
        let mut b = good.clone();
        let o_sym = u64_at(&b, (shdr(&b, 2) + 0x18) as u64).unwrap() as usize;
        b[o_sym + 24..o_sym + 28].copy_from_slice(&999u32.to_le_bytes());
        cases.push(("symbol name past .strtab", b));
        let mut b = good.clone();
        let o_rel = u64_at(&b, (shdr(&b, 5) + 0x18) as u64).unwrap() as usize;
        b[o_rel..o_rel + 8].copy_from_slice(&4096u64.to_le_bytes());
        cases.push(("relocation past .text", b));
        let mut b = good.clone();
        b[o_rel + 12..o_rel + 16].copy_from_slice(&77u32.to_le_bytes());
        cases.push(("relocation of a missing symbol", b));
        let mut b = good.clone();
        b[0x3e..0x40].copy_from_slice(&9u16.to_le_bytes());
        cases.push(("name table index", b));
        let mut b = good.clone();
        b[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        b[0x20..0x28].copy_from_slice(&(good.len() as u64 - 8).to_le_bytes());
        cases.push(("program header past the end", b));
        let mut b = good.clone();
        b[4] = 1;
        cases.push(("32-bit", b));
        cases.push(("truncated", good[..good.len() - 1].to_vec()));
        for (what, b) in cases {
            assert!(check_elf(&b).is_err(), "{what} accepted");
        }
    }

    #[test]
    fn lying_containers_are_refused() {
        let ok = fatbin(&[(2, &elf())]);
        // The fat binary claims more bytes than we hold.
        assert!(check(&ok[..ok.len() - 8]).is_err());
        // Two fat binaries in one image (a device-linked program): both checked.
        let mut two = ok.clone();
        two.extend_from_slice(&ok);
        assert_eq!(check(&two).unwrap().containers, 2);
        two.extend_from_slice(&fatbin(&[(2, &[1u8; 64])]));
        assert!(matches!(check(&two), Err(ImageError::Elf { entry: 2, .. })));
        // Leading padding: the driver would read the padding as the header.
        let mut padded = vec![0u8; 8];
        padded.extend_from_slice(&ok);
        assert!(matches!(check(&padded), Err(ImageError::Containers(1))));
        // PTX without its NUL.
        assert!(matches!(
            check(&fatbin(&[(1, b".version 9.0\n\x20\x20\x20")])),
            Err(ImageError::PtxUnterminated(0))
        ));
        // A cubin entry that is no ELF.
        assert!(matches!(
            check(&fatbin(&[(2, &[1u8; 64])])),
            Err(ImageError::Elf { entry: 0, .. })
        ));
        assert!(check(b"not a fat binary at all").is_err());
        assert!(check(&[]).is_err());
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let good = fatbin(&[(2, &elf())]);
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..2000 {
            let mut b = good.clone();
            for _ in 0..4 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let at = (seed % b.len() as u64) as usize;
                b[at] = (seed >> 32) as u8;
            }
            let _ = check(&b);
            let _ = check_elf(&b[16 + 64..]);
        }
    }
}

/// Real nvcc output must pass.
#[cfg(test)]
mod real {
    /// `tests/cuda/vectorAdd.cu` as `nvcc -fatbin -gencode arch=compute_90,code=[sm_90,compute_90]`
    /// (see `testdata/README.md`).
    const IMAGES: &[(&str, &[u8])] = &[
        (
            "13.0 (cubin, zstd PTX)",
            include_bytes!("testdata/vectorAdd-13.0.fatbin"),
        ),
        (
            "13.0 -Xfatbin -compress-all (zstd cubin)",
            include_bytes!("testdata/vectorAdd-13.0-compress-all.fatbin"),
        ),
        (
            "13.0 -G",
            include_bytes!("testdata/vectorAdd-13.0-G.fatbin"),
        ),
        (
            "12.4 -Xfatbin -compress-all (LZ4)",
            include_bytes!("testdata/vectorAdd-12.4-compress-all.fatbin"),
        ),
    ];

    #[test]
    fn nvcc_fat_binaries_pass() {
        for (what, bytes) in IMAGES {
            let info = super::check(bytes).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(!info.uses_printf, "{what}");
            let fb = vcuda_fatbin::parse(bytes).unwrap();
            assert!(
                fb.entries()
                    .any(|e| e.kind == vcuda_fatbin::EntryKind::Cubin),
                "{what}"
            );
        }
    }

    #[test]
    fn printf_is_found_in_compressed_code() {
        let img = include_bytes!("testdata/sumArray-13.0-compress-all.fatbin");
        assert!(super::check(img).unwrap().uses_printf);
    }

    /// More images: every fat binary in each file of `$VCUDA_TEST_FATBINS` (a directory)
    /// must pass.
    #[test]
    fn fat_binaries_from_the_environment_pass() {
        let Some(dir) = std::env::var_os("VCUDA_TEST_FATBINS") else {
            eprintln!("skipping: VCUDA_TEST_FATBINS not set");
            return;
        };
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if !p.is_file() {
                continue;
            }
            let b = std::fs::read(&p).unwrap();
            let fb = vcuda_fatbin::parse(&b).unwrap();
            for c in &fb.containers {
                super::check(c.bytes)
                    .unwrap_or_else(|e| panic!("{}@{}: {e}", p.display(), c.offset));
            }
        }
    }
}
