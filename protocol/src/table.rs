// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The machinery behind the one table of operations in [`crate::operations`].
//!
//! Each row of `operations!` names an operation's code, its request struct, its reply
//! struct, the tail its payload may carry after the request struct, and the check of its
//! data segments. From the rows the macro generates:
//! - [`crate::Opcode`], the numeric codes (`TryFrom<u32>`, [`crate::Opcode::ALL`],
//!   [`crate::Opcode::name`]);
//! - [`crate::ops`], one type per operation implementing [`crate::Op`], so a caller names an
//!   operation once (`client.call::<ops::Memset>(&req)`) and the compiler ties its
//!   request and reply types to it;
//! - [`crate::Request`], the decoded request, and [`crate::Request::decode`], which checks
//!   the payload's length, the tail and the segments of every operation.

use crate::decode::{DecodeError, RawRequest, limit};
use crate::op::MAX_PARAM_LEN;
use crate::wire::MAX_NAME_LEN;

/// What may follow a request's fixed part in its payload. The decoded tail borrows from
/// the message.
pub trait TailKind {
    /// Checks the bytes after the fixed part.
    fn check(what: &'static str, tail: &[u8]) -> Result<(), DecodeError>;
}

/// The program's name, for logs: any bytes, at most [`MAX_NAME_LEN`].
#[derive(Debug)]
pub enum ProgramName {}

impl TailKind for ProgramName {
    fn check(_: &'static str, tail: &[u8]) -> Result<(), DecodeError> {
        limit("program name", tail.len() as u64, MAX_NAME_LEN as u64)
    }
}

/// A symbol name: 1 to [`MAX_NAME_LEN`] bytes, no NUL.
#[derive(Debug)]
pub enum Name {}

impl TailKind for Name {
    fn check(_: &'static str, tail: &[u8]) -> Result<(), DecodeError> {
        limit("name length", tail.len() as u64, MAX_NAME_LEN as u64)?;
        if tail.is_empty() || tail.contains(&0) {
            return Err(DecodeError::Inconsistent("name"));
        }
        Ok(())
    }
}

/// A kernel parameter buffer: at most [`MAX_PARAM_LEN`] bytes.
#[derive(Debug)]
pub enum Params {}

impl TailKind for Params {
    fn check(_: &'static str, tail: &[u8]) -> Result<(), DecodeError> {
        limit(
            "parameter length",
            tail.len() as u64,
            u64::from(MAX_PARAM_LEN),
        )
    }
}

/// The tail of an operation without one: nothing may follow the fixed part.
pub(crate) fn no_tail<'a>(what: &'static str, tail: &'a [u8]) -> Result<&'a [u8], DecodeError> {
    if tail.is_empty() {
        Ok(tail)
    } else {
        Err(DecodeError::Trailing(what))
    }
}

/// The segment check of an operation that carries no data.
pub(crate) fn no_data<T>(_: &T, _: &[u8], raw: &RawRequest<'_>) -> Result<(), DecodeError> {
    if raw.segments.is_empty() {
        Ok(())
    } else {
        Err(DecodeError::BadSegments("request"))
    }
}

/// Generates the opcode enum, the `Op` types, the decoded request and its decoder from
/// the table in `operations.rs` (where `Op` must be in scope). A row:
///
/// ```text
/// /// docs
/// Name = 0xCODE, RequestStruct => ReplyStruct [, tail TailKind] [, check check_fn]
///     [, serve Domain::method(args)];
/// ```
///
/// `check_fn(&req, tail, &raw)` validates the segments (and anything else that needs the
/// request); without it the operation carries no segments.
///
/// `serve` names the executor call that answers the operation by itself, for the backend's
/// generated dispatch: the domain trait, the method, and its arguments, either the request's
/// fields by name or `&` for the whole request; the method's value converts `Into` the reply
/// struct. This macro ignores it.
macro_rules! operations {
    ($(
        $(#[$doc:meta])*
        $name:ident = $code:literal, $req:ty => $resp:ty
        $(, tail $tail:ident)? $(, check $check:path)?
        $(, serve $domain:ident :: $method:ident ($($arg:tt)*))?;
    )*) => {
        /// A request's operation.
        #[repr(u32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Opcode {
            $($(#[$doc])* $name = $code,)*
        }

        impl TryFrom<u32> for Opcode {
            type Error = u32;

            fn try_from(v: u32) -> Result<Self, u32> {
                match v {
                    $($code => Ok(Self::$name),)*
                    other => Err(other),
                }
            }
        }

        impl Opcode {
            /// Every opcode, in numeric order.
            pub const ALL: &'static [Opcode] = &[$(Self::$name,)*];

            /// The operation's name.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$name => stringify!($name),)*
                }
            }

            /// Bytes of the fixed part of its request payload.
            pub fn request_size(self) -> usize {
                match self {
                    $(Self::$name => size_of::<$req>(),)*
                }
            }
        }

        /// One type per operation, tying its opcode to its request and reply structs.
        pub mod ops {
            #[allow(unused_imports)]
            use super::*;

            $(
                $(#[$doc])*
                #[derive(Debug)]
                pub enum $name {}

                impl Op for $name {
                    const CODE: Opcode = Opcode::$name;
                    type Req = $req;
                    type Resp = $resp;
                }
            )*
        }

        /// A decoded request: its fixed part and, for operations with a tail, the tail
        /// (borrowed from the message).
        #[derive(Debug, Clone, PartialEq)]
        #[allow(missing_docs)]
        pub enum Request<'a> {
            $($name($req $(, $crate::table::tail_type!('a $tail))?),)*
        }

        impl<'a> Request<'a> {
            /// Decodes a request's payload, checking its length, its tail and that its
            /// segments fit the operation.
            pub fn decode(raw: &$crate::decode::RawRequest<'a>) -> Result<Self, $crate::decode::DecodeError> {
                let op = Opcode::try_from(raw.header.opcode)
                    .map_err($crate::decode::DecodeError::UnknownOpcode)?;
                match op {
                    $(Opcode::$name => {
                        let what = stringify!($name);
                        let (req, tail) = $crate::decode::take::<$req>(what, raw.payload)?;
                        let tail = $crate::table::split_tail!(what, tail $(, $tail)?)?;
                        $crate::table::check_data!(&req, tail, raw $(, $check)?)?;
                        let _ = tail;
                        Ok(Request::$name(req $(, $crate::table::tail_value!($tail, tail))?))
                    })*
                }
            }

            /// The request's opcode.
            pub fn opcode(&self) -> Opcode {
                match self {
                    $(Request::$name(..) => Opcode::$name,)*
                }
            }
        }
    };
}

macro_rules! tail_type {
    ($lt:lifetime $kind:ident) => {
        &$lt[u8]
    };
}

macro_rules! tail_value {
    ($kind:ident, $v:expr) => {
        $v
    };
}

macro_rules! split_tail {
    ($what:expr, $tail:expr) => {
        $crate::table::no_tail($what, $tail)
    };
    ($what:expr, $tail:expr, $kind:ident) => {
        <$kind as $crate::table::TailKind>::check($what, $tail).map(|()| $tail)
    };
}

macro_rules! check_data {
    ($req:expr, $tail:expr, $raw:expr) => {
        $crate::table::no_data($req, $tail, $raw)
    };
    ($req:expr, $tail:expr, $raw:expr, $check:path) => {
        $check($req, $tail, $raw)
    };
}

pub(crate) use {check_data, operations, split_tail, tail_type, tail_value};
