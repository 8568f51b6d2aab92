"""One device and MirroredStrategy over 2 logical CPUs run the same Markov chain.

The subprocess (``_mirror_chain.py``) leaves ``jit_compile`` at its default, as a user would:
the one-device step is XLA-compiled and the mirrored one is not, so this also checks that no
random draw depends on the compiler (:mod:`tf_vrre.sgmcmc.seeds`).  Variants: plain and
``make_dataset`` batches, with and without control variates, ``penalty="batch"`` and
``"window"``; 20 steps each.
"""

import json
import os
import subprocess
import sys

from _paths import HELPERS, ROOT

# plain and indexed batches with VR and the batch penalty, the paper's window penalty, and no VR
# (the helper also has indexed_vr_window and plain_window: same comparison, run by hand)
VARIANTS = ("plain_vr_batch", "indexed_vr_batch", "plain_vr_window", "plain_batch")


def test_one_device_and_mirrored_are_the_same_chain():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    env.pop("TF_VRRE_JIT_COMPILE", None)  # the default "auto" rule, not the suite's XLA-off setting
    reports = {}
    for name in VARIANTS:  # one process each: logical devices and a fresh collective runtime
        out = subprocess.run(
            [sys.executable, os.path.join(HELPERS, "_mirror_chain.py"), name],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
        )
        assert out.returncode == 0, (name, out.stderr[-3000:])
        reports.update(json.loads(out.stdout.strip().splitlines()[-1]))
    for name, r in reports.items():
        assert r["jit_compile"] == [True, False], (name, r["jit_compile"])  # XLA on one device only
        assert r["steps"] == [20, 20], (name, r["steps"])
        assert r["swaps"][0] == r["swaps"][1] > 0, (name, r["swaps"])
        assert r["attempts"][0] == r["attempts"][1] > 0, (name, r["attempts"])
        assert r["records"][0] == r["records"][1], name  # every step's flags, proposals, decisions
        assert r["cold_diff"] < 1e-5 and r["state_diff"] < 1e-5, (name, r["cold_diff"], r["state_diff"])
        a, b = r["sigma2"]
        assert abs(a - b) <= 1e-5 * abs(a), (name, r["sigma2"])
