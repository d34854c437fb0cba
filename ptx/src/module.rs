// SPDX-License-Identifier: Apache-2.0 OR MIT
//! [`Module`]: a parsed, decoded PTX module and its public metadata.
//!
//! [`defs`] holds what a module is, [`parse`] its entry points ([`Module::parse`],
//! [`Module::link`]), which parse the text and lower it ([`lower`]): function-scope names
//! are resolved in [`scope`], sizes and alignments laid out in [`layout`], single
//! instructions decoded in [`decode`] (texture and surface forms in [`texture`], warp matrix
//! ones in [`wmma`]).

mod bulk;
mod contract;
mod decode;
mod defs;
mod layout;
mod lower;
mod mma;
mod parse;
mod scope;
mod texture;
mod wmma;

pub(crate) use defs::Sym;
pub use defs::{
    FUNC_WINDOW, GlobalId, GlobalInfo, GlobalSpace, KernelId, KernelInfo, LOCAL_WINDOW, Module,
    PARAM_WINDOW, ParamInfo, Reloc, RelocTarget, SHARED_WINDOW, WINDOW_SIZE,
};
pub(crate) use wmma::elements as wmma_elements;
