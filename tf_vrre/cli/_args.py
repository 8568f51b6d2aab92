"""Argument types and helpers shared by every ``tf-vrre`` subcommand.

Nothing here imports TensorFlow: flags are parsed and validated before any heavy import, so a
bad value gives exactly one line on stderr and exit status 2.  Numbers are finite and bounded:
ints below ``2**31`` (TensorFlow's int32 shapes and seeds), floats within float32's range
(:data:`tf_vrre.numerics.F32_MAX`; values reach float32 variables), tighter where a flag says so.

Every error has one shape, ``tf-vrre: error: <subcommand>: <flag>: <message>`` (:func:`die`),
argparse's own errors included (:func:`argparse_message`); warnings are
``tf-vrre: warning: <subcommand>: <flags>: <message>`` (:func:`warn`).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import re
import sys
import tempfile
from typing import NoReturn

from tf_vrre.numerics import F32_MAX, F32_TINY

COMMAND: str | None = None
"""The subcommand being run (set while its flags are parsed): the second field of every message."""


def _line(kind: str, message: str) -> str:
    where = f"{COMMAND}: " if COMMAND else ""
    return f"tf-vrre: {kind}: {where}{message}\n"


def die(message: str) -> NoReturn:
    """One line on stderr and exit status 2: ``tf-vrre: error: <subcommand>: <message>``, where
    ``message`` starts with the flag it concerns (``"--out: ..."``)."""
    sys.stderr.write(_line("error", message))
    raise SystemExit(2)


def warn(message: str) -> None:
    """One line on stderr: ``tf-vrre: warning: <subcommand>: <message>`` (``message`` starts with
    the flags it concerns)."""
    sys.stderr.write(_line("warning", message))
    sys.stderr.flush()


_ARGPARSE = (  # argparse's sentences, flag first
    (r"^argument (\S+): ", r"\1: "),
    (
        r"^the following arguments are required: (--\S+(?:, --\S+)*)$",
        lambda m: f"{m.group(1).replace(', ', ' / ')}: required",
    ),
    (
        r"^one of the arguments (--\S+(?: --\S+)*) is required$",
        lambda m: f"{m.group(1).replace(' ', ' / ')}: one of them is required",
    ),
    (r"^unrecognized arguments: (--\S+)$", r"\1: unrecognized argument"),
)


def argparse_message(message: str) -> str:
    """argparse's error text in the shape of the others, the flag first: ``argument --lr: must
    be > 0`` becomes ``--lr: must be > 0``, ``the following arguments are required: --config``
    becomes ``--config: required``.

    Example:
      >>> argparse_message("argument --iterations/--steps: expected an int, got '1e30'")
      "--iterations/--steps: expected an int, got '1e30'"
      >>> argparse_message("one of the arguments --run --samples is required")
      '--run / --samples: one of them is required'
    """
    for pattern, replacement in _ARGPARSE:
        message, found = re.subn(pattern, replacement, message)
        if found:
            break
    return message


def version_text() -> str:
    """``tf-vrre --version``: tf_vrre's version and the installed TensorFlow's, Keras' and Python's
    (read from the installed packages' metadata: no TensorFlow is imported)."""
    from importlib import metadata

    from tf_vrre._version import __version__

    def installed(*names: str) -> str:
        for name in names:
            try:
                return metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
        return "not installed"

    return (
        f"tf-vrre {__version__} (TensorFlow {installed('tensorflow', 'tensorflow-cpu', 'tf-nightly')}, "
        f"Keras {installed('keras')}, Python {platform.python_version()})"
    )


INT_MAX = 2**31 - 1


def _number(kind, text, maximum=None):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a{'n' if kind is int else ''} {kind.__name__}, got {text!r}"
        ) from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    limit = maximum if maximum is not None else (INT_MAX if kind is int else F32_MAX)
    if abs(value) > limit:
        bound = limit if kind is int else f"{limit:g}"
        raise argparse.ArgumentTypeError(
            f"must be <= {bound}, got {text}" if value > 0 else f"must be >= -{bound}, got {text}"
        )
    return value


