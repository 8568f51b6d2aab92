"""`tf-vrre diagnose`: a real run's table, figures and diagnostics.json agree with its logs; the
verdict is read off the stored predictive, ``--quiet`` prints it alone; bad flags exit 2 with one
line."""

import json
import os
import shutil

import numpy as np
import pytest

from tf_vrre import cli, diagnostics
from tf_vrre.diagnostics import report


def _read_csv(path):
    import csv

    with open(path) as f:
        return list(csv.DictReader(f))


def test_single_run_writes_json_figures_and_table(diag_runs, tmp_path, capsys):
    import matplotlib.image as mpimg

    run = shutil.copytree(diag_runs[0], tmp_path / "run")
    assert cli.main(["diagnose", "--run", str(run)]) == 0
    out = capsys.readouterr().out
    for text in ("round trips", "acceptance", "ESS", "R-hat", "sigma2 pair 0", "function space", "weight_norm"):
        assert text in out, text
    assert "R-hat of the predictive at 16 held-out inputs" in out and "\nverdict: NOT MIXING: " in out
    for name in ("replicas.png", "acceptance.png"):
        img = mpimg.imread(run / name)
        assert img.shape[0] > 150 and img.shape[1] > 300 and img[..., :3].std() > 0.01, name
    d = json.load(open(run / "diagnostics.json"))
    assert d["format"] == "tf_vrre.diagnostics/1" and not [f for f in os.listdir(run) if f.endswith(".tmp")]
    flow = d["replica_flow"][0]
    rows = _read_csv(run / "swaps" / "swaps.csv")
    epochs = _read_csv(run / "swaps" / "epochs.csv")
    assert flow["num_chains"] == 3 and flow["steps"] == sum(int(e["steps"]) for e in epochs) == 96
    assert flow["swaps"] == sum(int(r["accepted"]) for r in rows) == int(epochs[-1]["total_swaps"])
    assert [p["attempts"] for p in flow["pairs"]] == [sum(r["pair"] == str(p) for r in rows) for p in range(2)]
    cut = 0.1 * 96
    n_cold = sum(r["pair"] == "0" and int(r["step"]) >= cut for r in rows)
    s = d["summaries"]
    assert s["cold_energy"]["draws"] == n_cold and s["cold_energy"]["chains"] == 1 and d["split"]
    manifest = json.load(open(run / "samples" / "manifest.json"))
    energies = [e["energy"] for e in manifest["entries"] if e["step"] >= cut]
    assert s["sample_energy"]["mean"] == pytest.approx(np.mean(energies[len(energies) % 2 :]))
    for name in ("cold_energy", "sample_energy", "weight_norm"):
        assert s[name]["ess"] > 1 and np.isfinite(s[name]["rhat"]), name
    fs = d["function_space"]  # the stored predictive: 16 held-out inputs x 2 classes, one run split in halves
    assert (fs["chains"], fs["inputs"], fs["outputs"], fs["draws"]) == (1, 16, 2, len(energies))
    assert len(fs["per_input"]["rhat"]) == 16 and fs["rhat"]["q90"] >= fs["rhat"]["median"] >= 1.0
    assert d["made_by"] == ["python"] and d["verdict"]["basis"] == "function space"


