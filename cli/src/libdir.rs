// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Finding `libvcuda.so` and keeping its soname links.

use std::io;
use std::path::{Path, PathBuf};

/// The names programs load libvcuda.so by.
pub const SONAMES: &[&str] = &["libcudart.so.13", "libcudart.so.12"];

mod shims {
    include!(concat!(env!("OUT_DIR"), "/shims.rs"));
}

/// The libraries that get a shim of their own with the right SONAME (`libcublas.so.13`,
/// `libcublas.so.12`, `libcurand.so.10`; see cli/build.rs): it forwards every call to
/// libvcuda.so.
pub use shims::SHIMS;

/// Writes the soname shims into `dir` unless they are there already.
fn install_shims(dir: &Path) -> io::Result<()> {
    for (name, bytes) in SHIMS {
        let path = dir.join(name);
        if std::fs::read(&path).is_ok_and(|b| b == *bytes) {
            continue;
        }
        let tmp = dir.join(format!(".{name}.{}", std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(())
}

fn exe_dir() -> io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    exe.parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| io::Error::other("no executable directory"))
}

/// Where libvcuda.so is: `$VCUDA_LIB_DIR`, next to this executable (a cargo build), or
/// `../lib/vcuda/` from it (an installation).
fn find_lib() -> io::Result<PathBuf> {
    if let Some(d) = std::env::var_os("VCUDA_LIB_DIR") {
        let p = PathBuf::from(d).join("libvcuda.so");
        return if p.exists() {
            Ok(p)
        } else {
            Err(io::Error::other(format!("{} not found", p.display())))
        };
    }
    let dir = exe_dir()?;
    for cand in [
        dir.join("libvcuda.so"),
        dir.join("../lib/vcuda/libvcuda.so"),
    ] {
        if cand.exists() {
            return Ok(cand);
        }
    }
    Err(io::Error::other(format!(
        "libvcuda.so not found next to {} (build it with `cargo build --release`, or set VCUDA_LIB_DIR)",
        dir.display()
    )))
}

/// The library directory: libvcuda.so plus soname links, created if missing.
pub fn lib_dir() -> io::Result<PathBuf> {
    let lib = find_lib()?.canonicalize()?;
    let parent = lib
        .parent()
        .ok_or_else(|| io::Error::other("libvcuda.so has no directory"))?;
    // A cargo target directory holds other libraries too; keep the links in their own
    // directory so LD_LIBRARY_PATH picks up nothing else.
    let dir = if parent.join("deps").is_dir() {
        parent.join("vcuda-lib")
    } else {
        parent.to_path_buf()
    };
    std::fs::create_dir_all(&dir)?;
    let mut names = vec!["libvcuda.so"];
    names.extend_from_slice(SONAMES);
    for name in names {
        let link = dir.join(name);
        if link == lib {
            continue;
        }
        let ok = std::fs::read_link(&link).is_ok_and(|t| t == lib);
        if !ok {
            let tmp = dir.join(format!(".{name}.{}", std::process::id()));
            let _ = std::fs::remove_file(&tmp);
            std::os::unix::fs::symlink(&lib, &tmp)?;
            std::fs::rename(&tmp, &link)?;
        }
    }
    install_shims(&dir)?;
    Ok(dir)
}
