"""Every file a benchmark writes goes through ``tf_vrre.runs.atomic``: no link is written through.

A symbolic link planted where a writer once put its temporary file (``OUT.tmp``) or at the output
itself must be left pointing at an untouched file, and the output must end up a regular file with
the new content.  Each writer of the benchmarks is exercised directly (results files, the
posterior-fidelity reference and results, the CIFAR-10 progress file, the ladder tables rewritten in
place, ``--json`` and ``run.json`` records, figures, the docs pages), and a scan of the scripts' source
fails on any other way of writing a file, so a new script cannot bring the old pattern back.
"""

import ast
import json
import os
import shutil
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
STUDY = os.path.join(ROOT, "tests", "fixtures", "mixture_study")
sys.path.insert(0, BENCHMARKS)

import results  # noqa: E402

VICTIM = "the planted link's target: must not change\n"


def _plant(out, where):
    """A symbolic link at ``out`` (``where == "target"``) or at ``out.tmp`` to a file outside."""
    victim = out.parent / f"victim-{out.name}"
    victim.write_text(VICTIM)
    link = out if where == "target" else out.with_name(out.name + ".tmp")
    os.symlink(victim, link)
    return victim


def _check(out, victim):
    assert victim.read_text() == VICTIM, "written through the planted link"
    assert out.is_file() and not out.is_symlink(), f"{out} is not a regular file"
    leftovers = [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]
    assert not leftovers, leftovers


WHERE = pytest.mark.parametrize("where", ["tmp", "target"])


@WHERE
def test_results_file(tmp_path, where):
    # every script's results file: benchmarks/results.py's writer
    out = tmp_path / "bench.json"
    victim = _plant(out, where)
    results.write(out, {"main": results.table(["a"], ["{:.1f}"], [[1.5]])}, settings={"steps": 3})
    _check(out, victim)
    assert results.read(out)["tables"]["main"]["rows"] == [[1.5]]


@WHERE
def test_mixture_results_and_figure(tmp_path, where):
    import mixture

    out, png = tmp_path / "mixture.json", tmp_path / "density.png"
    victims = [_plant(out, where), _plant(png, where)]
    mixture.main(["--run", STUDY, "--results", str(out), "--figure", str(png), "--force"])
    _check(out, victims[0])
    _check(png, victims[1])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert set(results.read(out)["tables"]) == {"main", "seeds", "variance"}


@WHERE
def test_posterior_fidelity_results_and_reference(tmp_path, where):
    import posterior_fidelity_reference

    out = tmp_path / "posterior-fidelity.json"
    victim = _plant(out, where)
    posterior_fidelity_reference.write_json(out, {"tables": {}, "seconds": 1.0})
    _check(out, victim)
    npz, meta = tmp_path / "digits.npz", tmp_path / "digits.json"
    victims = [_plant(npz, where), _plant(meta, where)]
    posterior_fidelity_reference.write_reference(
        npz, meta, {"probs_by_chain": np.full((2, 3, 2), 0.5)}, {"fingerprint": "x"}
    )
    _check(npz, victims[0])
    _check(meta, victims[1])
    with np.load(npz) as z:
        assert z["probs_by_chain"].shape == (2, 3, 2)


@WHERE
def test_cifar10_progress_file(tmp_path, where):
    import cifar10_cpu

    out = tmp_path / "results.json"
    victim = _plant(out, where)
    cifar10_cpu._write(str(out), {"settings": {}, "results": []})
    _check(out, victim)
    assert cifar10_cpu.read_results(str(out)) == []


@WHERE
@pytest.mark.parametrize("script", ["ladder_tuning", "swap_target"])
def test_tables_rewritten_in_place(tmp_path, where, script, capsys):
    import ladder_tuning
    import swap_target

    name = {"ladder_tuning": "ladder_tuning", "swap_target": "swap_target"}[script]
    out = tmp_path / f"{name}.json"
    shutil.copy(results.path_of(name), out)
    victim = tmp_path / "victim"
    victim.write_text(VICTIM)
    if where == "target":  # the stored file read through a link, the new one written in its place
        shutil.move(out, victim)
        os.symlink(victim, out)
        before = victim.read_text()
    else:
        os.symlink(victim, out.with_name(out.name + ".tmp"))
        before = VICTIM
    {"ladder_tuning": ladder_tuning, "swap_target": swap_target}[script].main(["--tables-only", "--out", str(out)])
    assert victim.read_text() == before
    assert out.is_file() and not out.is_symlink()
    assert results.read(out)["tables"]["main"] == results.load(name)["tables"]["main"]


@WHERE
def test_swap_energies_json(tmp_path, where):
    import swap_energies

    out = tmp_path / "energies.json"
    victim = _plant(out, where)
    swap_energies.write_json(str(out), {"steps": 3}, {"vr_inf": {"attempts": 0}})
    _check(out, victim)
    assert json.loads(out.read_text())["results"] == {"vr_inf": {"attempts": 0}}


