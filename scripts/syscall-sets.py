#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""The system calls each kind of vcuda-backend process made, from an `strace -f` trace.

tests/gpu/syscalls.sh records one (`syscalls.trace.gz`) on a GPU machine: a shared backend
and its worker processes, which enter the sandbox (sandbox.rs: seccomp) before NVIDIA's
driver starts in them. This groups the trace's threads into processes (clone with and
without CLONE_THREAD), names each process by what it executed (`vcuda-backend serve`,
`vcuda-backend worker`), and prints per kind the calls made before and after the process
installed its seccomp filter, with counts and the errors they got: the calls made after it
are what an allow list must admit, and an EPERM among them is a call the deny list refused.

    scripts/syscall-sets.py TRACE[.gz] [--markdown]
"""

import argparse
import collections
import gzip
import re
import sys

LINE = re.compile(r"^(\d+)\s+(.*)$")
CALL = re.compile(r"^([a-z_][a-z0-9_]*)\((.*)$")
RESUMED = re.compile(r"^<\.\.\. ([a-z_][a-z0-9_]*) resumed>(.*)$")
RESULT = re.compile(r"\)\s+= (-?\d+|\?|0x[0-9a-f]+)(?: ([A-Z][A-Z0-9_]+))?")
NEW_TASK = {"clone", "clone3", "fork", "vfork"}


class Process:
    def __init__(self, pid, kind):
        self.pid = pid
        self.kind = kind
        self.filtered = False
        # (phase, name) -> [count, {errno: count}]
        self.calls = collections.defaultdict(lambda: [0, collections.Counter()])


def kind_of(args):
    """The process kind an execve's arguments name."""
    m = re.search(r'\["([^"]*)"(?:, "([^"]*)")?', args)
    if not m:
        return "exec"
    prog = m.group(1).rsplit("/", 1)[-1]
    sub = m.group(2) or ""
    return f"{prog} {sub}".strip()


def parse(lines):
    group = {}  # tid -> Process
    pending = {}  # tid -> (name, args so far)
    procs = []

    def proc(tid):
        if tid not in group:
            p = Process(tid, "traced")
            group[tid] = p
            procs.append(p)
        return group[tid]

    def merge(early, into):
        for (phase, name), (count, errs) in early.calls.items():
            e = into.calls[("after" if into.filtered else phase, name)]
            e[0] += count
            e[1].update(errs)
        procs.remove(early)
        for t, q in list(group.items()):
            if q is early:
                group[t] = into

    def finish(tid, name, text):
        p = proc(tid)
        m = RESULT.search(text)
        ret, err = (m.group(1), m.group(2)) if m else ("?", None)
        phase = "after" if p.filtered else "before"
        entry = p.calls[(phase, name)]
        entry[0] += 1
        if err:
            entry[1][err] += 1
        if name in NEW_TASK and ret.isdigit() and int(ret) > 0:
            child = int(ret)
            early = group.get(child)  # the child's calls seen before this return
            if "CLONE_THREAD" in text:
                group[child] = p
                if early is not None and early is not p:
                    merge(early, p)
            elif early is not None:
                if early.kind == "traced":
                    early.kind = p.kind
                early.filtered = early.filtered or p.filtered
            else:
                c = Process(child, p.kind)
                c.filtered = p.filtered
                group[child] = c
                procs.append(c)
        elif name == "execve" and ret == "0":
            p.kind = kind_of(text)
        elif name == "seccomp" and ret == "0" and "SECCOMP_SET_MODE_FILTER" in text:
            p.filtered = True
        elif name == "prctl" and ret == "0" and "PR_SET_SECCOMP" in text:
            p.filtered = True

    for raw in lines:
        m = LINE.match(raw.rstrip("\n"))
        if not m:
            continue
        tid, rest = int(m.group(1)), m.group(2)
        if rest.startswith(("+++", "---")):
            continue
        r = RESUMED.match(rest)
        if r:
            name, start = pending.pop(tid, (r.group(1), ""))
            finish(tid, name, start + r.group(2))
            continue
        c = CALL.match(rest)
        if not c:
            continue
        name = c.group(1)
        if rest.endswith("<unfinished ...>"):
            # A child may run before its clone returns in the parent's thread: its early
            # calls are merged into its process when the clone resumes.
            pending[tid] = (name, rest[: -len("<unfinished ...>")])
            continue
        finish(tid, name, rest)
    return procs


def report(procs, markdown):
    kinds = collections.OrderedDict()
    for p in procs:
        k = kinds.setdefault(p.kind, {"n": 0, "calls": collections.defaultdict(lambda: [0, collections.Counter()])})
        k["n"] += 1
        for key, (count, errs) in p.calls.items():
            e = k["calls"][key]
            e[0] += count
            e[1].update(errs)
    out = []
    for kind, k in kinds.items():
        out.append(f"## {kind} ({k['n']} process{'es' if k['n'] != 1 else ''})")
        for phase in ("before", "after"):
            rows = sorted((n, c, e) for (ph, n), (c, e) in k["calls"].items() if ph == phase)
            if not rows:
                continue
            title = "before its seccomp filter" if phase == "before" else "after its seccomp filter"
            out.append("")
            out.append(f"{len(rows)} system calls {title}:")
            out.append("")
            if markdown:
                out.append("| call | count | errors |")
                out.append("|---|---:|---|")
            for n, c, e in rows:
                errs = ", ".join(f"{k} {v}" for k, v in sorted(e.items()))
                out.append(f"| {n} | {c} | {errs} |" if markdown else f"  {n:24} {c:8}  {errs}")
        out.append("")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    opener = gzip.open if a.trace.endswith(".gz") else open
    with opener(a.trace, "rt", errors="replace") as f:
        procs = parse(f)
    sys.stdout.write(report(procs, a.markdown))


if __name__ == "__main__":
    main()
