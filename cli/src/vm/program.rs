// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The program to run: its path (a `PATH` lookup like a shell's) and the libraries it needs
//! that the guest image lacks (as `ldd` resolves them here).

use std::collections::HashSet;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Resolves PROGRAM like a shell: a path if it has a slash, else a `PATH` lookup.
pub(super) fn resolve_program(name: &str) -> io::Result<PathBuf> {
    let found = if name.contains('/') {
        Some(PathBuf::from(name))
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        })
    };
    let p = found.ok_or_else(|| io::Error::other(format!("{name}: command not found")))?;
    let meta = fs::metadata(&p).map_err(|e| io::Error::new(e.kind(), format!("{name}: {e}")))?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(io::Error::other(format!(
            "{}: not an executable file",
            p.display()
        )));
    }
    Ok(p)
}

/// The libraries `program` needs that the guest does not have: (host path) list.
///
/// Libraries libvcuda provides (`provided`: the names in its lib dir, e.g. libcudart.so.13)
/// are skipped whether ldd finds them here or not; so are those already in the base image.
pub(super) fn extra_libraries(
    program: &Path,
    provided: &HashSet<String>,
    base: &HashSet<String>,
) -> io::Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(program)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot run ldd: {e}")))?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        if text.contains("not a dynamic executable") || text.contains("statically linked") {
            return Ok(Vec::new());
        }
        return Err(io::Error::other(format!(
            "ldd {} failed: {}",
            program.display(),
            text.trim()
        )));
    }
    let mut libs = Vec::new();
    let mut missing = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        // "name => /path (0x...)", "name => not found", "/lib64/ld-linux... (0x...)",
        // "linux-vdso.so.1 (0x...)".
        let (name, path) = match line.split_once(" => ") {
            Some((n, rest)) => (n.trim(), rest.split(" (").next().unwrap_or("").trim()),
            None => {
                let p = line.split(" (").next().unwrap_or("").trim();
                (p.rsplit('/').next().unwrap_or(p), p)
            }
        };
        if name.is_empty() || provided.contains(name) || name.starts_with("linux-vdso") {
            continue;
        }
        if path == "not found" {
            missing.push(name.to_owned());
            continue;
        }
        if !path.starts_with('/') || base.contains(path) {
            continue;
        }
        libs.push(PathBuf::from(path));
    }
    if !missing.is_empty() {
        return Err(io::Error::other(format!(
            "{} needs libraries that are not on this machine: {} (set LD_LIBRARY_PATH so that \
             ldd finds them)",
            program.display(),
            missing.join(", ")
        )));
    }
    Ok(libs)
}
