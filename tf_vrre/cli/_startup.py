"""TensorFlow's start-up lines, silenced for ``tf-vrre`` unless the user asked for them.

Importing TensorFlow 2.21 on a machine without a GPU writes, twice (once per shared library
that carries its own copy of Abseil's logging: ``libtensorflow_framework.so.2`` when ``import
tensorflow`` starts, ``_pywrap_profiler_plugin.so`` when its API modules load)::

    WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
    I0000 ... port.cc:153] oneDNN custom operations are on. You may see slightly different ...
    I0000 ... cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.

and, when the first device is set up, ``E0000 ... cuda_platform.cc:52] failed call to cuInit``
(plus ``cpu_feature_guard.cc``'s "This TensorFlow binary is optimized ..." on some CPUs).
Where each comes from, and how it is silenced here:

- ``cuda_platform.cc`` (ERROR) and ``cpu_feature_guard.cc`` (INFO) go through TensorFlow's own
  logging, which honours ``TF_CPP_MIN_LOG_LEVEL``: it is set to ``3`` before TensorFlow is
  imported;
- ``port.cc`` (printed whenever oneDNN is on: turning it off with ``TF_ENABLE_ONEDNN_OPTS=0``
  would change the numbers) and ``cudart_stub.cc`` are Abseil ``LOG(INFO)`` calls made by static
  initialisers while the libraries load, before anything can set Abseil's minimum log level (no
  environment variable reaches it), and Abseil announces them with its "before
  absl::InitializeLog()" line.  These three lines, and only these, are dropped from stderr
  while ``import tensorflow`` runs: stderr goes through a pipe for that import, every other
  line is passed on as it arrives.

A user who sets ``TF_CPP_MIN_LOG_LEVEL`` (to anything, e.g. ``0``) gets every line as
TensorFlow writes it: nothing is set and nothing is filtered.

:func:`import_tensorflow` is where ``tf-vrre`` imports TensorFlow and Keras, once the flags are
checked: an installation that cannot be imported (a missing shared library, a half-removed package,
a module of that name shadowing it) is a :class:`BrokenInstall`, printed as one line naming the
package, where it was found and the exception, not a 60-line traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import threading

PACKAGES = ("tensorflow", "keras")
"""What ``tf-vrre``'s subcommands need imported before they run (TensorFlow first, quietly)."""

LOG_LEVEL = "3"
"""``TF_CPP_MIN_LOG_LEVEL`` for ``tf-vrre`` when the user has not set it."""

_STARTUP = re.compile(
    rb"^(WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    rb"|I\d{4} [\d:. ]+\d+ (port|cudart_stub)\.cc:\d+\] .*)\r?\n?$"
)


def is_startup_line(line: bytes) -> bool:
    """Whether ``line`` is one of the start-up lines dropped while TensorFlow is imported.

    Example:
      >>> is_startup_line(b"I0000 00:00:1795736086.422223   28387 cudart_stub.cc:31] Could not find cuda drivers\\n")
      True
      >>> is_startup_line(b"E0000 00:00:1795736086.422223   28387 port.cc:153] a real error\\n")
      False
    """
    return _STARTUP.match(line) is not None


class BrokenInstall(Exception):
    """A package ``tf-vrre`` needs cannot be imported: ``package``, ``error`` (the exception)."""

    def __init__(self, package: str, error: BaseException) -> None:
        self.package, self.error = package, error
        where = _origin(package)
        first = (str(error).strip().splitlines() or [""])[0][:300]
        super().__init__(
            f"cannot import {package}{f' (found at {where})' if where else ''}: {type(error).__name__}: {first}; "
            f"the installation is broken: reinstall it (pip install --force-reinstall {package}), check with "
            f"python -c 'import {package}', and remove any module of that name that shadows it"
        )


def _origin(package: str) -> str | None:
    """Where ``package`` is found on ``sys.path`` (``None`` if nowhere or unknown)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    return None if spec is None else spec.origin


def import_tensorflow() -> None:
    """Imports TensorFlow (without its start-up lines: :func:`quiet_tensorflow`), then Keras.

    Raises:
      BrokenInstall: one of them fails to import (naming the package and the exception).
    """
    for package in PACKAGES:
        try:
            if package == "tensorflow":
                quiet_tensorflow()
            importlib.import_module(package)
        except Exception as err:  # any failure while importing means a broken installation
            raise BrokenInstall(package, err) from err


def quiet_tensorflow() -> None:
    """Imports TensorFlow without its start-up lines, unless ``$TF_CPP_MIN_LOG_LEVEL`` is set
    (then nothing is changed) or TensorFlow is imported already."""
    if "TF_CPP_MIN_LOG_LEVEL" in os.environ or "tensorflow" in sys.modules:
        return
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = LOG_LEVEL
    try:
        err = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # stderr is not a file (an embedding host): plain import
        err = None
    if err != 2:
        import tensorflow  # noqa: F401

        return
    _import_filtered()


def _import_filtered() -> None:
    """``import tensorflow`` with file descriptor 2 sent through a pipe whose reader drops the
    start-up lines and writes every other line to the real stderr as it arrives."""
    sys.stderr.flush()
    real = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)

    def forward() -> None:
        with os.fdopen(read_end, "rb") as pipe:
            for line in pipe:
                if not is_startup_line(line):
                    os.write(real, line)

    reader = threading.Thread(target=forward, name="tf-vrre-startup-lines", daemon=True)
    reader.start()
    try:
        import tensorflow  # noqa: F401
    finally:
        sys.stderr.flush()
        os.dup2(real, 2)  # closes the pipe's last write end: the reader sees its end
        reader.join()
        os.close(real)
