"""Reading a tuning record back (tf_vrre.diagnostics.ladder_report): locate, check, summarise, tabulate, draw."""

import json
import os

import _ladder_records
import numpy as np
import pytest

from tf_vrre.diagnostics import ladder_report
from tf_vrre.runs import ladder_file
from tf_vrre.sgmcmc import ladder, tempered_gaussian


def _record(tmp_path, rounds=3):
    """A record written as the tuner writes it: exact Gaussian rejections (d = 4) of each round's ladder."""
    temps = np.linspace(1.0, 100.0, 6)
    doc = {
        "format": ladder_file.FORMAT,
        "run": None,
        "tuner": {},
        "tuning_steps": 70,
        "round_ends": [10, 30, 70],
        "initial": {"step": 0, "temperatures": temps.tolist(), "learning_rates": [1e-3] * 6},
        "rounds": [],
    }
    start = 0
    for i, end in enumerate([10, 30, 70][:rounds]):
        r = tempered_gaussian.gaussian_rejection(temps[:-1] / temps[1:], 4)
        b = ladder.Barrier(temps, r, attempts=[100] * 5)
        new = ladder.equal_share_ladder(b)
        doc["rounds"].append(
            {
                "round": i,
                "start_step": start,
                "start_attempts": [0] * 5,
                "start_swaps": [0] * 5,
                "temperatures": temps.tolist(),
                "learning_rates": [1e-3] * 6,
                "end_step": end,
                "attempts": [100] * 5,
                "swaps": [int(100 * (1 - v)) for v in r],
                "rejection": r.tolist(),
                "pair_barrier": b.pair_barrier.tolist(),
                "barrier": b.total,
                "rejection_sum": b.rejection_sum,
                "recommended_chains": ladder.recommended_chains(b.total),
                "round_trip_rate": ladder.round_trip_rate(r),
                "new_temperatures": new.tolist(),
                "new_learning_rates": [1e-3] * 6,
            }
        )
        temps, start = new, end
    os.makedirs(tmp_path / "ladder", exist_ok=True)
    ladder_file.write(str(tmp_path / "ladder" / ladder_file.FILE), doc)
    return doc


def _shown(fig):
    """What a figure shows: its title and, per axes, the title, the labels and every line's and
    segment collection's data."""
    axes = [
        (
            ax.get_title(),
            ax.get_xlabel(),
            ax.get_ylabel(),
            [line.get_xydata().tolist() for line in ax.get_lines()],
            [[seg.tolist() for seg in c.get_segments()] for c in ax.collections if hasattr(c, "get_segments")],
        )
        for ax in fig.axes
    ]
    return fig.get_suptitle(), axes


def test_read_summary_table_and_figure(tmp_path, monkeypatch):
    doc = _record(tmp_path)
    assert ladder_report.read(tmp_path) == doc  # the run directory
    assert ladder_report.read(tmp_path / "ladder") == doc  # the tuner's directory
    s = ladder_report.summary(doc)
    assert s["finished"] and s["initial_temperatures"][-1] == 100.0 and len(s["rounds"]) == 3
    assert s["barrier"] == pytest.approx(doc["rounds"][-1]["barrier"])
    assert json.loads(json.dumps(s)) == s
    table = ladder_report.format_table(doc).splitlines()
    assert table[0].split()[:4] == ["round", "steps", "Lambda", "chains"] and table[3].split()[1] == "30-70"
    path = tmp_path / "barrier.png"
    fig = ladder_report.plot_barrier(str(path), doc)
    assert path.stat().st_size > 10_000 and len(fig.axes) == 3
    shown, k = _shown(fig), len(doc["rounds"][-1]["new_temperatures"])
    assert shown[0].startswith(f"Ladder tuning: K = {k}, tau 1 .. 100")
    assert [len(lines) for _, _, _, lines, _ in shown[1]] == [3, 1 + k, 1]  # top: PCHIP, before, after
    assert len(shown[1][0][4]) == len(doc["rounds"])  # top: each round's pair means
    assert shown[1][2][3] == [[[r["round"], r["barrier"]] for r in doc["rounds"]]]  # bottom: Lambda per round
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    unsaved = ladder_report.plot_barrier(None, doc)  # no path: the same figure, returned, nothing written
    assert unsaved is not fig and _shown(unsaved) == shown and os.listdir(cwd) == []


def test_unfinished_and_bad_records(tmp_path):
    doc = _record(tmp_path, rounds=1)
    assert ladder_report.summary(doc)["finished"] is False
    with pytest.raises(ValueError, match="holds no ladder.json"):
        ladder_report.read(tmp_path / "nowhere")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "ladder.json").write_text(json.dumps({"format": "something/1"}))
    with pytest.raises(ValueError, match="not a tuning record"):
        ladder_report.read(bad)
    (bad / "ladder.json").write_text("{")
    with pytest.raises(ValueError, match="unreadable tuning record"):
        ladder_report.read(bad)
    with pytest.raises(ValueError, match="no round that measured a barrier"):
        ladder_report.plot_barrier(None, {"rounds": [{"start_step": 0}]})


def test_rounds_that_kept_their_ladder_report_no_barrier(tmp_path):
    """A round with too few attempts per pair: in the table with why, no barrier in the summary
    until a round measured one; the figure leaves it out."""
    doc = _ladder_records.record()
    s = ladder_report.summary(doc)
    assert s["started"] == 3 and not s["finished"] and [r["kept"] is None for r in s["rounds"]] == [False, True]
    assert s["barrier"] == doc["rounds"][1]["barrier"] and s["rounds"][0]["barrier"] is None
    table = ladder_report.format_table(doc).splitlines()
    assert table[1].split()[:4] == ["0", "0-4", "-", "-"] and "kept its ladder: too few swap attempts" in table[1]
    assert table[2].split()[:4] == ["1", "4-12", "1.620", "4"]
    assert len(ladder_report.plot_barrier(None, doc).axes[2].lines[0].get_xdata()) == 1  # Lambda of round 1 only
    doc["rounds"] = doc["rounds"][:1]
    assert ladder_report.summary(doc)["barrier"] is None
    with pytest.raises(ValueError, match="no round that measured a barrier"):
        ladder_report.plot_barrier(None, doc)
