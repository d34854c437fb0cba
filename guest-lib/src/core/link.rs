// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Linking device code, for the driver's JIT linker (`cuLink*`) and the drop-in
//! `libnvJitLink.so.13` alike: what programs link is PTX (Numba, cuda-python's `cuda.core`),
//! and the "cubin" a link completes with is a fat binary holding that PTX, which
//! `cuModuleLoadData`/`cuLibraryLoadData` take and the backend compiles (the CUDA executor)
//! or runs (the CPU executor). One fat binary passes through as it is; otherwise every PTX
//! input, and the PTX of every fat binary input, becomes one PTX entry of the output, and
//! the backend links those units (`.extern` functions and variables resolve across them).
//! Cubins, objects, libraries and LTO-IR hold machine code or compiler IR vcuda cannot
//! link: a link of them fails with a reason. The one library taken is NVIDIA's device
//! runtime, `libcudadevrt.a`, which links name for its cooperative-groups entry points
//! (Numba's grid group): vcuda's own PTX for them (`devrt.ptx`) goes in its place.

use super::module::ptx_units_fatbin;

/// One input of a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// PTX text (with or without its terminating NUL).
    Ptx(Vec<u8>),
    /// A fat binary.
    Fatbin(Vec<u8>),
    /// NVIDIA's device runtime (`libcudadevrt.a`): [`DEVICE_RUNTIME`] links in its place.
    DeviceRuntime,
}

/// vcuda's device runtime: the cooperative-groups entry points of `libcudadevrt.a`
/// (`cudaCGGetIntrinsicHandle`, `cudaCGSynchronize`, `cudaCGSynchronizeGrid`), in PTX.
pub const DEVICE_RUNTIME: &str = include_str!("devrt.ptx");

/// What kind of input some bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// PTX text.
    Ptx,
    /// A fat binary.
    Fatbin,
    /// LTO-IR, in the container NVIDIA's compilers write (`-gen-lto`).
    Ltoir,
    /// NVIDIA's device runtime library, `libcudadevrt.a`.
    DeviceRuntime,
}

/// What an input of unknown kind is, by its first bytes, or why it cannot be linked.
pub fn classify(data: &[u8]) -> Result<Kind, &'static str> {
    const FATBIN_MAGIC: [u8; 4] = 0xBA55_ED50u32.to_le_bytes();
    const LTOIR_MAGIC: [u8; 4] = 0x7F4E_43EDu32.to_le_bytes();
    if data.starts_with(&FATBIN_MAGIC) {
        return Ok(Kind::Fatbin);
    }
    if data.starts_with(&LTOIR_MAGIC) {
        return Ok(Kind::Ltoir);
    }
    if data.starts_with(b"\x7fELF") {
        return Err("a cubin or object (machine code): vcuda links PTX and fat binaries only");
    }
    if data.starts_with(b"!<arch>\n") {
        // Its one member, by name (in the member headers or the long-name table).
        let head = &data[..data.len().min(4096)];
        if head.windows(20).any(|w| w == b"cuda_device_runtime.") {
            return Ok(Kind::DeviceRuntime);
        }
        return Err(
            "a library archive other than libcudadevrt.a: vcuda links PTX and fat binaries only",
        );
    }
    if data.starts_with(b"BC\xc0\xde") || data.starts_with(&[0xde, 0xc0, 0x17, 0x0b]) {
        return Err("NVVM IR bitcode: compile it to PTX (or LTO-IR) first");
    }
    let text = String::from_utf8_lossy(&data[..data.len().min(4096)]);
    if text.contains(".version") || text.contains(".target") || text.trim_start().starts_with("//")
    {
        return Ok(Kind::Ptx);
    }
    Err("an input vcuda does not recognize (neither PTX nor a fat binary)")
}

