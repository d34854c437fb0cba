// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Fat binaries of PTX text, laid out as nvcc writes them (what `libvcuda` hands the
//! backend for `cuModuleLoadData` of bare PTX and for JIT links, and what tests load).

/// Bytes of a PTX entry header as nvcc writes it.
const PTX_HEADER: usize = 80;

/// A fat binary holding each of `units` (PTX text; a terminating NUL is added where
/// missing) as a PTX entry for `arch` (e.g. 90 for sm_90). Each entry header is laid out as
/// nvcc writes it (80 bytes: the ptxas-options record it points to, the PTX ISA version,
/// the 64-bit Linux flags); NVIDIA's driver reads those fields and crashed on a header
/// without them.
pub fn ptx_fatbin(units: &[&[u8]], arch: u32) -> Vec<u8> {
    let mut h = Vec::new();
    for ptx in units {
        let (major, minor) = ptx_isa_version(ptx);
        let mut payload = ptx.to_vec();
        if payload.last() != Some(&0) {
            payload.push(0);
        }
        payload.resize(payload.len().next_multiple_of(8), 0);
        let mut e = vec![0u8; PTX_HEADER];
        e[0..2].copy_from_slice(&1u16.to_le_bytes()); // PTX
        e[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
        e[4..8].copy_from_slice(&(PTX_HEADER as u32).to_le_bytes());
        e[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        // Where the ptxas options are: a {u32 offset, u32 len} record at 64 (none: len 0).
        e[0x14..0x18].copy_from_slice(&64u32.to_le_bytes());
        e[0x18..0x1a].copy_from_slice(&minor.to_le_bytes());
        e[0x1a..0x1c].copy_from_slice(&major.to_le_bytes());
        e[0x1c..0x20].copy_from_slice(&arch.to_le_bytes());
        e[0x28..0x30].copy_from_slice(&0x11u64.to_le_bytes()); // 64-bit, Linux
        e[64..68].copy_from_slice(&72u32.to_le_bytes());
        h.extend(e);
        h.extend(payload);
    }
    let mut f = 0xBA55_ED50u32.to_le_bytes().to_vec();
    f.extend_from_slice(&1u16.to_le_bytes());
    f.extend_from_slice(&16u16.to_le_bytes());
    f.extend_from_slice(&(h.len() as u64).to_le_bytes());
    f.extend(h);
    f
}

/// The fat binary `bytes` (one or more concatenated containers) without the cubins that no
/// device of compute capability major versions `majors` runs (SASS runs only within its own
/// major version); PTX, LTO-IR and every other entry stay, in order, with their headers as
/// they were. A container with nothing else stays whole, so a driver still says why none
/// of it runs (`CUDA_ERROR_NO_BINARY_FOR_GPU`). `None` when nothing would be dropped, or
/// when `bytes` is not a well-formed fat binary (whoever reads it then sees it as it is).
///
/// A fat binary carries a cubin per architecture it was built for: CuPy 14's Thrust module
/// for CUDA 12 holds twelve (72 MB), of which an H100 runs one.
pub fn without_foreign_cubins(bytes: &[u8], majors: &[u32]) -> Option<Vec<u8>> {
    let f = crate::parse(bytes).ok()?;
    let foreign = |e: &crate::Entry<'_>| {
        e.kind == crate::EntryKind::Cubin && !majors.contains(&(e.arch / 10))
    };
    let trimmed =
        |c: &crate::Container<'_>| c.entries.iter().any(foreign) && !c.entries.iter().all(foreign);
    if !f.containers.iter().any(trimmed) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len());
    for c in &f.containers {
        if !trimmed(c) {
            out.extend_from_slice(c.bytes);
            continue;
        }
        // parse checked the header and its size.
        let header_size = usize::from(u16::from_le_bytes([c.bytes[6], c.bytes[7]]));
        let start = out.len();
        out.extend_from_slice(&c.bytes[..header_size]);
        for e in c.entries.iter().filter(|e| !foreign(e)) {
            out.extend_from_slice(e.header);
            out.extend_from_slice(e.payload);
        }
        let fat_size = (out.len() - start - header_size) as u64;
        out[start + 8..start + 16].copy_from_slice(&fat_size.to_le_bytes());
    }
    Some(out)
}

