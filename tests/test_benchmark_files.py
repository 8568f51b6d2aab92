"""The benchmarks' readers of their files, tested directly: ``render_docs.py`` never renders a NaN
or a damaged results file into a page (one line naming the file and the key, no page written),
``results.write`` names a NaN and keeps the measurement, and the posterior-fidelity reference is
refused when truncated, incomplete or NaN (exit status 2 and one line naming the file).  The
command lines' refusals of bad flags are ``tests/test_benchmark_inputs.py``.
"""

import json
import os
import shutil
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
sys.path.insert(0, BENCHMARKS)

import arguments  # noqa: E402
import render_docs  # noqa: E402
import results  # noqa: E402

# ---------------------------------------------------------------------------------------------
# render_docs: a damaged results file or a NaN is named in one line and never rendered


@pytest.fixture
def results_copy(tmp_path, monkeypatch):
    """A copy of benchmarks/results/ that the renderer reads instead."""
    shutil.copytree(results.RESULTS, tmp_path / "results")
    monkeypatch.setattr(results, "RESULTS", tmp_path / "results")
    return tmp_path / "results"


def _edit(folder, name, change):
    path = folder / f"{name}.json"
    res = json.loads(path.read_text())
    change(res)
    path.write_text(json.dumps(res))


def _render(page):
    text = open(os.path.join(ROOT, page)).read()
    rendered, problems = render_docs.render(text, page)
    return text, rendered, problems


@pytest.mark.parametrize(
    ("name", "change", "page", "said"),
    [
        (
            "swap-bias",
            lambda r: r["tables"]["main"]["rows"][0].__setitem__(5, float("nan")),
            "docs/benchmarks/swap-bias.md",
            "tables.main.rows[0][5] is nan",
        ),
        (
            "swap-bias",
            lambda r: r["tables"]["main"]["rows"][1].__setitem__(3, [float("inf"), 0.01]),
            "README.md",
            "tables.main.rows[1][3][0] is inf",
        ),
        (
            "mixture",
            lambda r: r["values"].__setitem__("wall_seconds", float("-inf")),
            "README.md",
            "values.wall_seconds",
        ),
        ("xla-speed", lambda r: r.pop("tables"), "docs/benchmarks/xla-speed.md", "no 'tables' key"),
        (
            "xla-speed",
            lambda r: r["tables"]["main"]["rows"][0].pop(),
            "docs/benchmarks/xla-speed.md",
            "tables.main.rows[0]: not a row of 4 cells",
        ),
        (  # a pair where the column's format shows a number and its ratio
            "xla-speed",
            lambda r: r["tables"]["main"]["rows"][0].__setitem__(2, 1.5),
            "docs/benchmarks/xla-speed.md",
            "table 'main' cannot be rendered",
        ),
        (  # a standard error of 0: the quoted z-value is not a number
            "mixture",
            lambda r: r["tables"]["main"]["rows"][r["tables"]["main"]["keys"].index("vr-resgld")][5].__setitem__(
                1, 0.0
            ),
            "README.md",
            "the quoted numbers cannot be computed from it (ZeroDivisionError",
        ),
        ("small-run", lambda r: r["tables"].pop("numbers"), "README.md", "no key 'numbers'"),
    ],
)
def test_a_damaged_results_file_is_named_and_not_rendered(results_copy, name, change, page, said):
    _edit(results_copy, name, change)
    text, rendered, problems = _render(page)
    assert problems and all("\n" not in p for p in problems), problems
    assert any(f"{name}.json" in p and said in p for p in problems), problems
    assert "nan" not in rendered.lower().replace(text.lower(), "") and "inf |" not in rendered
    assert rendered == text  # the regions and sentences fed by the damaged file keep the page's text


def test_a_results_file_that_is_not_json_is_named(results_copy):
    path = results_copy / "swap-bias.json"
    path.write_text(path.read_text()[:500])  # truncated
    _, rendered, problems = _render("docs/benchmarks/swap-bias.md")
    assert any("swap-bias.json: not valid JSON" in p for p in problems), problems
    with pytest.raises(arguments.FileError, match=r"swap-bias.json: not valid JSON \(.* at line \d+"):
        results.load("swap-bias")


def test_render_docs_writes_no_page_when_a_results_file_is_damaged(results_copy, tmp_path, monkeypatch, capsys):
    pages = tmp_path / "pages"
    (pages / "docs" / "benchmarks").mkdir(parents=True)
    for page in ("README.md", "docs/benchmarks/swap-bias.md"):
        shutil.copy(os.path.join(ROOT, page), pages / page)
    shown = (pages / "docs/benchmarks/swap-bias.md").read_text()
    stale = shown.replace("| -13.1 |", "| -19.1 |", 1)
    assert stale != shown
    (pages / "docs/benchmarks/swap-bias.md").write_text(stale)  # a page that would be rewritten
    monkeypatch.setattr(render_docs, "ROOT", pages)
    _edit(results_copy, "swap-bias", lambda r: r["tables"]["main"]["rows"][0].__setitem__(5, float("nan")))
    assert render_docs.main([]) == 1
    err = capsys.readouterr().err
    assert "swap-bias.json: tables.main.rows[0][5] is nan" in err and "rendered nothing" in err
    assert (pages / "docs/benchmarks/swap-bias.md").read_text() == stale
    assert (pages / "README.md").read_text() == open(os.path.join(ROOT, "README.md")).read()


