// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The part of a session's dispatch that the table of operations generates: every row of
//! `vcuda_protocol::operations` with a `serve Domain::method(args)` clause is answered by
//! that executor call alone (its arguments the request's fields, or the whole request for
//! `&`), the value it returns converted into the row's reply struct. The session
//! ([`crate::session`]) dispatches the other rows by hand: those that carry data segments or
//! a tail, check reserved fields, or involve the session's own state.
//!
//! A `serve` clause that names a method the domain trait lacks, arguments the request does
//! not have, or a value that does not convert into the reply, fails to compile.

use vcuda_protocol::{Op, Request, ops};
use zerocopy::IntoBytes;

use crate::executor::{
    ArrayOps, BlasOps, DeviceOps, ExecResult, Executor, IpcOps, MemoryOps, ModuleOps, RandOps,
    StreamOps, VmmOps,
};

/// The reply of operation `O`: its fixed reply struct, no in data. Naming the operation
/// ties the struct to it at compile time.
pub(crate) fn reply<O: Op>(resp: O::Resp) -> (Vec<u8>, u64) {
    (resp.as_bytes().to_vec(), 0)
}

/// The reply of an operation `O` that answers with nothing but its status.
pub(crate) fn done<O: Op<Resp = ()>>(r: ExecResult<()>) -> ExecResult<(Vec<u8>, u64)> {
    r.map(|()| reply::<O>(()))
}

/// One executor call of a `serve` clause: the request's fields by name, or `&` for the
/// request itself.
macro_rules! serve_call {
    ($e:ident, $domain:ident :: $method:ident, $r:ident, (&)) => {
        $domain::$method($e, $r)
    };
    ($e:ident, $domain:ident :: $method:ident, $r:ident, ($($field:ident),*)) => {
        $domain::$method($e, $($r.$field),*)
    };
}

/// The pattern of request `$name` (`$domain` only drives the repetition it is used in).
macro_rules! served_variant {
    ($name:ident, $domain:ident) => {
        Request::$name(..)
    };
}

/// Makes [`served`] from the table's rows.
macro_rules! served_dispatch {
    ($(
        $(#[$doc:meta])*
        $name:ident = $code:literal, $req:ty => $resp:ty
        $(, tail $tail:ident)? $(, check $check:path)?
        $(, serve $domain:ident :: $method:ident ($($arg:tt)*))?;
    )*) => {
        /// Answers `req` if its row in the table names the executor call that serves it
        /// (`None` for the others, which the session dispatches itself).
        pub(crate) fn served(
            e: &mut dyn Executor,
            req: &Request<'_>,
        ) -> Option<ExecResult<(Vec<u8>, u64)>> {
            Some(match *req {
                $($(
                    Request::$name(ref r) => serve_call!(e, $domain::$method, r, ($($arg)*))
                        .map(|v| reply::<ops::$name>(v.into())),
                )?)*
                _ => return None,
            })
        }

        /// The requests [`served`] answers, as a pattern (the session's own match lists
        /// them in one arm, so that it still covers every operation).
        macro_rules! served_request {
            () => {
                $($( | served_variant!($name, $domain) )?)*
            };
        }
    };
}

vcuda_protocol::operation_table!(served_dispatch);

#[cfg(test)]
mod tests {
    use vcuda_protocol::{
        DeviceReq, HandleReq, HandleResp, MallocReq, MemGetInfoResp, PtrReq, PtrResp,
        StreamCreateReq,
    };
    use zerocopy::FromBytes;

    use super::*;
    use crate::executor::cpu::{CpuConfig, CpuFactory};
    use crate::executor::{ExecutorFactory, Tenant};

    fn serve(e: &mut dyn Executor, req: Request<'_>) -> Option<ExecResult<(Vec<u8>, u64)>> {
        served(e, &req)
    }

    #[test]
    fn a_served_row_calls_its_method_and_converts_the_value_into_the_reply() {
        let f = CpuFactory::new(CpuConfig::default());
        let mut e = f.new_session(Tenant::unique()).unwrap();
        let e = e.as_mut();
        // Fields by name, a u64 into `PtrResp`.
        let (bytes, n) = serve(
            e,
            Request::Malloc(MallocReq {
                device: 0,
                flags: 0,
                size: 4096,
            }),
        )
        .unwrap()
        .unwrap();
        assert_eq!(n, 0);
        let ptr = PtrResp::read_from_bytes(&bytes).unwrap().ptr;
        assert_ne!(ptr, 0);
        // A pair into `MemGetInfoResp`.
        let (bytes, _) = serve(
            e,
            Request::MemGetInfo(DeviceReq {
                device: 0,
                reserved: 0,
            }),
        )
        .unwrap()
        .unwrap();
        let info = MemGetInfoResp::read_from_bytes(&bytes).unwrap();
        assert!(info.free <= info.total && info.total > 0, "{info:?}");
        // A handle into `HandleResp`, then a unit reply.
        let req = StreamCreateReq {
            device: 0,
            flags: 0,
            priority: 0,
            reserved: 0,
        };
        let (bytes, _) = serve(e, Request::StreamCreate(req)).unwrap().unwrap();
        let handle = HandleResp::read_from_bytes(&bytes).unwrap().handle;
        let r = serve(e, Request::StreamDestroy(HandleReq { handle })).unwrap();
        assert_eq!(r, Ok((Vec::new(), 0)));
        // The executor's error is the reply's.
        let r = serve(e, Request::StreamDestroy(HandleReq { handle })).unwrap();
        assert!(r.is_err());
        assert_eq!(
            serve(e, Request::Free(PtrReq { ptr })).unwrap(),
            Ok((Vec::new(), 0))
        );
    }

    #[test]
    fn rows_without_a_serve_clause_are_left_to_the_session() {
        let f = CpuFactory::new(CpuConfig::default());
        let mut e = f.new_session(Tenant::unique()).unwrap();
        assert!(serve(e.as_mut(), Request::Nop(())).is_none());
        let reset = Request::DeviceReset(DeviceReq {
            device: 0,
            reserved: 0,
        });
        assert!(serve(e.as_mut(), reset).is_none());
    }
}
