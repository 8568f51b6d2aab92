"""Ladder tuning on the command line: `tf-vrre mixture --tune-ladder` (and `--target-acceptance`)
tunes the ladder chains' ladder and prints its record; `tf-vrre diagnose` prints a run's tuning
record (Lambda, recommended chains, rejection per pair for each round) and draws it; bad flags exit 2
with one line before anything is written."""

import json
import os
import re
import shutil

import _ladder_records
import keras
import pytest
from _small_sampler import make_sampler

from tf_vrre import cli
from tf_vrre.callbacks.ladder_tuner import LadderTuner
from tf_vrre.diagnostics import ladder_report
from tf_vrre.runs import ladder_file
from tf_vrre.sgmcmc import tuning

SHORT = [
    "--methods",
    "vr-resgld-ladder",
    "--iterations",
    "1000",
    "--seeds",
    "1",
    "--variance-m",
    "10",
    "--variance-steps",
    "100",
    "--sens-ratios",
    "0.1",
    "--sens-lrs",
    "1e-4",
    "--sens-seeds",
    "1",
    "--sens-steps",
    "8",
]


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--methods", "vr-resgld", "--tune-ladder", "50"], "--tune-ladder: tunes the ladder of vr-resgld-ladder"),
        (
            ["--methods", "vr-resgld-ladder", "--tune-ladder", "5000"],
            r"--tune-ladder: must be <= the burn-in .*3000 steps",
        ),
        (["--target-acceptance", "0.3"], "--target-acceptance: needs --tune-ladder"),
        (
            ["--methods", "vr-resgld-ladder", "--tune-ladder", "50", "--target-acceptance", "1"],
            r"--target-acceptance: must be a number in \(0, 1\), got 1",
        ),
        (["--methods", "vr-resgld-ladder", "--tune-ladder", "0"], "--tune-ladder"),
    ],
)
def test_mixture_tuning_flags_refused_before_anything_is_written(flags, message, tmp_path, capsys):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_:
        cli.main(["mixture", *flags, "--out", str(out)])
    assert exit_.value.code == 2
    assert re.search(message, capsys.readouterr().err)
    assert not out.exists()


