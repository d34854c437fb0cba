// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Property tests: mutated and truncated real fat binaries, cubins and PTX give errors (or
//! consistent results), never panics.

use std::{path::PathBuf, sync::OnceLock};

use proptest::prelude::*;
use vcuda_fatbin::{EntryKind, cubin, kernel_layouts, parse, ptx};

struct Corpus {
    fatbins: Vec<Vec<u8>>,
    cubins: Vec<Vec<u8>>,
    ptx: Vec<String>,
}

fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let mut fatbins = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "fatbin") {
                fatbins.push(std::fs::read(path).unwrap());
            }
        }
        fatbins.sort();
        let (mut cubins, mut ptx) = (Vec::new(), Vec::new());
        for f in &fatbins {
            for e in parse(f).unwrap().entries() {
                match e.kind {
                    EntryKind::Cubin => cubins.push(e.data().unwrap().into_owned()),
                    EntryKind::Ptx => ptx.push(e.ptx_text().unwrap().into_owned()),
                    _ => {}
                }
            }
        }
        Corpus {
            fatbins,
            cubins,
            ptx,
        }
    })
}

/// Byte flips (position as a fraction of the length, xor mask) and an optional cut.
fn mutations() -> impl Strategy<Value = (Vec<(f64, u8)>, Option<f64>)> {
    (
        prop::collection::vec((0.0..1.0f64, 1..=255u8), 0..16),
        prop::option::of(0.0..1.0f64),
    )
}

fn mutate(input: &[u8], flips: &[(f64, u8)], cut: Option<f64>) -> Vec<u8> {
    let mut v = input.to_vec();
    for &(at, mask) in flips {
        let i = (at * v.len() as f64) as usize;
        if let Some(b) = v.get_mut(i) {
            *b ^= mask;
        }
    }
    if let Some(c) = cut {
        v.truncate((c * v.len() as f64) as usize);
    }
    v
}

/// What the guest and host do with a fat binary.
fn exercise(bytes: &[u8]) {
    let Ok(fb) = parse(bytes) else { return };
    for e in fb.entries() {
        if let Ok(data) = e.data() {
            assert!(data.len() as u64 <= vcuda_fatbin::MAX_DECOMPRESSED_SIZE);
            if e.kind == EntryKind::Cubin {
                let _ = cubin::kernel_params(&data);
            }
        }
        if let Ok(text) = e.ptx_text() {
            let _ = ptx::scan(&text);
        }
        let _ = (e.identifier(), e.ptxas_options());
    }
    let _ = (fb.best_ptx(90), fb.best_cubin(90));
    for layout in kernel_layouts(&fb).values() {
        assert!(
            layout
                .params
                .iter()
                .all(|p| p.offset + p.size <= layout.size.max(p.offset + p.size))
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn mutated_fatbins(which in any::<prop::sample::Index>(), (flips, cut) in mutations()) {
        let c = corpus();
        exercise(&mutate(which.get::<Vec<u8>>(&c.fatbins), &flips, cut));
    }

    #[test]
    fn mutated_cubins(which in any::<prop::sample::Index>(), (flips, cut) in mutations()) {
        let c = corpus();
        let elf = mutate(which.get::<Vec<u8>>(&c.cubins), &flips, cut);
        if let Ok(kernels) = cubin::kernel_params(&elf) {
            for k in kernels {
                for (i, p) in k.params.iter().enumerate() {
                    prop_assert_eq!(usize::from(p.ordinal), i);
                    prop_assert!(p.offset + p.size <= 64 * 1024);
                }
                prop_assert!(k.param_bytes() <= 64 * 1024);
            }
        }
    }

    #[test]
    fn mutated_ptx(which in any::<prop::sample::Index>(), (flips, cut) in mutations()) {
        let c = corpus();
        let text = mutate(which.get::<String>(&c.ptx).as_bytes(), &flips, cut);
        let m = ptx::scan(&String::from_utf8_lossy(&text));
        for e in m.entries {
            let mut end = 0;
            for p in &e.params {
                prop_assert!(p.align.is_power_of_two());
                prop_assert_eq!(p.offset % p.align, 0);
                prop_assert!(p.offset >= end);
                end = p.offset + p.size;
            }
            prop_assert_eq!(e.param_size, end);
        }
    }
}
