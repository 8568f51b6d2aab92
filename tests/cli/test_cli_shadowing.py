"""A directory whose ``tf_vrre.py`` or ``tf_vrre/`` folder Python would import instead of the
package (a user's script named after it, a clone of the repository seen from above): ``tf-vrre``
says so, and what it says agrees with what ``import tf_vrre`` does there."""

import contextlib
import json
import os
import subprocess
import sys

import pytest
from _paths import ROOT

import tf_vrre.cli as cli
import tf_vrre.cli._shadowing as shadowing

PACKAGE = os.path.join(ROOT, "tf_vrre")


def clone(parent):
    """A clone of the repository named ``tf_vrre`` (no ``__init__.py`` at its top)."""
    top = parent / "tf_vrre"
    (top / "docs").mkdir(parents=True)
    (top / "README.md").write_text("# tf_vrre\n")
    return top


def test_nothing_to_say_in_a_plain_directory_or_inside_the_clone(tmp_path):
    assert shadowing.note(str(tmp_path), PACKAGE) is None
    assert shadowing.note(ROOT, PACKAGE) is None  # ./tf_vrre is the package itself


def test_a_script_named_after_the_package(tmp_path):
    (tmp_path / "tf_vrre.py").write_text("import tf_vrre\n")
    assert "imports ./tf_vrre.py instead of the installed package" in shadowing.note(str(tmp_path), PACKAGE)


def test_another_copy_of_the_package(tmp_path):
    (tmp_path / "tf_vrre").mkdir()
    (tmp_path / "tf_vrre" / "__init__.py").write_text("")
    assert "another copy of the package" in shadowing.note(str(tmp_path), PACKAGE)


def test_a_clone_seen_from_the_directory_above(tmp_path):
    clone(tmp_path)
    # an editable install (an import hook after the search path): the namespace folder wins
    said = shadowing.note(str(tmp_path), PACKAGE, search_path=[str(tmp_path / "elsewhere")])
    assert "empty namespace package" in said and "ReplicaExchangeSampler" in said
    # the package's directory on the search path (PYTHONPATH, a regular install): it wins
    assert shadowing.note(str(tmp_path), PACKAGE, search_path=[ROOT]) is None


PROBE = """
import importlib, json, os, sys
first = sys.path.pop(0)  # what `import tf_vrre` finds without this directory: the package
import tf_vrre.cli._shadowing as shadowing
said = shadowing.note(os.getcwd(), search_path=sys.path)
for name in [m for m in sys.modules if m == "tf_vrre" or m.startswith("tf_vrre.")]:
    del sys.modules[name]
sys.path.insert(0, first)  # as a script run here
importlib.invalidate_caches()
import tf_vrre
print(json.dumps([said is not None, "ReplicaExchangeSampler" in getattr(tf_vrre, "__all__", ())]))  # no TF import
"""


@pytest.mark.parametrize("plant", ["nothing", "script", "clone"])
def test_what_it_says_is_what_python_does(tmp_path, plant):
    """``import tf_vrre`` in a ``python -c`` run from the directory fails exactly when the note
    says it would (with an editable install, as on CI, the clone case does; with the package on
    ``PYTHONPATH`` it does not, and the note stays silent)."""
    if plant == "script":
        (tmp_path / "tf_vrre.py").write_text("")
    elif plant == "clone":
        clone(tmp_path)
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True
    )
    said, works = json.loads(out.stdout.strip().splitlines()[-1])
    assert said == (not works), out.stdout
    assert said == (plant == "script") or plant == "clone"


def test_the_command_says_it_on_stderr(tmp_path, monkeypatch, capsys):
    (tmp_path / "tf_vrre.py").write_text("")
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    with contextlib.suppress(SystemExit):
        cli.main(["repair", str(run), "--dry-run"])
    err = capsys.readouterr().err
    assert "tf-vrre: note: Python run from this directory imports ./tf_vrre.py" in err
    monkeypatch.chdir(run)
    with contextlib.suppress(SystemExit):
        cli.main(["repair", str(run), "--dry-run"])
    assert "note:" not in capsys.readouterr().err
