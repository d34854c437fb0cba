// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Kernel parameter layouts for marshaling `void** args` into one buffer.

use std::collections::HashMap;

use crate::{EntryKind, Fatbin, MAX_PARAM_BYTES, cubin::KernelInfo, ptx::PtxEntry};

/// Where a layout came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LayoutSource {
    /// A cubin's `.nv.info` for this arch.
    Cubin {
        /// The cubin's arch.
        arch: u32,
    },
    /// A PTX `.entry` declaration for this arch.
    Ptx {
        /// The PTX entry's arch.
        arch: u32,
    },
}

/// One parameter: `size` bytes copied from `args[i]` to `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Param {
    /// Byte offset in the parameter buffer.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
}

/// A kernel's parameter layout, in signature order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParamLayout {
    /// Parameters in signature order.
    pub params: Vec<Param>,
    /// Size of the parameter buffer (at least the end of every parameter).
    pub size: u32,
    /// Where the layout came from.
    pub source: LayoutSource,
}

/// Errors from [`ParamLayout::pack`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutError {
    /// The number of arguments differs from the number of parameters.
    #[error("Kernel takes {expected} arguments, {actual} given")]
    ArgCount {
        /// Parameters in the layout.
        expected: usize,
        /// Arguments given.
        actual: usize,
    },
    /// An argument whose length differs from its parameter's size.
    #[error("Argument {index} has {actual} bytes, {expected} expected")]
    ArgSize {
        /// Argument index.
        index: usize,
        /// Parameter size.
        expected: u32,
        /// Argument length.
        actual: usize,
    },
    /// A layout (built by hand) larger than [`MAX_PARAM_BYTES`].
    #[error("Parameter buffer of {0} bytes is too large")]
    TooLarge(usize),
}

impl ParamLayout {
    /// The layout a cubin gives (ordinals `0..n`, as [`crate::cubin::kernel_params`] checks).
    pub fn from_kernel_info(info: &KernelInfo, arch: u32) -> Self {
        ParamLayout {
            params: info
                .params
                .iter()
                .map(|p| Param {
                    offset: p.offset,
                    size: p.size,
                })
                .collect(),
            size: info.param_bytes(),
            source: LayoutSource::Cubin { arch },
        }
    }

    /// The layout a PTX `.entry` gives.
    pub fn from_ptx(entry: &PtxEntry, arch: u32) -> Self {
        ParamLayout {
            params: entry
                .params
                .iter()
                .map(|p| Param {
                    offset: p.offset,
                    size: p.size,
                })
                .collect(),
            size: entry.param_size,
            source: LayoutSource::Ptx { arch },
        }
    }

    /// Builds the parameter buffer from the bytes of each argument (what `args[i]` points to,
    /// `params[i].size` bytes long). Gaps are zero.
    ///
    /// # Errors
    ///
    /// A wrong number of arguments, an argument of the wrong length, or a layout larger than
    /// [`MAX_PARAM_BYTES`] (never the case for layouts from [`kernel_layouts`]).
    pub fn pack(&self, args: &[&[u8]]) -> Result<Vec<u8>, LayoutError> {
        if args.len() != self.params.len() {
            return Err(LayoutError::ArgCount {
                expected: self.params.len(),
                actual: args.len(),
            });
        }
        let end = self
            .params
            .iter()
            .map(|p| p.offset as usize + p.size as usize)
            .max();
        let len = end.unwrap_or(0).max(self.size as usize);
        if len > MAX_PARAM_BYTES as usize {
            return Err(LayoutError::TooLarge(len));
        }
        let mut buf = vec![0u8; len];
        for (index, (p, a)) in self.params.iter().zip(args).enumerate() {
            if a.len() != p.size as usize {
                return Err(LayoutError::ArgSize {
                    index,
                    expected: p.size,
                    actual: a.len(),
                });
            }
            buf[p.offset as usize..][..a.len()].copy_from_slice(a);
        }
        Ok(buf)
    }
}

/// The parameter layout of every kernel in `fatbin`, keyed by mangled name.
///
/// Cubins are consulted first, highest arch first; kernels no cubin describes (no cubin at
/// all, or no `.nv.info` section for them) come from the PTX `.entry` declarations, highest
/// arch first. Entries that fail to decompress or parse are skipped: a kernel that is missing
/// from the map has no layout anywhere in the fat binary.
pub fn kernel_layouts(fatbin: &Fatbin<'_>) -> HashMap<String, ParamLayout> {
    let mut entries: Vec<_> = fatbin.entries().collect();
    // Stable: among equal arches the first entry wins.
    entries.sort_by_key(|e| std::cmp::Reverse(e.arch));
    let mut out = HashMap::new();
    for e in entries.iter().filter(|e| e.kind == EntryKind::Cubin) {
        let Ok(data) = e.data() else { continue };
        let Ok(kernels) = crate::cubin::kernel_params(&data) else {
            continue;
        };
        for k in kernels {
            let layout = ParamLayout::from_kernel_info(&k, e.arch);
            out.entry(k.name).or_insert(layout);
        }
    }
    for e in entries.iter().filter(|e| e.kind == EntryKind::Ptx) {
        let Ok(text) = e.ptx_text() else { continue };
        for k in crate::ptx::entry_params(&text) {
            let layout = ParamLayout::from_ptx(&k, e.arch);
            out.entry(k.name).or_insert(layout);
        }
    }
    out
}

/// The names of the module variables (`__device__`, `__constant__`) a fat binary
/// defines, from its cubins' symbol tables and its PTX, each once (sorted). Entries that
/// fail to decompress or parse are skipped.
pub fn module_variables(fatbin: &Fatbin<'_>) -> Vec<String> {
    let mut out = std::collections::BTreeSet::new();
    for e in fatbin.entries() {
        match e.kind {
            EntryKind::Cubin => {
                if let Ok(data) = e.data()
                    && let Ok(names) = crate::cubin::variables(&data)
                {
                    out.extend(names);
                }
            }
            EntryKind::Ptx => {
                if let Ok(text) = e.ptx_text() {
                    out.extend(
                        crate::ptx::variables(&text)
                            .into_iter()
                            .filter(|v| !v.external && v.size.is_some_and(|s| s > 0))
                            .map(|v| v.name),
                    );
                }
            }
            _ => {}
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_checks_lengths() {
        let l = ParamLayout {
            params: vec![Param { offset: 0, size: 8 }, Param { offset: 8, size: 4 }],
            size: 12,
            source: LayoutSource::Ptx { arch: 90 },
        };
        let buf = l.pack(&[&7u64.to_le_bytes(), &3u32.to_le_bytes()]).unwrap();
        assert_eq!(buf, [7, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0]);
        assert_eq!(
            l.pack(&[&[0; 8]]),
            Err(LayoutError::ArgCount {
                expected: 2,
                actual: 1
            })
        );
        assert_eq!(
            l.pack(&[&[0; 8], &[0; 2]]),
            Err(LayoutError::ArgSize {
                index: 1,
                expected: 4,
                actual: 2
            })
        );
        let huge = ParamLayout {
            size: u32::MAX,
            ..l
        };
        let err = huge.pack(&[&[0; 8], &[0; 4]]);
        assert_eq!(err, Err(LayoutError::TooLarge(u32::MAX as usize)));
    }
}