def test_mixture_tunes_the_ladder_and_f_and_prints_the_record(tmp_path, capsys):
    out = tmp_path / "study"
    assert cli.main(["mixture", *SHORT, "--tune-ladder", "100", "--target-acceptance", "0.4", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    doc = ladder_report.read(out / "ladder" / "vr-resgld-ladder-seed0")
    rounds = doc["rounds"]
    assert rounds[-1]["end_step"] == 100 and doc["target_acceptance"] == 0.4
    # the first round is long enough for every pair's attempts: each round measures the ladder
    assert [r["kept"] for r in rounds] == [None] * len(rounds), rounds
    assert min(min(r["attempts"]) for r in rounds) >= tuning.MIN_ROUND_ATTEMPTS
    assert "ladder tuning of vr-resgld-ladder-seed0" in printed and "F = " in printed
    with pytest.raises(SystemExit):  # the study directory itself is no run: diagnose points to the record
        cli.main(["diagnose", "--run", str(out)])
    assert f"--run {out / 'ladder' / 'vr-resgld-ladder-seed0'}" in capsys.readouterr().err
    summary = json.load(open(out / "summary.json"))
    # the study's ladder run used the tuned ladder: the ladder of the last round, not the geometric one
    assert summary["methods"]["vr-resgld-ladder"]["per_seed"][0]["temperatures"] == pytest.approx(
        rounds[-1]["new_temperatures"], rel=1e-6
    )


def test_diagnose_prints_and_draws_a_runs_tuning_record(diag_runs, tmp_path, capsys):
    import matplotlib.image as mpimg

    s, x, y = make_sampler(vr=False, temperatures=(1.0, 2.0, 4.0, 8.0), pairs="deo")
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=4)
    s.fit(
        x,
        y,
        batch_size=16,
        epochs=12,
        verbose=0,
        shuffle=False,
        callbacks=[LadderTuner(48, first_round_steps=16, directory=str(tmp_path / "tuned" / "ladder"))],
    )
    doc = ladder_report.read(tmp_path / "tuned")
    # a run with only the record: its table and figure
    assert cli.main(["diagnose", "--run", str(tmp_path / "tuned"), "--out", str(tmp_path / "d1")]) == 0
    printed = capsys.readouterr().out
    lines = ladder_report.format_table(doc).splitlines()
    assert len(lines) == 1 + len(doc["rounds"]) and all(line in printed for line in lines)
    assert f"about {doc['rounds'][-1]['recommended_chains']} chains recommended" in printed
    assert mpimg.imread(tmp_path / "d1" / "ladder.png")[..., :3].std() > 0.01
    # a run with a swap log and samples and a record: the usual report, the table, ladder.json in diagnostics.json
    run = shutil.copytree(diag_runs[0], tmp_path / "run")
    shutil.copytree(tmp_path / "tuned" / "ladder", run / "ladder")
    assert cli.main(["diagnose", "--run", str(run)]) == 0
    printed = capsys.readouterr().out
    assert "round trips" in printed and lines[-1] in printed
    d = json.load(open(run / "diagnostics.json"))
    assert d["ladder"][str(run)]["barrier"] == pytest.approx(doc["rounds"][-1]["barrier"])
    assert os.path.exists(run / "ladder.png")


def test_diagnose_refuses_a_broken_record(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "ladder.json").write_text('{"format": "something else"}')
    with pytest.raises(SystemExit):
        cli.main(["diagnose", "--run", str(tmp_path / "run"), "--out", str(tmp_path / "d")])
    assert "not a tuning record" in capsys.readouterr().err and not (tmp_path / "d").exists()


def _ladder_only_run(path, doc):
    path.mkdir(parents=True, exist_ok=True)
    (path / "ladder.json").write_text(json.dumps(doc))
    return path


def test_diagnose_reads_a_record_killed_in_its_first_round(tmp_path, capsys):
    """A run stopped during round 0 (one round started, none ended) is a normal state: diagnose says
    so, exit 0, no figure."""
    doc = _ladder_records.record()
    doc["rounds"] = [{k: v for k, v in doc["rounds"][0].items() if k not in ladder_file.END_FIELDS}]
    run = _ladder_only_run(tmp_path / "run", doc)
    assert cli.main(["diagnose", "--run", str(run), "--out", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert "round 0 started at step 0 and none has ended (the run stopped during its first round)" in out
    assert not (tmp_path / "d" / "ladder.png").exists()
    doc = _ladder_records.record()  # rounds kept for too few attempts: tabulated, no barrier drawn from them
    doc["rounds"] = doc["rounds"][:1] + [{k: v for k, v in doc["rounds"][1].items() if k not in ladder_file.END_FIELDS}]
    run = _ladder_only_run(tmp_path / "kept", doc)
    assert cli.main(["diagnose", "--run", str(run), "--out", str(tmp_path / "k")]) == 0
    out = capsys.readouterr().out
    assert "kept its ladder: too few swap attempts" in out and "no round measured a barrier" in out


@pytest.mark.parametrize(
    "case,message",
    [
        ("field", r"ladder\.json: rounds\[1\]\.swaps: must be a list of 3 integers >= 0, got \"all\""),
        ("identity", r"ladder\.json: run: the recorded run identity was edited"),
        ("two", r"holds two tuning records, .*ladder\.json and .*ladder/ladder\.json"),
    ],
)
def test_diagnose_refuses_a_damaged_record_or_two_in_one_line(case, message, tmp_path, capsys):
    doc = _ladder_records.record()
    if case == "field":
        doc["rounds"][1]["swaps"] = "all"
    if case == "identity":
        doc["run"]["sampler"]["num_chains"] = 8
    run = _ladder_only_run(tmp_path / "run", doc)
    if case == "two":
        _ladder_only_run(run / "ladder", doc)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["diagnose", "--run", str(run), "--out", str(tmp_path / "d")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1 and re.search(message, err), err
    assert not (tmp_path / "d").exists()
