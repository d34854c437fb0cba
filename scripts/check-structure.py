#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""The structure rules CI keeps (CONTRIBUTING.md, "Structure"):

1. No source file over 1000 lines. Tests (files under a `tests/` folder, `tests.rs`,
   `tests_*.rs`), generated tables (`*_gen.rs`) and fuzz targets are exempt.
2. No import circle between the modules of a crate: the files of each crate are read as a
   graph (file A -> file B when A names an item of B's module through `crate::`, `super::`,
   `self::` or a child module), and every strongly connected component of more than one
   file is a circle. A module's `mod` declarations are not imports.

3. Layered crates keep their layers: in `guest-lib`, the C-ABI shims (`src/abi/`) stand on
   the logic (`src/core/`), which stands on the foundation (the other files of `src/`); a
   file imports from its own layer or one below, never one above (see `LAYERS`).

Circles not yet taken apart are listed in `scripts/structure-known-circles.txt` (one circle a
line: its files, space-separated). A circle whose files all lie within one listed circle is
reported as known and does not fail the check; a new circle, or one that grew past its
listing, does. The list may only shrink: an entry no circle needs any more fails the check
too, so it is removed when the work that took the circle apart lands.

Usage: scripts/check-structure.py [--graph CRATE] [--quiet]

`--graph CRATE` prints that crate's file graph (edges and the names each takes) and exits.
Exit status: 0 when both rules hold, 1 when one is broken (each breach printed), 2 on a usage
error.
"""

import os
import re
import subprocess
import sys
from collections import defaultdict

MAX_LINES = 1000
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# The crates of the workspace (guest-driver builds with Kbuild and has no module tree of
# cargo's kind; it is checked for size only).
CRATES = ["protocol", "ring", "fatbin", "ptx", "guest-lib", "host-backend", "cli", "device-plugin", "tests"]


def tracked_rust_files():
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.rs"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [p for p in out.split("\n") if p and os.path.exists(os.path.join(ROOT, p))]


def exempt_from_size(path):
    parts = path.split("/")
    name = parts[-1]
    return (
        parts[0] == "fuzz"
        or "tests" in parts[:-1]
        or name == "tests.rs"
        or name.startswith("tests_")
        or name.endswith("_gen.rs")
    )


def check_sizes(files):
    breaches = []
    for path in files:
        if exempt_from_size(path):
            continue
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            breaches.append((path, n))
    return sorted(breaches, key=lambda b: -b[1])


# --- Reading Rust source as text --------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<rawstr>b?r(?P<hashes>\#*)"(?:.|\n)*?"(?P=hashes))
  | (?P<str>b?"(?:\\.|[^"\\])*")
  | (?P<char>b?'(?:\\.|[^'\\\n])')
    """,
    re.VERBOSE | re.DOTALL,
)


def strip(src):
    """Source with comments, strings and char literals blanked (line breaks kept)."""

    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))

    return _TOKEN.sub(blank, src)


def test_module_spans(src):
    """Spans of `#[cfg(test)] mod NAME { ... }` blocks (brace-matched), to leave out."""
    spans = []
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", src):
        depth, i = 1, m.end()
        while i < len(src) and depth:
            if src[i] == "{":
                depth += 1
            elif src[i] == "}":
                depth -= 1
            i += 1
        spans.append((m.start(), i))
    return spans


def without_spans(src, spans):
    out, last = [], 0
    for a, b in spans:
        out.append(src[last:a])
        out.append(re.sub(r"[^\n]", " ", src[a:b]))
        last = b
    out.append(src[last:])
    return "".join(out)


# --- The module tree ---------------------------------------------------------------------

_MOD_DECL = re.compile(
    r"(?P<attrs>(?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(?P<name>\w+)\s*(?P<end>[;{])"
)


