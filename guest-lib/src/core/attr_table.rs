// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Where launch attributes are kept: per stream and per kernel node, the values that differ
//! from the defaults. Streams and graphs forget theirs here when they go; the calls that
//! read, set and check attributes are [`super::attrs`].

use crate::client::Client;
use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::{Mutex, OnceLock};

/// `union cudaLaunchAttributeValue` (`cudaStreamAttrValue`): 64 bytes.
#[repr(C, align(8))]
#[derive(Clone, Copy, PartialEq)]
pub struct cudaLaunchAttributeValue(pub(crate) [u8; 64]);

impl cudaLaunchAttributeValue {
    pub(crate) fn u32_at(&self, at: usize) -> u32 {
        u32::from_le_bytes(self.0[at..at + 4].try_into().unwrap_or_default())
    }

    pub(crate) fn u64_at(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.0[at..at + 8].try_into().unwrap_or_default())
    }

    pub(crate) fn from_u32s(words: &[u32]) -> Self {
        let mut v = [0u8; 64];
        for (i, w) in words.iter().enumerate() {
            v[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
        }
        Self(v)
    }
}

/// A stream's attributes that differ from the defaults.
pub(crate) type Attrs = HashMap<c_int, cudaLaunchAttributeValue>;

pub(crate) fn table() -> &'static Mutex<HashMap<(u64, u64), Attrs>> {
    static T: OnceLock<Mutex<HashMap<(u64, u64), Attrs>>> = OnceLock::new();
    T.get_or_init(Default::default)
}

/// Forgets a destroyed stream's attributes (its handle may be reused).
pub(crate) fn forget_stream(c: &Client, handle: u64) {
    table()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&(c.generation(), handle));
}

/// Kernel nodes' attributes that differ from the defaults, by node.
pub(crate) fn node_table() -> &'static Mutex<HashMap<u64, Attrs>> {
    static T: OnceLock<Mutex<HashMap<u64, Attrs>>> = OnceLock::new();
    T.get_or_init(Default::default)
}

/// Forgets a destroyed node's attributes.
pub(crate) fn forget_node(node: u64) {
    node_table()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&node);
}

/// Gives the nodes of a graph's clone the attributes of the nodes they copy
/// (`map`: original -> copy).
pub(crate) fn clone_node_attrs(map: &HashMap<u64, u64>) {
    let mut t = node_table().lock().unwrap_or_else(|e| e.into_inner());
    for (from, to) in map {
        if let Some(a) = t.get(from).cloned() {
            t.insert(*to, a);
        }
    }
}
