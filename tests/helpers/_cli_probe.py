"""``python -m tf_vrre.cli ARGS`` in a fresh process, reporting whether it ever imported TensorFlow.

A refusal "before TensorFlow starts" is a fact about ``sys.modules``, not about how long the
command took: the probe runs the command line exactly as the shell's ``python -m tf_vrre.cli``
does (``runpy``) and, at exit (after every line is printed), writes ``'tensorflow' in
sys.modules`` to a marker file.  ``deny_listing``: directories whose listing (``os.scandir``, how
the data sources read a folder) raises ``PermissionError`` as an unreadable folder does, for
tests that cannot rely on file modes (root reads any folder).
"""

import os
import subprocess
import sys

from _paths import ROOT

PROBE = (
    "import atexit, os, runpy, sys\n"
    "marker, denied = sys.argv.pop(1), set(filter(None, sys.argv.pop(1).split(os.pathsep)))\n"
    "atexit.register(lambda: open(marker, 'w').write(str('tensorflow' in sys.modules)))\n"
    "listing = os.scandir\n"
    "def scandir(path='.'):\n"
    "    if os.path.abspath(os.fspath(path)) in denied:\n"
    "        raise PermissionError(13, 'Permission denied', os.fspath(path))\n"
    "    return listing(path)\n"
    "os.scandir = scandir\n"
    "runpy.run_module('tf_vrre.cli', run_name='__main__', alter_sys=True)\n"
)


def run_cli(*args, marker, deny_listing=(), env=None, timeout=300):
    """``(CompletedProcess, tensorflow_imported)`` of ``python -m tf_vrre.cli *args``.

    ``marker``: a path the probe may write; ``env``: the environment (default: this one with the
    repository on ``PYTHONPATH``)."""
    env = dict(os.environ, PYTHONPATH=ROOT) if env is None else env
    denied = os.pathsep.join(os.path.abspath(os.fspath(p)) for p in deny_listing)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(marker), denied, *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    with open(marker) as f:
        imported = {"True": True, "False": False}[f.read()]
    return proc, imported
