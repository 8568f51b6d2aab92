"""The quick subset (``python -m pytest -q --quick``, the README's first test command): every
entry of ``QUICK`` (tests/conftest.py) names a test that exists, and the subset reaches every
layer of the package that has tests, so it stays a smoke test of the whole library as tests move."""

import ast
import os
import pathlib
import sys

import conftest

ROOT = conftest.ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def _tests_in(path):
    tree = ast.parse(open(os.path.join(ROOT, path)).read())
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_every_quick_entry_names_an_existing_test():
    assert len(set(conftest.QUICK)) == len(conftest.QUICK), "an entry is listed twice"
    missing = []
    for entry in conftest.QUICK:
        path, _, name = entry.partition("::")
        exists = os.path.isfile(os.path.join(ROOT, path))
        if not exists or (name and name not in _tests_in(path)):
            missing.append(entry)
    assert missing == [], f"QUICK (tests/conftest.py) names tests that do not exist: {missing}"


def layers():
    """The package's layers, from the import-linter contract in pyproject.toml."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        contracts = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    [layered] = [c for c in contracts if c["type"] == "layers"]
    return [name.strip() for layer in layered["layers"] for name in layer.split("|")]


def test_the_quick_set_reaches_every_layer_with_tests():
    names = layers()
    assert {"cli", "workflows", "sampler", "sgmcmc", "runs", "numerics"} <= set(names)
    uncovered = []
    for name in names:
        folder, module = f"tests/{name}/", f"tests/test_{name}.py"
        if not (os.path.isdir(os.path.join(ROOT, folder)) or os.path.isfile(os.path.join(ROOT, module))):
            continue  # a layer without tests of its own (errors: through the others)
        if not any(e.startswith(folder) or e.split("::")[0] == module for e in conftest.QUICK):
            uncovered.append(name)
    assert uncovered == [], f"QUICK (tests/conftest.py) has no test of {uncovered}"
    assert "tests/test_readme.py" in conftest.QUICK  # the README's examples run in it too


class _Config:
    def __init__(self, quick):
        self.quick = quick

    def getoption(self, name):
        assert name == "quick"
        return self.quick


def test_the_option_keeps_exactly_the_listed_tests():
    root = pathlib.Path(ROOT)
    listed, other = root / "tests" / "test_readme.py", root / "tests" / "test_docs.py"
    assert conftest.pytest_ignore_collect(other, _Config(True)) is True  # not even imported
    assert conftest.pytest_ignore_collect(listed, _Config(True)) is None
    assert conftest.pytest_ignore_collect(other, _Config(False)) is None  # without --quick: everything
    assert conftest.pytest_ignore_collect(root / "tests" / "sampler", _Config(True)) is None  # folders
    assert conftest._in_quick("tests/test_readme.py::test_shown_output_comparison")
    assert conftest._in_quick("tests/test_pinned.py::test_run_reproduces_pinned_state[sghmc]")
    assert not conftest._in_quick("tests/test_pinned.py::test_swap_decisions_are_exactly_the_pinned_ones[sghmc]")
    assert not conftest._in_quick("tests/test_readme_extra.py::test_x")
