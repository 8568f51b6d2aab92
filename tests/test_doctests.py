"""Every ``>>>`` example in the package's docstrings runs and prints what it shows.

Modules are found by walking the installed package (``pkgutil.walk_packages``), so examples in
modules added or moved later are collected too. Each module's examples run with the module's
own names plus the shared doctest namespace (``tests/helpers/_doctest_namespace.py``: the usual
imports, the toy data ``x, y``, ``net`` and ``toy_sampler``), each docstring in its own empty
temporary working directory, so relative paths such as ``runs/x`` land there.
"""

import doctest
import importlib
import pkgutil

import _doctest_namespace
import pytest

PACKAGES = ["tf_vrre"]
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def modules():
    names = []
    for package in PACKAGES:
        pkg = importlib.import_module(package)
        names.append(package)
        if hasattr(pkg, "__path__"):
            names += [
                m.name for m in pkgutil.walk_packages(pkg.__path__, f"{package}.") if not m.name.endswith("__main__")
            ]
    return sorted(set(names))


def examples(name):
    module = importlib.import_module(name)
    globs = _doctest_namespace.namespace()
    return [t for t in doctest.DocTestFinder(exclude_empty=True).find(module, name, extraglobs=globs) if t.examples]


@pytest.mark.parametrize("name", modules())
def test_docstring_examples(name, tmp_path, monkeypatch):
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report = []
    for i, test in enumerate(examples(name)):
        (tmp_path / str(i)).mkdir()
        monkeypatch.chdir(tmp_path / str(i))
        runner.run(test, out=report.append, clear_globs=True)
    assert runner.failures == 0, "".join(report)


def test_examples_are_collected():
    found = sum(len(t.examples) for name in modules() for t in examples(name))
    assert found >= 60, f"only {found} docstring examples found: is the package walk broken?"