@WHERE
def test_export_latency_run_record(tmp_path, where):
    import export_latency

    out = tmp_path / "run.json"
    victim = _plant(out, where)
    export_latency.write_run_json(str(tmp_path), {"format": "tf_vrre.run/1"})
    _check(out, victim)


@WHERE
def test_placement_figure(tmp_path, where):
    import placement

    out = tmp_path / "placement.png"
    victim = _plant(out, where)
    measured = {"replicated": {"bytes": 4096}, "chain_per_replica": {"bytes": 64}}
    placement.figure(str(out), measured, 19000)
    _check(out, victim)


@WHERE
def test_docs_pages(tmp_path, where, monkeypatch):
    import render_docs

    pages = tmp_path / "pages"
    (pages / "docs" / "benchmarks").mkdir(parents=True)
    page = pages / "docs" / "benchmarks" / "swap-bias.md"
    shown = open(os.path.join(ROOT, "docs", "benchmarks", "swap-bias.md")).read()
    stale = shown.replace("| -13.1 |", "| -19.1 |", 1)  # a number edited by hand
    assert stale != shown
    victim = _plant(page, where)
    if where == "target":  # the page itself is the link: read through it, replaced by the rendered file
        victim.write_text(stale)
    else:
        page.write_text(stale)
    monkeypatch.setattr(render_docs, "ROOT", pages)
    assert render_docs.main([]) == 0
    assert page.is_file() and not page.is_symlink()
    assert page.read_text() == shown
    assert victim.read_text() == (stale if where == "target" else VICTIM)


# ---------------------------------------------------------------------------------------------
# no other way of writing a file in benchmarks/

NUMPY_WRITERS = {"save", "savez", "savez_compressed", "savetxt"}
METHOD_WRITERS = {"write_text", "write_bytes", "savefig", "to_csv", "tofile", "rename"}
MODULE_WRITERS = {("os", "replace"), ("os", "rename"), ("os", "open"), ("shutil", "move"), ("json", "dump")}
MODULE_WRITERS |= {("pickle", "dump"), ("shutil", "copy"), ("shutil", "copyfile"), ("shutil", "copy2")}


def _mode(call, position):
    args = [a for a in call.args]
    mode = next((k.value for k in call.keywords if k.arg == "mode"), args[position] if len(args) > position else None)
    if mode is None:
        return "r"
    return mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else "?"


def writes(source):
    """(line, what) of every call in ``source`` that writes a file other than through
    ``tf_vrre.runs.atomic`` (the benchmarks' ``results.write`` and the package's writers use it)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "open" and set(_mode(node, 1)) & set("wax+?"):
            found.append((node.lineno, f"open(..., {_mode(node, 1)!r})"))
        elif isinstance(f, ast.Attribute):
            owner = f.value.id if isinstance(f.value, ast.Name) else None
            if (owner in ("np", "numpy") and f.attr in NUMPY_WRITERS) or (owner, f.attr) in MODULE_WRITERS:
                found.append((node.lineno, f"{owner}.{f.attr}"))
            elif f.attr in METHOD_WRITERS and owner not in ("atomic", "_figures"):
                found.append((node.lineno, f".{f.attr}"))
            elif f.attr == "open" and owner != "os" and set(_mode(node, 0)) & set("wax+?"):
                found.append((node.lineno, f".open(..., {_mode(node, 0)!r})"))
    return sorted(found)


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(BENCHMARKS) if n.endswith(".py")))
def test_benchmarks_write_only_through_atomic(name):
    source = open(os.path.join(BENCHMARKS, name)).read()
    assert not writes(source), (
        f"benchmarks/{name} writes a file other than through tf_vrre.runs.atomic: {writes(source)}"
    )


def test_the_scan_finds_every_way_of_writing():
    old = """
tmp.write_text(json.dumps(obj))
os.replace(tmp, path)
with open(path + ".tmp", "w") as f:
    json.dump(doc, f)
with open(out, "a") as f:
    pass
np.savez_compressed(npz, **arrays)
fig.savefig(path, dpi=110)
Path(p).open("wb")
open(path, mode=m)
"""
    found = [what for _, what in writes(old)]
    assert found == [
        ".write_text",
        "os.replace",
        "open(..., 'w')",
        "json.dump",
        "open(..., 'a')",
        "np.savez_compressed",
        ".savefig",
        ".open(..., 'wb')",
        "open(..., '?')",
    ]
    fine = (
        'atomic.write_json(p, x)\nopen(p)\nopen(p, "rb")\njson.loads(t)\n_figures.save(fig, p)\ns.replace("a", "b")\n'
    )
    assert writes(fine) == []
