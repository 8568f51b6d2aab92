"""`tf-vrre diagnose`'s section "where replica exchange pays": a best guess from the swap log (its
numbers agree with swaps.csv), the pilot's advice when RUN/advice.json exists, and a damaged
advice.json refused in one line before anything is written."""

import csv
import json
import shutil

import numpy as np
import pytest

from tf_vrre import cli
from tf_vrre.diagnostics import advice


def test_section_from_the_swap_log(diag_runs, tmp_path, capsys):
    run = shutil.copytree(diag_runs[0], tmp_path / "run")
    assert cli.main(["diagnose", "--run", str(run)]) == 0
    out = capsys.readouterr().out
    assert "where replica exchange pays" in out and "from the swap log" in out
    assert "(best guess: the evidence is too weak to decide)" in out and "tf_vrre.diagnostics.advise" in out
    section = json.load(open(run / "diagnostics.json"))["replica_exchange"][str(run)]
    numbers = section["advice"]["numbers"]
    assert numbers["estimator"] == "control variates"  # the run's sampler has ControlVariates(period=4)
    with open(run / "swaps" / "swaps.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["pair"] == "0"]
    delta = np.array([1 / float(r["temperature_lo"]) - 1 / float(r["temperature_hi"]) for r in rows])
    sigma2 = np.array([float(r["sigma2"]) for r in rows])
    cold = numbers["pairs"][0]
    assert cold["attempts"] == len(rows)
    assert cold["penalty_nats"] == pytest.approx(np.mean(delta**2 * sigma2) / 2)
    assert cold["acceptance"] == pytest.approx(np.mean([float(r["accepted"]) for r in rows]))


def test_section_from_a_pilot_and_a_damaged_record(diag_runs, tmp_path, capsys):
    run = shutil.copytree(diag_runs[0], tmp_path / "run")
    rng = np.random.default_rng(0)
    m = advice.Measurements(
        temperatures=[1.0, 4.0], batch_size=32, data_size=256, period=4,
        diff=rng.normal(-2, 1, (8, 1)), diff_var=np.zeros((8, 1)), naive_var=np.full((8, 1), 400.0),
        vr_var=np.full((8, 1), 2.0), offsets=np.arange(8) % 4, cold=rng.normal(0, 1, (40, 2)),
        hot=rng.normal(8, 2, (40, 2)), step_seconds=0.01, pass_seconds=0.01, pilot_vr_period=None, steps=80,
        attempts=[79], swaps=[0], exact=True, batch_energies=np.stack([rng.normal(-2, 20, 40), np.zeros(40)], 1),
    )  # fmt: skip
    a = advice.recommend(m)
    record = {"format": advice.FORMAT, "measurements": m.to_dict(), "advice": a.to_dict()}
    (run / advice.FILE).write_text(json.dumps(record))
    assert cli.main(["diagnose", "--run", str(run), "--no-figures"]) == 0
    out = capsys.readouterr().out
    assert "from the pilot" in out and a.summary() in out
    (run / advice.FILE).write_text(json.dumps({"format": "something else"}))
    out_dir = tmp_path / "out"
    with pytest.raises(SystemExit) as err:
        cli.main(["diagnose", "--run", str(run), "--out", str(out_dir)])
    assert err.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "not an advice record" in lines[0]
    assert not out_dir.exists()
