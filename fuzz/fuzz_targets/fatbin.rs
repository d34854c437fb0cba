// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Arbitrary bytes through everything vcuda does with a guest's fat binary: parse, decompress,
//! read cubin kernel info, scan PTX, build layouts. Seed it with fatbin/tests/data.

#![no_main]

use libfuzzer_sys::fuzz_target;
use vcuda_fatbin::{EntryKind, MAX_DECOMPRESSED_SIZE, cubin, kernel_layouts, parse, ptx};

fuzz_target!(|data: &[u8]| {
    if let Ok(fb) = parse(data) {
        for e in fb.entries() {
            if let Ok(bytes) = e.data() {
                assert!(bytes.len() as u64 <= MAX_DECOMPRESSED_SIZE);
                if e.kind == EntryKind::Cubin {
                    let _ = cubin::kernel_params(&bytes);
                }
            }
            if let Ok(text) = e.ptx_text() {
                let _ = ptx::scan(&text);
            }
            let _ = (e.identifier(), e.ptxas_options());
        }
        let _ = (fb.best_ptx(90), fb.best_cubin(90));
        for layout in kernel_layouts(&fb).values() {
            // What the guest does with a layout must not panic either.
            let args: Vec<Vec<u8>> = layout
                .params
                .iter()
                .map(|p| vec![0; p.size as usize])
                .collect();
            let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            let buf = layout
                .pack(&args)
                .expect("a layout accepts its own argument sizes");
            assert!(buf.len() >= layout.size as usize);
        }
    }
    // The cubin and PTX readers on their own, for inputs that are a bare ELF or PTX text.
    if let Ok(kernels) = cubin::kernel_params(data) {
        for k in kernels {
            assert!(k.param_bytes() <= 64 * 1024);
        }
    }
    // A bare cubin's length, as the guest library finds it: never past the input's tables
    // and sections' claims, never past the largest cubin taken.
    if let Ok(tables) = cubin::elf_tables_end(data) {
        if let Some(head) = data.get(..tables)
            && let Ok(len) = cubin::elf_len(head)
        {
            assert!(len >= tables && len as u64 <= cubin::MAX_CUBIN_LEN);
        }
    }
    let _ = ptx::scan(&String::from_utf8_lossy(data));
});
