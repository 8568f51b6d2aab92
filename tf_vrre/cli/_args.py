"""Argument types and helpers shared by every ``tf-vrre`` subcommand.

Nothing here imports TensorFlow: flags are parsed and validated before any heavy import, so a
bad value gives exactly one line on stderr and exit status 2.  Numbers are finite and bounded:
ints below ``2**31`` (TensorFlow's int32 shapes and seeds), floats within float32's range
(values reach float32 variables), tighter where a flag says so.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from typing import NoReturn


def die(message: str) -> NoReturn:
    """One line on stderr (``tf-vrre: error: ...``) and exit status 2."""
    sys.stderr.write(f"tf-vrre: error: {message}\n")
    raise SystemExit(2)


INT_MAX = 2 ** 31 - 1
FLOAT_MAX = 3.0e38  # below float32's largest finite value (3.4e38)
FLOAT32_TINY = 1.1754943508222875e-38  # float32's smallest normal number: smaller positive values round to 0 or lose precision


def _number(kind, text, maximum=None):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a{'n' if kind is int else ''} {kind.__name__}, "
                                         f"got {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    limit = maximum if maximum is not None else (INT_MAX if kind is int else FLOAT_MAX)
    if abs(value) > limit:
        bound = limit if kind is int else f"{limit:g}"
        raise argparse.ArgumentTypeError(f"must be <= {bound}, got {text}" if value > 0 else
                                         f"must be >= -{bound}, got {text}")
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
    """Argument type: a float in ``[FLOAT32_TINY, maximum]`` (default :data:`FLOAT_MAX`): positive
    also after rounding to float32 (``1e-46`` is 0 there), finite there too.  The error names the range."""
    high = FLOAT_MAX if maximum is None else maximum

    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a float, got {text!r}") from None
        if not math.isfinite(value):
            reason = "must be a finite number"
        elif value <= 0:
            reason = "must be > 0"
        elif value < FLOAT32_TINY:
            reason = f"must be >= {FLOAT32_TINY:.3g} (it is 0 or imprecise in float32)"
        elif value > high:
            reason = f"must be <= {high:g}"
        else:
            return value
        raise argparse.ArgumentTypeError(f"{reason}, got {text}; allowed: [{FLOAT32_TINY:.3g}, {high:g}] "
                                         "(positive and finite in float32)")
    return parse


def check_config_ranges(cfg, where="--config / --set"):
    """Exit 2 (one line naming the key) for a resolved config value TensorFlow cannot hold: an int
    outside ``[-(2**31 - 1), 2**31 - 1]`` (int32 seeds and shapes; ``2**32`` fails as a NumPy seed)
    or a float that is inf or a nonzero below :data:`FLOAT32_TINY` in float32.  Run before TensorFlow
    starts; the config's own rules (signs, ranges of each key) are checked when it is resolved."""
    def walk(prefix, value):
        if isinstance(value, dict):
            for key, item in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), item)
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                walk(f"{prefix}[{i}]", item)
        elif isinstance(value, bool):
            return
        elif isinstance(value, int) and abs(value) > INT_MAX:
            die(f"{where}: config key {prefix} must be an integer in [-{INT_MAX}, {INT_MAX}] (int32; seeds below "
                f"2**31), got {value}")
        elif isinstance(value, float) and (not math.isfinite(value) or abs(value) > FLOAT_MAX
                                           or (value != 0 and abs(value) < FLOAT32_TINY)):
            die(f"{where}: config key {prefix} must be 0 or of magnitude in [{FLOAT32_TINY:.3g}, {FLOAT_MAX:g}] "
                f"(float32: larger is inf, smaller rounds to 0 or loses precision), got {value!r}")
    walk("", cfg)


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
        die(f"{flag} {out!r} is not writable: it is a file, not a directory")
    existing = path
    while not os.path.exists(existing):
        parent = os.path.dirname(existing)
        if parent == existing:
            break
        existing = parent
    if not os.path.isdir(existing):
        die(f"{flag} {out!r} is not writable: {existing!r} is not a directory")
    try:  # a directory can be made there (removed at once: nothing is left behind)
        os.rmdir(tempfile.mkdtemp(prefix=".tf-vrre-probe-", dir=existing))
    except OSError as err:
        die(f"{flag} {out!r} is not writable: {err}")


def fresh_directory(out, outputs, overwrite, flag="--out"):
    """Exit 2 if ``out`` already holds any of ``outputs`` (file names) and not ``overwrite``.

    Results of another invocation are never replaced silently; ``--overwrite`` says the user
    means it.
    """
    if overwrite or not os.path.isdir(out):
        return
    found = sorted(name for name in outputs if os.path.exists(os.path.join(out, name)))
    if found:
        die(f"{flag} {out!r} already holds {', '.join(found)} of an earlier run; choose another directory "
            "or pass --overwrite to replace them")


def write_json(path, obj):
    """Writes ``obj`` as JSON to ``path`` atomically (temporary file, fsync, rename)."""
    from tf_vrre.runs import atomic

    atomic.write_json(path, obj, indent=2)