class Crate:
    def __init__(self, name, root_file):
        self.name = name
        # module path (tuple) -> file (relative to ROOT)
        self.module_file = {}
        # module path -> set of child names
        self.children = defaultdict(set)
        self.files = set()
        # (module, name) -> (module, path): the names a module re-exports (`pub use`).
        self.reexports = {}
        self._walk(root_file, (), os.path.dirname(root_file), is_root=True)

    def _walk(self, path, modpath, dirpath, is_root=False, text=None, base=0):
        """Reads the module at `modpath` from `path` (or from `text`, an inline block)."""
        if text is None:
            full = os.path.join(ROOT, path)
            if not os.path.exists(full):
                return
            with open(full, encoding="utf-8", errors="replace") as f:
                raw = strip(f.read())
            text = without_spans(raw, test_module_spans(raw))
            self.files.add(path)
        self.module_file[modpath] = path
        # Directory that holds this module's children.
        if is_root or os.path.basename(path) == "mod.rs":
            child_dir = os.path.dirname(path)
        else:
            child_dir = os.path.join(dirpath, os.path.splitext(os.path.basename(path))[0])
        i = 0
        while True:
            m = _MOD_DECL.search(text, i)
            if not m:
                break
            name, attrs = m.group("name"), m.group("attrs")
            if "cfg(test)" in attrs or name == "tests":
                i = m.end()
                if m.group("end") == "{":
                    i = _block_end(text, m.end())
                continue
            child = modpath + (name,)
            self.children[modpath].add(name)
            if m.group("end") == ";":
                pm = re.search(r'#\[path\s*=\s*"([^"]*)"\]', attrs)
                if pm:
                    # `#[path]` is relative to the declaring file's directory.
                    target = os.path.normpath(os.path.join(os.path.dirname(path), pm.group(1)))
                    self._walk(target, child, os.path.dirname(target), is_root=True)
                else:
                    a = os.path.join(child_dir, name + ".rs")
                    b = os.path.join(child_dir, name, "mod.rs")
                    target = a if os.path.exists(os.path.join(ROOT, a)) else b
                    self._walk(target, child, child_dir)
                i = m.end()
            else:
                end = _block_end(text, m.end())
                # An inline module: its items live in this file; its file children in a
                # folder named after it.
                inner = text[m.end() : end - 1]
                self._walk_inline(path, child, os.path.join(child_dir, name), inner)
                i = end

    def _walk_inline(self, path, modpath, child_dir, inner):
        self.module_file[modpath] = path
        for m in _MOD_DECL.finditer(inner):
            name, attrs = m.group("name"), m.group("attrs")
            if "cfg(test)" in attrs or name == "tests" or m.group("end") != ";":
                continue
            child = modpath + (name,)
            self.children[modpath].add(name)
            a = os.path.join(child_dir, name + ".rs")
            b = os.path.join(child_dir, name, "mod.rs")
            target = a if os.path.exists(os.path.join(ROOT, a)) else b
            self._walk(target, child, child_dir)

    def file_modules(self):
        """file -> the module paths whose items it holds."""
        out = defaultdict(list)
        for mp, f in self.module_file.items():
            out[f].append(mp)
        return out


def _block_end(text, i):
    depth = 1
    while i < len(text) and depth:
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
        i += 1
    return i


# --- Paths a file names -------------------------------------------------------------------

_USE = re.compile(r"\b(?P<vis>pub(?:\s*\([^)]*\))?\s+)?use\s+(?P<tree>[^;]*);")
_PATH = re.compile(r"\b(?:\$?crate|super|self|[a-z_][a-z0-9_]*)(?:\s*::\s*(?:\w+|\{))+")


def expand_use_tree(s):
    """`a::{b, c::{d, e}}` -> [[a, b], [a, c, d], [a, c, e]] (aliases and globs dropped)."""
    # Aliases (`x as y`) keep the path they name.
    s = re.sub(r"\s+as\s+\w+", "", s)
    s = re.sub(r"\s+", "", s)
    out = []

    def parse(prefix, text):
        # Split `text` at top-level commas.
        depth, start, parts = 0, 0, []
        for i, ch in enumerate(text):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(text[start:i])
                start = i + 1
        parts.append(text[start:])
        for p in parts:
            if not p:
                continue
            if "{" in p:
                head, rest = p.split("{", 1)
                segs = [x for x in head.split("::") if x]
                parse(prefix + segs, rest[: rest.rfind("}")])
            else:
                segs = [x for x in p.split("::") if x and x != "*"]
                out.append(prefix + segs)

    parse([], s)
    return out


