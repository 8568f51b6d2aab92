"""The docs' benchmark tables and the README's numbers agree with the results files.

Every benchmark writes ``benchmarks/results/<name>.json``; ``benchmarks/render_docs.py`` writes the
tables between ``<!-- results: ... -->`` markers and the numbers of the sentences it lists
(``CLAIMS``) from those files. A page edited by hand, or a results file re-measured without
re-rendering, fails here: run ``python benchmarks/render_docs.py``.
"""

import json
import os
import re
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
sys.path.insert(0, BENCHMARKS)

import render_docs  # noqa: E402
import results  # noqa: E402


def _text(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


@pytest.mark.parametrize("page", [p for p in render_docs.PAGES if os.path.exists(os.path.join(ROOT, p))])
def test_page_agrees_with_its_results_files(page):
    text = _text(page)
    rendered, problems = render_docs.render(text, page)
    assert not problems, "\n".join(problems)
    assert rendered == text, f"{page} differs from its results files: run `python benchmarks/render_docs.py`"


def test_every_benchmark_page_shows_a_results_file_and_its_source():
    folder = os.path.join(ROOT, "docs", "benchmarks")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".md") or name == "index.md":
            continue
        text = _text(os.path.join("docs", "benchmarks", name))
        regions = render_docs.REGION.findall(text)
        assert regions, f"{name}: no table from a results file"
        tables = {r[1] for r in regions if r[2] != "source"}
        assert tables <= {r[1] for r in regions if r[2] == "source"} | {"posterior-fidelity"}, (
            f"{name}: a table without the line saying where its numbers come from"
        )


def test_every_results_file_says_how_when_and_where_it_was_measured():
    for name in sorted(os.listdir(results.RESULTS)):
        if not name.endswith(".json"):
            continue
        res = json.loads(open(os.path.join(results.RESULTS, name)).read())
        for key in ("command", "date", "git_commit", "hardware", "tables"):
            assert res.get(key), f"{name}: no {key}"
        assert re.fullmatch(r"[0-9a-f]{40}", res["git_commit"]), name
        assert re.match(r"\d{4}-\d\d-\d\d", res["date"]), name


def test_every_benchmark_script_writes_its_results_file():
    helpers = {
        "arguments.py",
        "results.py",
        "render_docs.py",
        "docs_values.py",
        "posterior_fidelity_methods.py",
        "posterior_fidelity_reference.py",
        "posterior_fidelity_report.py",
        "regimes_methods.py",
        "regimes_problems.py",
        "regimes_report.py",
        "step_cost_data.py",
        "step_cost_report.py",
    }
    for name in sorted(os.listdir(BENCHMARKS)):
        if name.endswith(".py") and name not in helpers:
            text = _text(os.path.join("benchmarks", name))
            assert "results.write(" in text or "results_file.write(" in text or "benchmarks/results/" in text, (
                f"benchmarks/{name} writes no results file"
            )


def test_a_changed_results_file_is_caught(tmp_path, monkeypatch):
    # the check can fail: a re-measured number (here, one cell and one quoted value) makes the
    # pages that show it differ, and rendering writes the new number
    shutil.copytree(results.RESULTS, tmp_path / "results")
    res = json.loads((tmp_path / "results" / "swap-bias.json").read_text())
    res["tables"]["main"]["rows"][0][5] = -7.04
    (tmp_path / "results" / "swap-bias.json").write_text(json.dumps(res))
    monkeypatch.setattr(results, "RESULTS", tmp_path / "results")
    for page, shown in (
        ("docs/benchmarks/swap-bias.md", "| -7.0 |"),
        ("README.md", "[-7 standard errors with the paper's rule"),
    ):
        text = _text(page)
        rendered, problems = render_docs.render(text, page)
        assert not problems and rendered != text
        assert shown in rendered and shown not in text


def test_a_reworded_claim_is_reported():
    text = _text("README.md").replace("when swaps are attempted every 4th step", "with fewer swap attempts")
    _, problems = render_docs.render(text, "README.md")
    assert any("every 4th step" in p and "occurs 0 times" in p for p in problems), problems


def test_table_cells():
    tab = results.table(
        ["a", "b", "c"],
        ["{}", "{:.3f} +- {:.3f}", "{:+.1f}"],
        [["x", [0.6491, 0.0503], -1.25], ["exact", {"value": 0.575, "format": "{:.3f}"}, None], ["y", "-", 2]],
    )
    assert results.markdown(tab).splitlines()[2:] == [
        "| x | 0.649 +- 0.050 | -1.2 |",
        "| exact | 0.575 |  |",
        "| y | - | +2.0 |",
    ]
    with pytest.raises(ValueError, match="3 columns"):
        results.table(["a", "b", "c"], ["{}"] * 3, [["only", "two"]])


def test_the_main_jobs_time_has_one_source(tmp_path, monkeypatch):
    # `tf-vrre mixture`'s time is the wall time in mixture.json, on every page that gives it
    shutil.copytree(results.RESULTS, tmp_path / "results")
    res = json.loads((tmp_path / "results" / "mixture.json").read_text())
    res["values"]["wall_seconds"] = 199.6
    (tmp_path / "results" / "mixture.json").write_text(json.dumps(res))
    monkeypatch.setattr(results, "RESULTS", tmp_path / "results")
    for page, shown in (
        ("README.md", "[about 3 minutes on 2 CPU cores](docs/benchmarks/mixture.md)"),
        ("docs/getting-started.md", "(about 3 minutes on a 2-core CPU;"),
        ("docs/benchmarks/mixture.md", "about 3 minutes (3 min 20 s of wall time for the table below)"),
    ):
        text = _text(page)
        rendered, problems = render_docs.render(text, page)
        assert not problems and shown in re.sub(r"\s+", " ", rendered) and shown not in re.sub(r"\s+", " ", text)


def test_numbers_in_table_cells_stay_whole():
    # a rendered table keeps `0.022 +- 0.001` on one line (non-breaking spaces); words still wrap
    rows = render_docs.whole_numbers("| a | b |\n|---|---|\n| target 0.3 | 0.022 +- 0.001 |").splitlines()
    assert rows[:2] == ["| a | b |", "|---|---|"]
    assert rows[2] == "| target 0.3 | 0.022\u00a0+-\u00a00.001 |"
    assert render_docs.whole_numbers("| 1.69e+04 5.05e+05 | 3.31 (3.30) |") == (
        "| 1.69e+04\u00a05.05e+05 | 3.31\u00a0(3.30) |"
    )
    assert "| +0.055\u00a0+-\u00a00.085 |" in _text("docs/guides/ladder.md")


def test_is_it_done_page_shows_a_run_that_passes_and_one_stopped_early():
    # the page's prose says the full runs pass and the runs stopped early do not: so must the results
    res = results.load("is-it-done")
    status = {key: results.value(res, "verdicts", key, "verdict") for key in ("first", "early", "full")}
    assert status["full"] == "mixing" and "mixing" not in (status["first"], status["early"]), status
    page = open(os.path.join(ROOT, "docs", "guides", "is-it-done.md")).read()
    assert f"(*{status['early']}*)" in page, status["early"]  # the verdict the prose names is the file's
    assert res["final_verdict"]["status"] == "mixing"
