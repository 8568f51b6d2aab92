"""What in the current directory would be imported as ``tf_vrre`` by Python run from it.

A script or ``python -c`` run from a directory imports what that directory holds before the
installed package: a ``tf_vrre.py`` (a user's own script named after the package), a
``tf_vrre/`` package that is another copy, or -- with an editable install (``pip install -e``),
whose package is found by an import hook consulted after the directories on the module
search path -- a ``tf_vrre/`` folder without ``__init__.py``, such as a clone of the repository
seen from the directory above it.  Python imports such a folder as an empty namespace package,
and ``tf_vrre.ReplicaExchangeSampler`` then fails with ``module 'tf_vrre' has no attribute
'ReplicaExchangeSampler'``.  None of the package's code runs in that case, so the package
cannot say it; ``tf-vrre`` says it when it runs in such a directory (:func:`note`).  No
TensorFlow here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The ``tf_vrre`` package this command runs."""

HOW = "run scripts that import tf_vrre from another directory (or rename it)"


def note(directory: str, package_dir: str = PACKAGE_DIR, search_path: Sequence[str] | None = None) -> str | None:
    """One line saying what Python run from ``directory`` imports as ``tf_vrre`` instead of
    ``package_dir`` (the package found on ``search_path``, default ``sys.path``), or ``None``.

    Example:
      >>> import tempfile
      >>> here = tempfile.mkdtemp()
      >>> note(here) is None
      True
      >>> open(os.path.join(here, "tf_vrre.py"), "w").close()
      >>> print(note(here).split(":")[0])
      Python run from this directory imports ./tf_vrre.py instead of the installed package
    """
    module = os.path.join(directory, "tf_vrre.py")
    folder = os.path.join(directory, "tf_vrre")
    if os.path.isfile(module):
        return f"Python run from this directory imports ./tf_vrre.py instead of the installed package: {HOW}"
    if not os.path.isdir(folder) or os.path.realpath(folder) == os.path.realpath(package_dir):
        return None
    if os.path.isfile(os.path.join(folder, "__init__.py")):
        return (
            f"Python run from this directory imports ./tf_vrre (another copy of the package) instead of "
            f"{package_dir}: {HOW}"
        )
    entries = {os.path.realpath(p or os.curdir) for p in (sys.path if search_path is None else search_path)}
    if os.path.realpath(os.path.dirname(package_dir)) in entries:
        return None  # the package is found on the search path: a regular package beats a namespace folder
    return (
        "Python run from this directory imports the folder ./tf_vrre (no __init__.py: a clone of the "
        "repository?) as an empty namespace package instead of the installed tf_vrre, so "
        f"`tf_vrre.ReplicaExchangeSampler` is an AttributeError there: {HOW}, or from inside the clone"
    )


def current_note() -> str | None:
    """:func:`note` of the current directory (``None`` if it is gone)."""
    try:
        return note(os.getcwd())
    except OSError:
        return None