def names_used(text):
    """Every path the text names: use trees expanded, and inline `a::b::c` paths. A `pub use`
    is a re-export, part of the module's interface rather than a dependency of its code: it
    is left out here and followed by `resolve` instead."""
    paths = []
    for m in _USE.finditer(text):
        if not m.group("vis"):
            paths.extend(expand_use_tree(m.group("tree")))
    body = _USE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    for m in _PATH.finditer(body):
        segs = [x.strip() for x in m.group(0).split("::")]
        segs = [x for x in segs if x and x != "{"]
        paths.append(segs)
    return paths


def resolve(crate, modpath, segs):
    """The module a path lands in (its longest prefix that is a module), and the name taken."""
    if not segs:
        return None
    head = segs[0].lstrip("$")
    if head == "crate":
        cur, rest = (), segs[1:]
    elif head in ("super", "self"):
        cur, rest = modpath, segs
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                if not cur:
                    return None
                cur = cur[:-1]
            rest = rest[1:]
    elif head in crate.children[modpath]:
        cur, rest = modpath, segs
    else:
        return None
    while rest and rest[0] in crate.children[cur]:
        cur = cur + (rest[0],)
        rest = rest[1:]
    # A name the module re-exports lands where the re-export points.
    seen = set()
    while rest and (cur, rest[0]) in crate.reexports and (cur, rest[0]) not in seen:
        seen.add((cur, rest[0]))
        src_mod, src_segs = crate.reexports[(cur, rest[0])]
        r = resolve(crate, src_mod, src_segs + rest[1:])
        if r is None:
            break
        return r
    return cur, (rest[0] if rest else "*")


def read_reexports(crate):
    """(module, name) -> (module it is declared in, the path it re-exports)."""
    for f, mods in crate.file_modules().items():
        with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as fh:
            text = strip(fh.read())
        modpath = min(mods, key=len)
        for m in _USE.finditer(text):
            if not m.group("vis"):
                continue
            for segs in expand_use_tree(m.group("tree")):
                if segs and segs[-1] not in ("self", "*"):
                    crate.reexports[(modpath, segs[-1])] = (modpath, segs)


def file_graph(crate):
    """file -> {file: set(names)} for one crate."""
    graph = defaultdict(lambda: defaultdict(set))
    by_file = crate.file_modules()
    for f, mods in by_file.items():
        with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as fh:
            raw = strip(fh.read())
        text = without_spans(raw, test_module_spans(raw))
        # Read the inline modules of a file with their own module path: split the text by
        # inline `mod NAME {` blocks is not needed for resolution of `crate::` paths, and the
        # `super::` paths of inline modules are rare; the file's outermost module is used.
        modpath = min(mods, key=len)
        for segs in names_used(text):
            r = resolve(crate, modpath, segs)
            if r is None:
                continue
            target_mod, name = r
            target = crate.module_file.get(target_mod)
            if target and target != f:
                graph[f][target].add(name)
    return graph


def circles(graph, nodes):
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, {}))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, {})))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def load_crate(name):
    for root in ("src/lib.rs", "src/main.rs"):
        p = os.path.join(name, root)
        if os.path.exists(os.path.join(ROOT, p)):
            return Crate(name, p)
    return None


def crate_roots(name):
    """A crate may have both a library and a binary: each is its own module tree."""
    out = []
    for root in ("src/lib.rs", "src/main.rs"):
        p = os.path.join(name, root)
        if os.path.exists(os.path.join(ROOT, p)):
            crate = Crate(f"{name} ({root})", p)
            read_reexports(crate)
            out.append(crate)
    return out


# Per crate folder, its layers from the top: (path prefix, rank); a file belongs to the first
# prefix it starts with, and may import only files of its rank or lower.
LAYERS = {
    "guest-lib": [("guest-lib/src/abi/", 2), ("guest-lib/src/core/", 1), ("guest-lib/src/", 0)],
}


def rank(layers, path):
    return next((r for prefix, r in layers if path.startswith(prefix)), None)


def upward_imports(graph, layers):
    """Imports from a file to one of a higher layer: (from, to, names), sorted."""
    out = []
    for f in sorted(graph):
        rf = rank(layers, f)
        for t in sorted(graph[f]):
            rt = rank(layers, t)
            if rf is not None and rt is not None and rt > rf:
                out.append((f, t, sorted(graph[f][t])))
    return out