def test_results_write_names_a_nan_and_keeps_the_measurement(tmp_path, capsys):
    out = tmp_path / "r.json"
    results.write(out, {"main": results.table(["a"], ["{:.2f}"], [[float("nan")]])}, settings={"x": 1})
    assert "r.json: tables.main.rows[0][0] is nan" in capsys.readouterr().err
    assert json.loads(out.read_text(), parse_constant=str)["tables"]["main"]["rows"] == [["NaN"]]
    with pytest.raises(arguments.FileError, match=r"tables.main.rows\[0\]\[0\] is nan"):
        results.read(out)


# ---------------------------------------------------------------------------------------------
# the posterior-fidelity reference: read as data, not trusted


@pytest.fixture(scope="module")
def posterior_fidelity():
    import posterior_fidelity

    return posterior_fidelity


@pytest.fixture
def posterior_fidelity_reference():
    import posterior_fidelity_reference

    return posterior_fidelity_reference


@pytest.fixture
def reference(tmp_path):
    shutil.copytree(os.path.join(BENCHMARKS, "reference"), tmp_path / "ref")
    return tmp_path / "ref"


def _resave(path, change):
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    change(arrays)
    np.savez(path, **arrays)


@pytest.mark.parametrize(
    ("problem", "kind", "damage", "said"),
    [
        ("digits", "classification", lambda p: p.write_bytes(p.read_bytes()[:20000]), "not a readable .npz file"),
        ("diabetes", "regression", lambda p: _resave(p, lambda a: a.pop("draws")), "no array 'draws'"),
        (
            "diabetes",
            "regression",
            lambda p: _resave(p, lambda a: a["draws"].__setitem__((2, 7, 3), np.nan)),
            "draws holds 1 NaN or infinite values",
        ),
        (
            "digits",
            "classification",
            lambda p: _resave(p, lambda a: a.__setitem__("probs_by_chain", a["probs_by_chain"][:1])),
            "expected [chains >= 2",
        ),
        (
            "digits",
            "classification",
            lambda p: _resave(p, lambda a: a["probs_by_chain"].__imul__(2.0)),
            "rows are not probabilities",
        ),
        ("diabetes", "regression", lambda p: p.write_bytes(b"not an npz"), "not a readable .npz file"),
    ],
)
def test_a_damaged_reference_is_refused_in_one_line(
    posterior_fidelity_reference, reference, capsys, problem, kind, damage, said
):
    npz, meta = reference / f"{problem}.npz", reference / f"{problem}.json"
    damage(npz)
    with pytest.raises(SystemExit) as e:
        posterior_fidelity_reference.read_reference(npz, meta, kind)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1, err
    assert f"{npz}: " in err and said in err and "reference --force" in err, err


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda t: t[: len(t) // 2], "not valid JSON"),
        (lambda t: json.dumps({k: v for k, v in json.loads(t).items() if k != "fingerprint"}), "no 'fingerprint' key"),
        (lambda t: t.replace('"seconds": ', '"seconds": NaN, "x": ', 1), "seconds is nan"),
    ],
)
def test_a_damaged_reference_record_is_refused_in_one_line(
    posterior_fidelity_reference, reference, capsys, damage, said
):
    meta = reference / "digits.json"
    meta.write_text(damage(meta.read_text()))
    with pytest.raises(SystemExit) as e:
        posterior_fidelity_reference.read_reference(reference / "digits.npz", meta, "classification")
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and f"{meta}: " in err and said in err, err


def test_the_stored_references_are_accepted(posterior_fidelity_reference):
    for problem, kind in (("digits", "classification"), ("diabetes", "regression")):
        ref = os.path.join(BENCHMARKS, "reference")
        arrays, info = posterior_fidelity_reference.read_reference(
            os.path.join(ref, f"{problem}.npz"), os.path.join(ref, f"{problem}.json"), kind
        )
        assert info["fingerprint"] and np.all(np.isfinite(next(iter(arrays.values()))))


def test_a_damaged_results_file_is_refused_by_the_figure_command(posterior_fidelity, tmp_path, capsys):
    res = json.loads(open(results.path_of("posterior-fidelity")).read())
    res["floors"]["digits"]["total_variation"] = float("nan")
    path = tmp_path / "pf.json"
    path.write_text(json.dumps(res))
    with pytest.raises(SystemExit) as e:
        posterior_fidelity.main(["figure", "--results", str(path), "--figure", str(tmp_path / "f.png")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "floors.digits.total_variation is nan" in err and err.count("\n") == 1
    assert not (tmp_path / "f.png").exists()


def test_ladder_tuning_one_seed_writes_no_nan():
    """One seed (the guide's figure command): no spread across seeds to measure, so the summary
    stores no standard error for it (never a NaN the results file would refuse) and the table
    shows the mean alone."""
    import ladder_tuning

    run = {
        "cold": 0.98,
        "cold_se": 0.01,
        "barrier": 1.4,
        "tuner_barrier": 1.5,
        "rejection": [0.3, 0.4],
        "trips_per_1000": 2.5,
        "theory_per_1000": 2.7,
        "temperatures": [1.0, 1.2, 1.5],
    }
    summary = ladder_tuning.summarise([run], "gaussian")
    assert arguments.non_finite(summary) is None
    assert summary["trips_per_1000"] == (2.5, None) and summary["cold_se"] == 0.01
    row = {"target": "gaussian", "energies": "exact", "num_chains": 3, "ladder": "tuned", "summary": summary}
    text = results.markdown(ladder_tuning.table([row]))
    assert "nan" not in text.lower() and "| 2.5 |" in text
