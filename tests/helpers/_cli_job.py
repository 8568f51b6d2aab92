"""``tf-vrre`` in a test process that may kill itself: ``python _cli_job.py ARGS...`` runs
``tf_vrre.cli.main(ARGS)`` and exits with its status.

With ``TF_VRRE_TEST_KILL=POINT:N`` in the environment the process kills itself (SIGKILL) the N-th
time it passes the :mod:`tf_vrre.runs.fault_points` point ``POINT`` (e.g. ``checkpoint.data:3``:
the third checkpoint's files written, not yet committed), so a kill lands at a chosen instant of
the run whatever the machine's speed.
"""

import os
import signal
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tf_vrre import cli
from tf_vrre.runs import fault_points


def killer(spec):
    """A fault-point hook that kills this process the ``N``-th time it sees ``POINT`` (``"POINT:N"``)."""
    point, n = spec.rsplit(":", 1)
    seen = [0]

    def hit(name):
        if name == point:
            seen[0] += 1
            if seen[0] == int(n):
                sys.stdout.flush()
                sys.stderr.flush()
                os.kill(os.getpid(), signal.SIGKILL)

    return hit


if __name__ == "__main__":
    if os.environ.get("TF_VRRE_TEST_KILL"):
        fault_points.hook = killer(os.environ["TF_VRRE_TEST_KILL"])
    sys.exit(cli.main(sys.argv[1:]))