/// The `.version MAJOR.MINOR` a PTX text declares (9.0 if it says none).
fn ptx_isa_version(ptx: &[u8]) -> (u16, u16) {
    let text = String::from_utf8_lossy(&ptx[..ptx.len().min(64 << 10)]);
    text.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(".version"))
        .and_then(|v| {
            let (a, b) = v.trim().split_once('.')?;
            Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
        })
        .unwrap_or((9, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ptx_entry_has_the_header_nvcc_writes() {
        let ptx = b"//\n.version 8.5\n.target sm_90\n.address_size 64\n\0";
        let f = ptx_fatbin(&[ptx], 90);
        let parsed = crate::parse(&f).unwrap();
        let e = parsed.entries().next().unwrap();
        assert_eq!(e.kind, crate::EntryKind::Ptx);
        assert_eq!((e.major, e.minor, e.arch), (8, 5, 90));
        assert_eq!(e.header.len(), 80);
        assert_eq!(e.flags.0, 0x11);
        // The ptxas-options record the header points to: {offset 72, length 0}.
        let at = u32::from_le_bytes(e.header[0x14..0x18].try_into().unwrap()) as usize;
        assert_eq!(&e.header[at..at + 8], &[72, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&e.payload[..ptx.len()], ptx);
        assert_eq!(ptx_isa_version(b".target sm_90\n"), (9, 0));
        // A terminating NUL is added where missing, once.
        let g = ptx_fatbin(&[b".version 7.0\n"], 50);
        let parsed = crate::parse(&g).unwrap();
        let e = parsed.entries().next().unwrap();
        assert_eq!(&e.payload[..14], b".version 7.0\n\0");
        assert_eq!((e.major, e.minor, e.arch), (7, 0, 50));
    }

    /// A cubin entry for `arch` whose payload is `fill` repeated (not a real ELF: only the
    /// container is read here).
    fn cubin(arch: u32, fill: u8) -> Vec<u8> {
        let mut e = vec![0u8; 64];
        e[0..2].copy_from_slice(&2u16.to_le_bytes());
        e[4..8].copy_from_slice(&64u32.to_le_bytes());
        e[8..16].copy_from_slice(&16u64.to_le_bytes());
        e[0x1c..0x20].copy_from_slice(&arch.to_le_bytes());
        e.extend([fill; 16]);
        e
    }

    /// A container of `cubins` alone.
    fn cubin_only(cubins: &[Vec<u8>]) -> Vec<u8> {
        let body = cubins.concat();
        let mut f = 0xBA55_ED50u32.to_le_bytes().to_vec();
        f.extend_from_slice(&1u16.to_le_bytes());
        f.extend_from_slice(&16u16.to_le_bytes());
        f.extend_from_slice(&(body.len() as u64).to_le_bytes());
        f.extend(body);
        f
    }

    /// `ptx_fatbin(ptx)` with `cubins` added to its container.
    fn with_cubins(ptx: &[u8], cubins: &[Vec<u8>]) -> Vec<u8> {
        let mut f = ptx_fatbin(&[ptx], 90);
        for c in cubins {
            f.extend_from_slice(c);
        }
        let fat = (f.len() - 16) as u64;
        f[8..16].copy_from_slice(&fat.to_le_bytes());
        f
    }

    #[test]
    fn cubins_for_other_majors_are_dropped() {
        let ptx = b".version 8.5\n.target sm_90\n\0";
        let a = with_cubins(
            ptx,
            &[cubin(80, 1), cubin(90, 2), cubin(86, 3), cubin(100, 4)],
        );
        let b = with_cubins(ptx, &[cubin(120, 5)]);
        // Two containers, as a device-linked program's image and its units arrive.
        let both = [a.clone(), b.clone()].concat();
        let kept = without_foreign_cubins(&both, &[9]).unwrap();
        let f = crate::parse(&kept).unwrap();
        assert_eq!(f.containers.len(), 2);
        let kinds: Vec<_> = f
            .containers
            .iter()
            .map(|c| {
                c.entries
                    .iter()
                    .map(|e| (e.kind, e.arch))
                    .collect::<Vec<_>>()
            })
            .collect();
        use crate::EntryKind::{Cubin, Ptx};
        assert_eq!(kinds, [vec![(Ptx, 90), (Cubin, 90)], vec![(Ptx, 90)]]);
        let sm90 = &f.containers[0].entries[1];
        assert_eq!(sm90.payload, &[2; 16]);
        assert_eq!(
            f.containers[0].entries[0].ptx_text().unwrap(),
            ".version 8.5\n.target sm_90\n"
        );
        // Two majors: sm_80, sm_86, sm_90 stay.
        let kept = without_foreign_cubins(&a, &[8, 9]).unwrap();
        let f = crate::parse(&kept).unwrap();
        let archs: Vec<_> = f.entries().map(|e| e.arch).collect();
        assert_eq!(archs, [90, 80, 90, 86]);
        // A container of foreign cubins only stays whole; alone, nothing changes.
        let c = [
            with_cubins(ptx, &[cubin(90, 6), cubin(75, 9)]),
            cubin_only(&[cubin(80, 7), cubin(86, 8)]),
        ]
        .concat();
        let kept = without_foreign_cubins(&c, &[9]).unwrap();
        let f = crate::parse(&kept).unwrap();
        let archs: Vec<Vec<u32>> = f
            .containers
            .iter()
            .map(|c| c.entries.iter().map(|e| e.arch).collect())
            .collect();
        assert_eq!(archs, [vec![90, 90], vec![80, 86]]);
        assert!(without_foreign_cubins(&cubin_only(&[cubin(80, 7)]), &[9]).is_none());
        // Nothing to drop, or not a fat binary: None.
        assert!(without_foreign_cubins(&a, &[8, 9, 10]).is_none());
        assert!(without_foreign_cubins(b"not a fat binary", &[9]).is_none());
        assert!(without_foreign_cubins(&a[..a.len() - 8], &[9]).is_none());
    }
}
