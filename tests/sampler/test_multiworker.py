"""MultiWorkerMirroredStrategy: 2 worker processes on 127.0.0.1 follow the single-worker trajectory.

Both workers and a single-worker reference (same global batch of 24, so 12 per worker) run
``tests/helpers/_multiworker_job.py``: a BatchNorm net (synchronized), 2 chains, VR with the snapshot
cache, ``make_dataset`` batches.  Swap decisions must be identical and every variable equal to
float tolerance (the all-reduce sums in another order).
"""

import json
import os
import socket
import subprocess
import sys

import numpy as np
from _paths import HELPERS

JOB = os.path.join(HELPERS, "_multiworker_job.py")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_workers_match_one(tmp_path):
    cluster = {"worker": [f"127.0.0.1:{_free_port()}" for _ in range(2)]}
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    workers = [
        subprocess.Popen(
            [sys.executable, JOB, str(tmp_path / "multi")],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=dict(env, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})),
        )
        for i in range(2)
    ]
    ref = subprocess.run(
        [sys.executable, JOB, str(tmp_path / "single")], capture_output=True, text=True, env=env, timeout=600
    )
    outs = [w.communicate(timeout=600)[0] for w in workers]
    assert ref.returncode == 0, ref.stderr[-3000:]
    for w, out in zip(workers, outs):
        assert w.returncode == 0, out[-3000:]
    multi, single = np.load(tmp_path / "multi" / "state.npz"), np.load(tmp_path / "single" / "state.npz")
    assert int(multi["replicas"]) == 2 and int(single["replicas"]) == 1
    assert int(multi["step"]) == int(single["step"]) == 12
    np.testing.assert_array_equal(multi["swap_log"][:, :5], single["swap_log"][:, :5])  # step, flags, decisions
    assert int(single["swap_count"].sum()) >= 1
    # log_ratio (column 7) = delta * (U_lo - U_hi - ...): a difference of energies summed over the
    # global batch, so it is held to delta times the energies' own tolerance (1e-5 of |U|, as the
    # energy columns below), not 1e-5 of itself.  delta = 1/0.05 - 1/0.5 (the job's temperatures).
    delta, log_ratio = 1 / 0.05 - 1 / 0.5, 7
    scale = np.abs(single["swap_log"][:, 5]) + np.abs(single["swap_log"][:, 6])
    np.testing.assert_array_less(
        np.abs(multi["swap_log"][:, log_ratio] - single["swap_log"][:, log_ratio]), 1e-5 * delta * scale + 1e-5
    )
    for key in multi.files:
        if multi[key].dtype.kind == "f":
            a, b = multi[key], single[key]
            if key == "swap_log":
                a, b = np.delete(a, log_ratio, axis=1), np.delete(b, log_ratio, axis=1)
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=key)
