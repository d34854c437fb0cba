// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The entry points that build a [`Module`] from text: [`Module::parse`] (one unit) and
//! [`Module::link`] (relocatable units linked as `nvlink` does), each parsing and then
//! lowering.

use super::{defs::Module, lower::Lower};
use crate::{error::ParseError, parser};

impl Module {
    /// Parses and decodes PTX text. Never panics.
    pub fn parse(ptx: &str) -> Result<Module, ParseError> {
        let ast = parser::parse(ptx)?;
        Lower::lower(ast)
    }

    /// Parses several translation units of relocatable device code (`nvcc -rdc=true`) and
    /// links them into one module, as `nvlink` does: `.extern` functions and variables
    /// resolve to the unit that defines them, `.weak` definitions are merged, names without
    /// linkage stay private to their unit, and two definitions of one `.visible` name fail.
    /// A call of a function no unit defines fails the launch that reaches it, naming it.
    /// Errors name the unit (its index in `units`) where parsing failed; PTX line numbers
    /// in errors and faults are those of the unit's own text.
    pub fn link(units: &[&str]) -> Result<Module, ParseError> {
        let asts = units
            .iter()
            .enumerate()
            .map(|(i, text)| {
                parser::parse(text).map_err(|mut e| {
                    if units.len() > 1 {
                        e.expected = format!("{} (in PTX unit {i})", e.expected);
                    }
                    e
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Lower::link(asts)
    }
}
