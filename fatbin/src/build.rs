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
}
