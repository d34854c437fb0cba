// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The README's coverage table says what the build's `coverage.tsv` says: per library
//! version node, how many names are exported, implemented, and not supported.

use std::collections::BTreeMap;
use std::path::PathBuf;

use vcuda_tests::{bin_dir, repo_root};

/// The newest `coverage.tsv` the guest library's build script wrote.
fn coverage_tsv() -> PathBuf {
    let build = bin_dir().join("build");
    std::fs::read_dir(&build)
        .expect("target/<profile>/build")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("vcuda-guest-"))
        .map(|e| e.path().join("out/coverage.tsv"))
        .filter(|p| p.exists())
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .expect("coverage.tsv: build vcuda-guest first")
}

/// `node -> (exported, implemented)`.
fn counts() -> BTreeMap<String, (u32, u32)> {
    let text = std::fs::read_to_string(coverage_tsv()).unwrap();
    let mut m: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 3, "{line}");
        for node in f[1].split(',') {
            let e = m.entry(node.to_owned()).or_default();
            e.0 += 1;
            e.1 += u32::from(f[2] != "stub");
        }
    }
    m
}

#[test]
fn readme_table_matches_the_build() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let counts = counts();
    let mut rows = 0;
    for line in readme.lines() {
        // | `libcudart.so.13` | 422 | 107 | 315 |
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() != 6 || !cells[1].starts_with("`lib") {
            continue;
        }
        let node = cells[1].trim_matches('`');
        let Some(&(exported, implemented)) = counts.get(node) else {
            continue;
        };
        let want = [exported, implemented, exported - implemented].map(|n| n.to_string());
        assert_eq!(
            &cells[2..5],
            &want.iter().map(String::as_str).collect::<Vec<_>>()[..],
            "README's coverage row for {node} is stale; the build says exported {exported}, implemented {implemented}"
        );
        rows += 1;
    }
    assert_eq!(
        rows,
        counts.len(),
        "README.md needs one coverage row per version node: {:?}",
        counts.keys().collect::<Vec<_>>()
    );
}
