"""K chains in the image workflow, from the command line: a K = 4 tuned-ladder run (``--config
vr-resghmc-ladder``, the toy scale of ``_image_runs.LADDER_RUN``: a small CNN on 64 real CIFAR-10
images, 6 epochs of 8 steps, the ladder tuned in rounds ending at steps 12 and 40, samples at steps 44
and 48) trains, resumes bit for bit after a SIGKILL during the tuning phase, evaluates, exports, checks
(repair) and diagnoses; the same run with ``--placement chain-per-replica`` on 4 logical CPUs draws the
same samples and swaps."""

import csv
import json
import os
import subprocess
import sys

import numpy as np
from _image_runs import ladder_flags
from _paths import HELPERS, ROOT

from tf_vrre import cli
from tf_vrre.callbacks.sample_collector import load_samples

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
JOB = os.path.join(HELPERS, "_cli_job.py")


def _job(flags, **env):
    return subprocess.Popen(
        [sys.executable, JOB, *flags],
        env=dict(ENV, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _manifest(run):
    return [(e["step"], e["sha256"]) for e in json.load(open(run / "samples" / "manifest.json"))["entries"]]


def _log(run):
    return [{k: v for k, v in row.items() if k != "epoch_seconds"} for row in csv.DictReader(open(run / "log.csv"))]


def _swaps(run):
    return np.genfromtxt(run / "swaps" / "swaps.csv", delimiter=",", names=True)


def test_a_tuned_four_chain_run_from_the_command_line(image_data_dir, tmp_path, capsys):
    full, killed, devices = tmp_path / "full", tmp_path / "killed", tmp_path / "devices"
    # killed when the fifth checkpoint's files are written (epoch 5 ends at step 40): the second tuning
    # round has just ended in ladder.json, the last committed checkpoint is at step 32, inside that round
    kill = _job(ladder_flags(killed, image_data_dir), TF_VRRE_TEST_KILL="checkpoint.data:5")
    cpus = _job(
        ladder_flags(
            devices, image_data_dir, "--strategy", "mirrored", "--cpu-devices", 4, "--placement", "chain-per-replica"
        )
    )
    assert cli.main(ladder_flags(full, image_data_dir)) == 0  # meanwhile, the uninterrupted run

    _, err = kill.communicate(timeout=600)
    assert kill.returncode == -9, err[-3000:]
    assert json.load(open(killed / "run.json"))["status"] == "running"
    assert [r.get("end_step") for r in json.load(open(killed / "ladder" / "ladder.json"))["rounds"]] == [12, 40]
    assert cli.main(ladder_flags(killed, image_data_dir)) == 0  # the same command resumes at step 32
    assert _manifest(killed) == _manifest(full) and [s for s, _ in _manifest(full)] == [44, 48]
    for name in ("swaps/swaps.csv", "swaps/refresh.csv", "swaps/epochs.csv", "ladder/ladder.json"):
        assert (killed / name).read_text() == (full / name).read_text(), name
    assert _log(killed) == _log(full)
    run = json.load(open(full / "run.json"))
    assert json.load(open(killed / "run.json"))["rungs"] == run["rungs"]

    tuning = json.load(open(full / "ladder" / "ladder.json"))
    initial, final = tuning["initial"]["temperatures"], tuning["rounds"][-1]["new_temperatures"]
    assert len(final) == 4 and final[0] == initial[0] and final[-1] == initial[-1] and final != initial  # tuned
    assert [r["temperature"] for r in run["rungs"]] == final and run["config"]["ladder"]["chains"] == 4
    assert run["execution"]["replicas"] == 1 and [r["chain"] for r in run["rungs"]] == [0, 1, 2, 3]
    assert {r["pair"] for r in csv.DictReader(open(full / "swaps" / "swaps.csv"))} == {"0", "1", "2"}

    # one chain per logical CPU: the same swaps and samples (weights never leave their device)
    _, err = cpus.communicate(timeout=600)
    assert cpus.returncode == 0, err[-3000:]
    other = json.load(open(devices / "run.json"))
    assert other["execution"]["placement"] == "chain_per_replica" and other["execution"]["replicas"] == 4
    assert [r["temperature"] for r in other["rungs"]] == final
    assert sorted(r["device"] for r in other["rungs"]) == sorted(other["execution"]["devices"])
    a, b = _swaps(full), _swaps(devices)
    for column in ("step", "pair", "accepted"):
        np.testing.assert_array_equal(a[column], b[column])
    np.testing.assert_allclose(a["energy_lo"], b["energy_lo"], rtol=1e-5)
    ours, theirs = load_samples(full / "samples"), load_samples(devices / "samples")
    assert ours.steps == theirs.steps == [44, 48]
    for i in range(len(ours)):
        for x, y in zip(ours.weights(i), theirs.weights(i)):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)

    # the run's other commands read a K-chain run
    capsys.readouterr()
    assert (
        cli.main(["evaluate", "--run", str(full), "--ood", "none", "--test-size", "40", "--fit-size", "16", "--quiet"])
        == 0
    )
    report = json.load(open(full / "report.json"))
    assert report["samples"] == 2 and report["swaps"]["attempts"] == int(a.size)
    assert cli.main(["export", "--run", str(full), "--out", str(tmp_path / "serving"), "--quiet"]) == 0
    assert os.path.isfile(tmp_path / "serving" / "1" / "saved_model.pb")
    assert cli.main(["repair", str(full), "--dry-run"]) == 0  # every sample readable: nothing to drop
    assert cli.main(["diagnose", "--run", str(full), "--no-figures"]) == 0
    text = capsys.readouterr().out
    assert "K=4" in text and "ladder tuning of" in text
    diagnostics = json.load(open(full / "diagnostics.json"))
    assert diagnostics["ladder"] and diagnostics["replica_flow"][0]["num_chains"] == 4