# guest-lib's core is safe Rust over values; these files keep `unsafe` for a reason no C shim
# can take over (ARCHITECTURE.md, "The guest library's layers"). A new call's pointers are
# read in `abi/`, so a core file outside this list with `unsafe` fails the check.
CORE_UNSAFE = {
    "callback.rs": "calls the program's host functions, stream callbacks and destructors",
    "memory.rs": "the copy engine reads and writes the program's host buffers",
    "host_memory.rs": "maps and unmaps page-locked memory",
    "module.rs": "driver module and function handles are pointers",
    "function.rs": "driver function handles are pointers",
    "library.rs": "cudaKernel_t handles are pointers",
    "registry.rs": "reads nvcc's registration structures",
    "texture.rs": "a Send marker for kept C descriptors, whose pointers are device addresses",
}
_UNSAFE = re.compile(r"\bunsafe\b")


def core_unsafe():
    """Files of guest-lib/src/core that use `unsafe` (comments, strings and tests aside)
    without being listed in CORE_UNSAFE, with the line of the first use."""
    core = os.path.join(ROOT, "guest-lib", "src", "core")
    found = []
    for name in sorted(os.listdir(core)):
        if not name.endswith(".rs") or name in CORE_UNSAFE:
            continue
        with open(os.path.join(core, name), encoding="utf-8") as f:
            src = f.read()
        code = without_spans(strip(src), test_module_spans(src))
        m = _UNSAFE.search(code)
        if m:
            found.append((f"guest-lib/src/core/{name}", code.count("\n", 0, m.start()) + 1))
    return found


KNOWN = os.path.join(ROOT, "scripts", "structure-known-circles.txt")


def known_circles():
    if not os.path.exists(KNOWN):
        return []
    out = []
    with open(KNOWN, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if line:
                out.append((n, set(line.split())))
    return out


def main(argv):
    quiet = "--quiet" in argv
    if "--graph" in argv:
        i = argv.index("--graph")
        if i + 1 >= len(argv):
            print(__doc__, file=sys.stderr)
            return 2
        for crate in crate_roots(argv[i + 1]):
            g = file_graph(crate)
            for f in sorted(g):
                for t in sorted(g[f]):
                    print(f"{f} -> {t}: {', '.join(sorted(g[f][t]))}")
        return 0
    failed = False
    big = check_sizes(tracked_rust_files())
    for path, n in big:
        print(f"structure: {path} has {n} lines (at most {MAX_LINES} outside tests and generated tables)")
        failed = True
    for path, line in core_unsafe():
        print(f"structure: {path}:{line} uses unsafe; read the caller's pointers in abi/ (or list the file in CORE_UNSAFE with its reason)")
        failed = True
    known = known_circles()
    used = set()
    for name in CRATES:
        for crate in crate_roots(name):
            g = file_graph(crate)
            for f, t, names in upward_imports(g, LAYERS.get(name, [])):
                failed = True
                print(f"structure: {f} imports {', '.join(names[:6])} from {t}, a layer above it")
            for comp in circles(g, crate.files):
                hit = next((i for i, (_, k) in enumerate(known) if set(comp) <= k), None)
                if hit is not None:
                    used.add(hit)
                    if not quiet:
                        print(f"structure: known import circle in {crate.name}, {len(comp)} files (listed in {os.path.relpath(KNOWN, ROOT)})")
                    continue
                failed = True
                print(f"structure: import circle in {crate.name}, {len(comp)} files:")
                members = set(comp)
                for f in comp:
                    for t in sorted(g[f]):
                        if t in members:
                            names = sorted(g[f][t])
                            shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
                            print(f"  {f} -> {t}: {shown}")
    for i, (n, _) in enumerate(known):
        if i not in used:
            failed = True
            print(f"structure: {os.path.relpath(KNOWN, ROOT)} line {n} lists a circle that no longer exists: remove it")
    if not failed and not quiet:
        listed = f", {len(known)} listed circle(s) not yet taken apart" if known else ""
        print(f"structure: ok (no file over {MAX_LINES} lines, no new import circle in {', '.join(CRATES)}{listed}, no import up a layer, unsafe in guest-lib's core only where listed)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
