// SPDX-License-Identifier: Apache-2.0 OR MIT
//! What a guest needs to run a program: the guest image (found or built) and an initrd that
//! is the image's base initramfs with a second archive appended (the program, the libraries
//! it loads that the base lacks, the files of `--add`, and `/vcuda/run`, which sets the
//! environment and runs the program with its arguments). `vcuda vm run` boots it;
//! `vcuda vm image` writes it out for a QEMU or libvirt domain of one's own.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::Path;

use super::added::{Added, added, is_elf, is_shared_library};
use super::image::{Image, guest_image};
use super::initramfs::{GUEST_BIN_DIR, GUEST_LIB_DIR, build_initrd, run_script};
use super::options::VmOptions;
use super::program::{extra_libraries, resolve_program};
use crate::libdir;

/// Finds (or builds) the guest image and writes the initrd that runs `opts.program` to
/// `initrd`; the image.
pub(super) fn prepare(opts: &VmOptions, initrd: &Path) -> io::Result<Image> {
    let lib_dir = libdir::lib_dir()?;
    let provided: HashSet<String> = fs::read_dir(&lib_dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .chain(libdir::SONAMES.iter().map(|s| (*s).to_owned()))
        .collect();

    let program = resolve_program(&opts.program[0])?;
    let mut env = Vec::new();
    for kv in &opts.env {
        let (k, v) = kv
            .split_once('=')
            .filter(|(k, _)| {
                !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
            .ok_or_else(|| io::Error::other(format!("--env wants KEY=VALUE, got {kv:?}")))?;
        env.push((k.to_owned(), v.to_owned()));
    }
    for k in ["VCUDA_LOG"] {
        if let Ok(v) = std::env::var(k)
            && !env.iter().any(|(n, _)| n == k)
        {
            env.push((k.to_owned(), v));
        }
    }

    let image = guest_image(opts, &lib_dir)?;
    let base: HashSet<String> = fs::read_to_string(&image.manifest)?
        .lines()
        .map(str::to_owned)
        .collect();
    let extra = opts
        .add
        .iter()
        .map(String::as_str)
        .map(added)
        .collect::<io::Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    let mut libs = extra_libraries(&program, &provided, &base)?;
    // Shared libraries among the added files (a Python package's extension modules) need
    // theirs too; those the added files provide themselves are found by their rpath.
    for a in &extra {
        if let Added::File(src, _) = a
            && is_shared_library(src)
            && is_elf(src)
        {
            let found = extra_libraries(src, &provided, &base).unwrap_or_else(|e| {
                eprintln!("vcuda vm run: warning: {e}");
                Vec::new()
            });
            for l in found {
                // Compared by where they really are (ldd may name a shipped file through
                // `..`), kept under the name ldd found (the soname).
                let real = fs::canonicalize(&l).unwrap_or_else(|_| l.clone());
                let shipped = extra
                    .iter()
                    .any(|e| matches!(e, Added::File(s, _) if *s == real));
                if !shipped && !libs.contains(&l) {
                    libs.push(l);
                }
            }
        }
    }
    let mut lib_path = vec![GUEST_LIB_DIR.to_owned()];
    for l in &libs {
        let d = l
            .parent()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !lib_path.contains(&d) {
            lib_path.push(d);
        }
    }
    let name = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "program".into());
    let guest_program = format!("{GUEST_BIN_DIR}/{name}");
    let script = run_script(
        &guest_program,
        &opts.program[1..],
        &env,
        &lib_path.join(":"),
    );

    build_initrd(
        initrd,
        &image,
        &program,
        &guest_program,
        &script,
        &libs,
        &extra,
    )?;
    Ok(image)
}