def test_two_runs_as_chains_and_bare_directories(diag_runs, tmp_path, capsys):
    out = tmp_path / "both"
    assert (
        cli.main(
            [
                "diagnose",
                "--run",
                diag_runs[0],
                "--run",
                diag_runs[1],
                "--out",
                str(out),
                "--burn-in",
                "0.25",
                "--points",
                "2",
                "--no-split",
            ]
        )
        == 0
    )
    d = json.load(open(out / "diagnostics.json"))
    assert len(d["replica_flow"]) == 2 and d["burn_in"] == 0.25 and not d["split"]
    assert d["summaries"]["sample_energy"]["chains"] == 2
    assert (d["function_space"]["chains"], d["function_space"]["inputs"]) == (2, 2)  # --points 2
    bare = tmp_path / "bare"
    assert cli.main(["diagnose", "--run", os.path.join(diag_runs[0], "swaps"), "--out", str(bare), "--no-figures"]) == 0
    d = json.load(open(bare / "diagnostics.json"))
    assert set(d["summaries"]) == {"cold_energy"} and not (bare / "replicas.png").exists()
    assert cli.main(["diagnose", "--run", os.path.join(diag_runs[0], "samples"), "--out", str(bare)]) == 0
    d = json.load(open(bare / "diagnostics.json"))
    assert d["replica_flow"] == [None] and "sample_energy" in d["summaries"]
    assert "no swap log" in capsys.readouterr().out


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--run", "/nonexistent/run"], "--run"),
        (["--run", "{run}", "--burn-in", "1.5"], "--burn-in"),
        (["--run", "{run}", "--blocks", "1"], "--blocks"),
        (["--run", "{run}", "--points", "0"], "--points"),
        (["--run", "{run}", "--run", "{run}", "--out", "{tmp}"], "same run"),
        (["--run", "{run}", "--run", "{run1}"], "--out"),
        (["--run", "{run}", "--out", "/proc/forbidden/x"], "--out"),
        (["--run", "{tmp}"], "no swap log"),
    ],
)
def test_bad_flags_exit_2_with_one_line(diag_runs, tmp_path, capsys, flags, message):
    flags = [f.format(run=diag_runs[0], run1=diag_runs[1], tmp=tmp_path) for f in flags]
    with pytest.raises(SystemExit) as exc:
        cli.main(["diagnose", *flags])
    assert exc.value.code == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and message in err[0] and "error" in err[0], err


def test_corrupt_sample_file_is_named(diag_runs, tmp_path, capsys):
    run = shutil.copytree(diag_runs[0], tmp_path / "run")
    victim = sorted(f for f in os.listdir(run / "samples") if f.startswith("sample-"))[3]
    with open(run / "samples" / victim, "r+b") as f:
        f.truncate(100)
    with pytest.raises(SystemExit) as exc:
        cli.main(["diagnose", "--run", str(run)])
    assert exc.value.code == 2 and victim in capsys.readouterr().err
    assert not (run / "diagnostics.json").exists()