def finite(text, maximum=None):
    """Argument type: a finite float with ``|x| <= maximum`` (default float32's range)."""
    return _number(float, text, maximum)


def bounded(maximum):
    """Argument type: a finite float with ``|x| <= maximum``."""
    return lambda text: _number(float, text, maximum)


def positive(kind, maximum=None):
    """Argument type: a finite ``kind`` (int or float) in ``(0, maximum]``; floats as :func:`positive_float`."""
    if kind is float:
        return positive_float(maximum)

    def parse(text):
        value = _number(kind, text, maximum)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    return parse


def positive_float(maximum=None):
    """Argument type: a float in ``[F32_TINY, maximum]`` (default :data:`F32_MAX`): positive
    also after rounding to float32 (``1e-46`` is 0 there), finite there too.  The error names the range."""
    high = F32_MAX if maximum is None else maximum

    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a float, got {text!r}") from None
        if not math.isfinite(value):
            reason = "must be a finite number"
        elif value <= 0:
            reason = "must be > 0"
        elif value < F32_TINY:
            reason = f"must be >= {F32_TINY:.3g} (it is 0 or imprecise in float32)"
        elif value > high:
            reason = f"must be <= {high:g}"
        else:
            return value
        raise argparse.ArgumentTypeError(
            f"{reason}, got {text}; allowed: [{F32_TINY:.3g}, {high:g}] (positive and finite in float32)"
        )

    return parse


def nonnegative_int(text, maximum=None):
    """Argument type: an int in ``[0, maximum]`` (default ``2**31 - 1``)."""
    value = _number(int, text, maximum)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def fraction(closed=False):
    """Argument type: a float in ``[0, 1)`` (``closed``: ``[0, 1]``)."""

    def parse(text):
        value = _number(float, text)
        if not (0 <= value <= 1 if closed else 0 <= value < 1):
            raise argparse.ArgumentTypeError(f"must be in [0, 1{']' if closed else ')'}, got {text}")
        return value

    return parse


def positive_list(kind, maximum=None):
    """Argument type: a comma-separated list of finite ``kind`` in ``(0, maximum]``, as a tuple."""
    one = positive(kind, maximum)

    def parse(text):
        items = [t for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
        return tuple(one(t.strip()) for t in items)

    return parse


def writable(out, flag="--out"):
    """Checks, without creating anything, that ``out`` can be created or written (else exit 2).

    ``out`` must be a writable directory, or not exist below a writable directory; the
    subcommand creates it when it writes its first file (a bad flag leaves no trace).
    """
    path = os.path.abspath(out)
    if os.path.exists(path) and not os.path.isdir(path):
        die(f"{flag}: {out!r} is not writable: it is a file, not a directory")
    existing = path
    while not os.path.exists(existing):
        parent = os.path.dirname(existing)
        if parent == existing:
            break
        existing = parent
    if not os.path.isdir(existing):
        die(f"{flag}: {out!r} is not writable: {existing!r} is not a directory")
    try:  # a directory can be made there (removed at once: nothing is left behind)
        os.rmdir(tempfile.mkdtemp(prefix=".tf-vrre-probe-", dir=existing))
    except OSError as err:
        die(f"{flag}: {out!r} is not writable: {err}")


def fresh_directory(out, outputs, overwrite, flag="--out"):
    """Exit 2 if ``out`` already holds any of ``outputs`` (file names) and not ``overwrite``.

    Results of another invocation are never replaced silently; ``--overwrite`` says the user
    means it.
    """
    if overwrite or not os.path.isdir(out):
        return
    found = sorted(name for name in outputs if os.path.exists(os.path.join(out, name)))
    if found:
        die(
            f"{flag}: {out!r} already holds {', '.join(found)} of an earlier run; choose another directory "
            "or pass --overwrite to replace them"
        )


def write_json(path, obj):
    """Writes ``obj`` as JSON to ``path`` atomically (temporary file, fsync, rename)."""
    from tf_vrre.runs import atomic

    atomic.write_json(path, obj, indent=2)
