#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Tests of scripts/check-structure.py on small crates made for the purpose:
`python3 scripts/test_check_structure.py` (CI runs it before the check itself)."""

import importlib.util
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("cs", os.path.join(HERE, "check-structure.py"))
cs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cs)


class Tree:
    """A temporary source tree that check-structure.py reads as its ROOT."""

    def __init__(self, files):
        self.dir = tempfile.TemporaryDirectory()
        for path, text in files.items():
            full = os.path.join(self.dir.name, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)

    def __enter__(self):
        self.saved = cs.ROOT
        cs.ROOT = self.dir.name
        return self

    def __exit__(self, *exc):
        cs.ROOT = self.saved
        self.dir.cleanup()

    def circles(self, crate="c"):
        (c,) = cs.crate_roots(crate)
        return cs.circles(cs.file_graph(c), c.files)


class CheckStructure(unittest.TestCase):
    def test_a_circle_between_siblings_is_found(self):
        files = {
            "c/src/lib.rs": "mod a;\nmod b;\n",
            "c/src/a.rs": "use crate::b::g;\npub fn f() { g() }\n",
            "c/src/b.rs": "pub fn g() { super::a::f() }\n",
        }
        with Tree(files) as t:
            self.assertEqual(t.circles(), [["c/src/a.rs", "c/src/b.rs"]])

    def test_layers_have_no_circle(self):
        files = {
            "c/src/lib.rs": "mod a;\nmod b;\npub use a::f;\n",
            "c/src/a.rs": "use crate::b::g;\npub fn f() { g() }\n",
            "c/src/b.rs": "pub fn g() {}\n",
        }
        with Tree(files) as t:
            self.assertEqual(t.circles(), [])

    def test_an_import_up_a_layer_is_found(self):
        files = {
            "c/src/lib.rs": "mod abi;\nmod core;\nmod base;\n",
            "c/src/abi.rs": "use crate::core::f;\npub fn x() { f() }\n",
            "c/src/core.rs": "use crate::base::g;\npub fn f() { g() }\n",
            "c/src/base.rs": "pub fn g() { crate::core::h() }\n",
        }
        layers = [("c/src/abi", 2), ("c/src/core", 1), ("c/src/", 0)]
        with Tree(files) as t:
            (c,) = cs.crate_roots("c")
            up = cs.upward_imports(cs.file_graph(c), layers)
            self.assertEqual(up, [("c/src/base.rs", "c/src/core.rs", ["h"])])

    def test_children_of_a_mod_rs_are_read(self):
        # The parent only declares and re-exports; its children take from each other.
        files = {
            "c/src/lib.rs": "mod m;\n",
            "c/src/m/mod.rs": "mod x;\nmod y;\npub use x::X;\n",
            "c/src/m/x.rs": "pub struct X(super::y::Y);\n",
            "c/src/m/y.rs": "pub struct Y;\nfn f(_: super::x::X) {}\n",
        }
        with Tree(files) as t:
            self.assertEqual(t.circles(), [["c/src/m/x.rs", "c/src/m/y.rs"]])

    def test_a_parent_and_child_circle_is_found(self):
        files = {
            "c/src/lib.rs": "mod p;\n",
            "c/src/p.rs": "mod k;\npub const N: u32 = 1;\nfn f() { k::g() }\n",
            "c/src/p/k.rs": "pub fn g() { let _ = super::N; }\n",
        }
        with Tree(files) as t:
            self.assertEqual(t.circles(), [["c/src/p.rs", "c/src/p/k.rs"]])

    def test_comments_strings_and_test_modules_are_not_imports(self):
        files = {
            "c/src/lib.rs": "mod a;\nmod b;\n",
            "c/src/a.rs": "use crate::b::g;\npub fn f() { g() }\n",
            "c/src/b.rs": (
                "// crate::a::f\npub fn g() { let _ = \"crate::a::f\"; }\n"
                "#[cfg(test)]\nmod tests {\n    use crate::a::f;\n}\n"
            ),
        }
        with Tree(files) as t:
            self.assertEqual(t.circles(), [])

    def test_size_exemptions(self):
        self.assertTrue(cs.exempt_from_size("x/tests/a.rs"))
        self.assertTrue(cs.exempt_from_size("x/src/tests.rs"))
        self.assertTrue(cs.exempt_from_size("x/src/props_gen.rs"))
        self.assertTrue(cs.exempt_from_size("fuzz/fuzz_targets/a.rs"))
        self.assertFalse(cs.exempt_from_size("x/src/testsuite.rs"))
        self.assertFalse(cs.exempt_from_size("x/src/lib.rs"))


if __name__ == "__main__":
    unittest.main()