def test_help_answers(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["diagnose", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--run" in out and "round trips" in out and "diagnostics.json" in out


def test_diagnose_function_matches_replica_flow(diag_runs):
    d = diagnostics.diagnose(diag_runs[0])
    flow = diagnostics.replica_flow(diagnostics.read_swap_log(os.path.join(diag_runs[0], "swaps")))
    assert {k: v for k, v in flow.items() if k != "_paths"} == diagnostics.to_json(d)["replica_flow"][0]
    with pytest.raises(ValueError, match="burn_in"):
        diagnostics.diagnose(diag_runs[0], burn_in=1.0)
    with pytest.raises(ValueError, match="at least one run"):
        diagnostics.diagnose([])


def test_a_manifest_without_energies_is_diagnosed_without_that_summary(diag_runs, tmp_path, capsys):
    """A manifest whose entries record no ``energy`` (as ``tf-vrre repair`` rebuilds it from the
    sample files) used to end diagnose with ``KeyError: 'energy'``; a value that is no number is
    damage, named in one line."""
    run = shutil.copytree(diag_runs[0], tmp_path / "run")
    path = run / "samples" / "manifest.json"
    manifest = json.load(open(path))
    for entry in manifest["entries"]:
        del entry["energy"], entry["temperature"], entry["lr"]
    path.write_text(json.dumps(manifest))
    assert cli.main(["diagnose", "--run", str(run), "--no-figures"]) == 0
    out = capsys.readouterr().out
    assert (
        f"sample_energy: not in the manifest of {run} (its entries record no energy, as after 'tf-vrre repair' "
        "rebuilt it from the sample files)"
    ) in out
    d = json.load(open(run / "diagnostics.json"))
    assert "sample_energy" not in d["summaries"] and d["energy_not_recorded"] == [str(run)]
    assert d["summaries"]["weight_norm"]["draws"] > 8 and "cold_energy" in d["summaries"]
    idata = diagnostics.to_inference_data(str(run))
    assert "energy" not in idata.posterior and "lp" not in idata.sample_stats and "weight_norm" in idata.posterior

    manifest["entries"][3]["energy"] = "12.5"
    path.write_text(json.dumps(manifest))
    with pytest.raises(SystemExit) as exc:
        cli.main(["diagnose", "--run", str(run), "--out", str(tmp_path / "d")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1
    assert err[0].endswith(
        f"{run}/samples/manifest.json: the entry of {manifest['entries'][3]['file']} has energy = '12.5', not a number"
    ), err


def test_a_run_json_that_is_a_directory_is_named_not_reported_missing(diag_runs, tmp_path, capsys):
    run = shutil.copytree(diag_runs[0], tmp_path / "run")
    if (run / "run.json").exists():
        os.remove(run / "run.json")
    (run / "run.json").mkdir()
    with pytest.raises(SystemExit) as exc:
        cli.main(["diagnose", "--run", str(run), "--out", str(tmp_path / "d")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and err == [
        f"tf-vrre: error: diagnose: --run: {run}/run.json is not a readable run.json: not a "
        "regular file (a directory?); move it away"
    ]


def test_quiet_prints_the_verdict_only(diag_runs, tmp_path, capsys):
    """Not the replica table, not a ladder tuning record's table, not the files written: the verdict,
    its reasons and what to try, in the terms of a run made with ``fit``."""
    from _small_sampler import make_sampler

    from tf_vrre.callbacks.ladder_tuner import LadderTuner

    s, x, y = make_sampler(vr=False, temperatures=(1.0, 2.0, 4.0))
    record = tmp_path / "tuned" / "ladder"
    s.fit(
        x, y, batch_size=16, epochs=2, verbose=0, callbacks=[LadderTuner(8, first_round_steps=2, directory=str(record))]
    )
    run = shutil.copytree(diag_runs[0], tmp_path / "run")
    shutil.copytree(record, run / "ladder")
    assert cli.main(["diagnose", "--run", str(run), "--quiet", "--no-figures"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    d = json.load(open(run / "diagnostics.json"))  # still written in full
    assert lines[0] == report.format_verdict(d["verdict"]).splitlines()[0] and lines[0].startswith(
        "verdict: NOT MIXING"
    )
    assert all(line.startswith(("  try: ", "  warning: ", "  weight space: ")) for line in lines[1:]), lines
    assert any("SampleCollector(every=...)" in line for line in lines) and "ladder" in d


def test_a_run_without_predictive_says_what_to_add(diag_runs, tmp_path, capsys):
    """Samples without ``validation_data``: nothing to judge in function space, and the advice names
    the collector's argument (a run of the image workflow would be told its flag)."""
    run = shutil.copytree(diag_runs[0], tmp_path / "run")
    for name in os.listdir(run / "samples"):
        if name.startswith("sample-"):
            with np.load(run / "samples" / name) as z:
                arrays = {k: z[k] for k in z.files if k != "predictive"}
            np.savez(run / "samples" / name, **arrays)
    manifest = json.load(open(run / "samples" / "manifest.json"))
    from tf_vrre.runs.samples import sha256

    for entry in manifest["entries"]:
        entry["bytes"] = os.path.getsize(run / "samples" / entry["file"])
        entry["sha256"] = sha256(run / "samples" / entry["file"])
    (run / "samples" / "manifest.json").write_text(json.dumps(manifest))
    d = diagnostics.diagnose(str(run))
    v = d["verdict"]
    assert d["function_space"] is None and v["status"] == report.NOT_MIXING  # no round trip
    assert f"no predictive recorded ({run}): the verdict is read off the predictive on held-out inputs" in v["reasons"]
    assert any("validation_data=(x_heldout, y_heldout)" in a for a in v["advice"])
    (run / "run.json").write_text(json.dumps({"format": "tf_vrre.run/1"}))
    assert any(a.endswith("--set samples.validation=1000") for a in diagnostics.diagnose(str(run))["verdict"]["advice"])