/// `text` (PTX) with `.maxnreg max` on every `.entry` that has none, as ptxas's
/// `-maxrregcount` (nvJitLink's option, `CU_JIT_MAX_REGISTERS`) applies to a whole link: the
/// directive goes after the parameter list, before the body.
pub fn with_max_registers(text: &[u8], max: u32) -> Vec<u8> {
    let s = String::from_utf8_lossy(text);
    let mut out = String::with_capacity(s.len() + 64);
    let mut rest: &str = &s;
    while let Some(at) = rest.find(".entry") {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        // The parameter list, balanced.
        let Some(open) = tail.find('(') else {
            out.push_str(tail);
            return out.into_bytes();
        };
        let mut depth = 0usize;
        let mut close = None;
        for (i, c) in tail[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(open + i + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else {
            out.push_str(tail);
            return out.into_bytes();
        };
        let Some(body) = tail[close..].find(['{', ';']).map(|b| close + b) else {
            out.push_str(tail);
            return out.into_bytes();
        };
        let directives = &tail[close..body];
        out.push_str(&tail[..body]);
        if tail[body..].starts_with('{') && !directives.contains(".maxnreg") {
            out.push_str(&format!(" .maxnreg {max}\n"));
        }
        rest = &tail[body..];
        // Past this `.entry` keyword.
        if let Some(next) = rest.get(1..) {
            out.push_str(&rest[..1]);
            rest = next;
        } else {
            break;
        }
    }
    out.push_str(rest);
    out.into_bytes()
}

/// Applies `max` registers (see [`with_max_registers`]) to the PTX of `inputs`.
pub fn limit_registers(inputs: &mut [Input], max: Option<u32>) {
    let Some(max) = max.filter(|&m| m > 0) else {
        return;
    };
    for i in inputs {
        if let Input::Ptx(text) = i {
            let nul = text.last() == Some(&0);
            if nul {
                text.pop();
            }
            *text = with_max_registers(text, max);
            if nul {
                text.push(0);
            }
        }
    }
}

/// The PTX units of `inputs`, each NUL-terminated.
fn units(inputs: &[Input]) -> Result<Vec<Vec<u8>>, String> {
    let mut units = Vec::new();
    for i in inputs {
        match i {
            Input::Ptx(data) => {
                let mut text = data.clone();
                if text.last() != Some(&0) {
                    text.push(0);
                }
                units.push(text);
            }
            Input::Fatbin(data) => {
                let fb = vcuda_fatbin::parse(data)
                    .map_err(|e| format!("a fat binary input is malformed: {e}"))?;
                let ptx = fb
                    .ptx_units(u32::MAX)
                    .map_err(|e| format!("too much PTX to link: {e}"))?;
                if ptx.is_empty() {
                    return Err("a fat binary input has no PTX to link".into());
                }
                for e in ptx {
                    let text = e
                        .ptx_text()
                        .map_err(|e| format!("cannot read a PTX entry: {e}"))?;
                    let mut text = text.into_owned().into_bytes();
                    text.push(0);
                    units.push(text);
                }
            }
            Input::DeviceRuntime => {}
        }
    }
    // The device runtime once, however often it was added.
    if inputs.contains(&Input::DeviceRuntime) {
        let mut text = DEVICE_RUNTIME.as_bytes().to_vec();
        text.push(0);
        units.push(text);
    }
    Ok(units)
}

/// Links `inputs` into one image a module load takes: the fat binary itself if it is the
/// only input, else a fat binary with one PTX entry per PTX unit.
pub fn link(inputs: &[Input]) -> Result<Vec<u8>, String> {
    match inputs {
        [] => Err("nothing to link".into()),
        [Input::Fatbin(f)] => Ok(f.clone()),
        _ => {
            let units = units(inputs)?;
            let refs: Vec<&[u8]> = units.iter().map(Vec::as_slice).collect();
            Ok(ptx_units_fatbin(&refs))
        }
    }
}

/// The linked PTX of `inputs` where it is one unit (NUL-terminated), as nvJitLink's
/// `-ptx` output: several units would need a PTX-level link, which vcuda leaves to the
/// backend.
pub fn linked_ptx(inputs: &[Input]) -> Result<Vec<u8>, String> {
    let mut units = units(inputs)?;
    match units.len() {
        1 => Ok(units.remove(0)),
        0 => Err("nothing to link".into()),
        n => Err(format!(
            "{n} PTX units: vcuda gives linked PTX for one unit only (the linked cubin holds them all)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &[u8] = b"//\n.version 8.0\n.target sm_90\n.address_size 64\n";

    #[test]
    fn a_register_limit_goes_on_every_entry_without_one() {
        let src = ".visible .entry a(\n.param .u64 p\n)\n{\nret;\n}\n\
                   .entry b() .maxnreg 20\n{\nret;\n}\n.func c()\n{\nret;\n}\n";
        let out = String::from_utf8(with_max_registers(src.as_bytes(), 57)).unwrap();
        assert!(out.contains(".param .u64 p\n)\n .maxnreg 57\n{"), "{out}");
        assert!(out.contains(".entry b() .maxnreg 20\n{"), "{out}");
        assert_eq!(out.matches(".maxnreg").count(), 2, "{out}");
    }

    #[test]
    fn inputs_are_told_apart_by_their_bytes() {
        assert_eq!(classify(PTX), Ok(Kind::Ptx));
        assert_eq!(classify(&0xBA55_ED50u32.to_le_bytes()), Ok(Kind::Fatbin));
        assert_eq!(classify(b"\xedCN\x7f\x01C"), Ok(Kind::Ltoir));
        assert!(classify(b"\x7fELF\x02\x01").unwrap_err().contains("cubin"));
        assert!(classify(b"!<arch>\n").unwrap_err().contains("libcudadevrt"));
        let devrt = b"!<arch>\ncuda_device_runtime.o/ 0           0     0     644     8";
        assert_eq!(classify(devrt), Ok(Kind::DeviceRuntime));
        assert!(classify(b"BC\xc0\xde").unwrap_err().contains("NVVM"));
        assert!(classify(b"garbage").is_err());
    }

    #[test]
    fn ptx_links_into_a_fat_binary_that_keeps_it() {
        let image = link(&[Input::Ptx(PTX.to_vec()), Input::Ptx(PTX.to_vec())]).unwrap();
        let fb = vcuda_fatbin::parse(&image).unwrap();
        assert_eq!(fb.ptx_units(u32::MAX).unwrap().len(), 2);
        // A fat binary alone passes through; it links with PTX into one image.
        assert_eq!(link(&[Input::Fatbin(image.clone())]).unwrap(), image);
        let both = link(&[Input::Fatbin(image), Input::Ptx(PTX.to_vec())]).unwrap();
        assert_eq!(
            vcuda_fatbin::parse(&both)
                .unwrap()
                .ptx_units(u32::MAX)
                .unwrap()
                .len(),
            3
        );
        // libcudadevrt.a, named twice, adds vcuda's device runtime once.
        let rt = link(&[
            Input::DeviceRuntime,
            Input::Ptx(PTX.to_vec()),
            Input::DeviceRuntime,
        ])
        .unwrap();
        let fb = vcuda_fatbin::parse(&rt).unwrap();
        let units = fb.ptx_units(u32::MAX).unwrap();
        assert_eq!(units.len(), 2);
        assert!(units[1].ptx_text().unwrap().contains("cudaCGSynchronize"));
        assert!(link(&[]).is_err());
        let one = linked_ptx(&[Input::Ptx(PTX.to_vec())]).unwrap();
        assert_eq!(one.last(), Some(&0));
        assert!(linked_ptx(&[Input::Ptx(PTX.to_vec()), Input::Ptx(PTX.to_vec())]).is_err());
    }
}
