"""MirroredStrategy over 2 logical CPUs: same trajectory as one device, bit-identical copies; the
gradient noise measured per replica and summed across them matches its closed form."""

import json
import os
import subprocess
import sys

from _paths import HELPERS, ROOT


def _report(mode):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run(
        [sys.executable, os.path.join(HELPERS, "_distributed_check.py"), mode],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_mirrored_strategy_matches_single_device_and_copies_are_identical():
    reports = _report("4")
    for path in ("forward", "cached"):  # snapshot forwards / per-example cache (all-reduced table)
        report = reports[path]
        assert report["copy_diff"] == 0.0, (path, report)  # mirrored copies bit-identical
        assert report["trajectory_diff"] < 1e-5, (path, report)  # float round-off only (reduction order)
        assert report["swaps"][0] == report["swaps"][1], (path, report)
        assert report["attempts"][0] == report["attempts"][1] > 0, (path, report)
        # SwapLogger and SampleCollector read mirrored state correctly.
        assert report["swap_rows"] == [report["attempts"][0]] * 2, (path, report)
        assert report["accepted_rows"] == [report["swaps"][0]] * 2, (path, report)
        assert report["sample_steps"][0] == report["sample_steps"][1] == list(range(2, 17, 2)), (path, report)
        assert report["sample_diff"] < 1e-5, (path, report)


def test_gradient_noise_measured_per_replica_matches_its_closed_form():
    """Each replica splits its shard of every batch; the replicas' estimates are summed across them
    (tests/sgmcmc/test_gradient_noise.py has the closed form); four standard errors of 20 epochs."""
    noise = _report("noise")
    assert abs(noise["mean"] - noise["exact"]) < 4 * noise["se"] and noise["se"] < 0.1 * noise["exact"], noise
