"""The command line of the benchmarks: every flag and input file checked before TensorFlow starts.

A script builds its parser with :func:`parser`, checks its flags with the argument types below
(those of ``tf-vrre``, :mod:`tf_vrre.cli._args`, plus lists, names and paths) and what needs more
than one flag or the file system with :func:`die`, and imports TensorFlow only after that, in its
``main``.  A bad value ends the script before any work with exit status 2 and one line on stderr,
``<script>: error: <flag>: <message>`` (argparse's own errors in the same shape).  A damaged input
file (a results file, a reference, an ``.npz`` of data) is refused the same way, in one line naming
the file and what is wrong with it (:func:`read_json`, :func:`read_npz`).

This module imports no TensorFlow (``tests/test_benchmark_inputs.py`` checks that every script's
refusals happen before it is imported).
"""

import argparse
import importlib.util
import json
import math
import os
import re
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np

from tf_vrre.cli._args import (  # noqa: F401  (argument types of the scripts, the same as tf-vrre's)
    INT_MAX,
    argparse_message,
    bounded,
    fraction,
    nonnegative_int,
    positive,
    positive_float,
)

PROG = None
"""The script being run (its file name, set by :func:`parser`): the first field of every error."""

EXTRA = 'pip install -e ".[benchmarks]"'
"""What installs the benchmarks' own dependencies (scikit-learn, SciPy)."""


def die(message):
    """One line on stderr and exit status 2: ``<script>: error: <message>``, where ``message``
    starts with the flag or file it concerns."""
    sys.stderr.write(f"{PROG or Path(sys.argv[0]).name}: error: {message}\n")
    sys.stderr.flush()
    raise SystemExit(2)


class Parser(argparse.ArgumentParser):
    """argparse with one line on stderr for a bad flag (no usage block) and exit status 2."""

    def error(self, message):
        extra = re.match(r"^unrecognized arguments: (\S+)(.*)$", message)
        if extra:  # argparse names every word left over; the first one is the flag to fix
            die(f"{extra[1]}: unrecognized argument" + (f" (then {extra[2].strip()})" if extra[2].strip() else ""))
        die(argparse_message(message))


def parser(script, description, **kwargs):
    """The argument parser of the benchmark ``script`` (its ``__file__``)."""
    global PROG
    PROG = Path(script).name
    return Parser(prog=PROG, description=description, **kwargs)


def at_least(minimum, maximum=None):
    """Argument type: an int in ``[minimum, maximum]`` (default ``2**31 - 1``)."""
    maximum = INT_MAX if maximum is None else maximum

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an int, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {text}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}, got {text}")
        return value

    return parse


def distinct_list(one, what="values"):
    """Argument type: a comma-separated list of distinct values, each parsed by ``one``, as a tuple."""

    def parse(text):
        items = [t.strip() for t in text.split(",")]
        if not text.strip() or any(not t for t in items):
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {what}, got {text!r}")
        values = []
        for item in items:
            try:
                values.append(one(item))
            except argparse.ArgumentTypeError as err:
                raise argparse.ArgumentTypeError(f"{item!r}: {err}") from None
        if len(set(values)) != len(values):
            twice = sorted({items[i] for i, v in enumerate(values) if values.count(v) > 1})
            raise argparse.ArgumentTypeError(f"must be distinct {what}, got {', '.join(twice)} more than once")
        return tuple(values)

    return parse


def int_list(minimum=1, maximum=None, what="integers"):
    """Argument type: comma-separated distinct ints in ``[minimum, maximum]`` (seeds: ``minimum=0``)."""
    return distinct_list(at_least(minimum, maximum), what)


def float_list(one=None, what="numbers"):
    """Argument type: comma-separated distinct floats, each parsed by ``one`` (default positive and
    finite in float32)."""
    return distinct_list(one or positive_float(), what)


def names(known, what="names"):
    """Argument type: comma-separated distinct names from ``known``, as a tuple."""
    known = tuple(known)

    def one(text):
        if text not in known:
            raise argparse.ArgumentTypeError(f"unknown; choose from {','.join(known)}")
        return text

    return distinct_list(one, what)


def _nearest_existing(path):
    existing = os.path.abspath(path)
    while not os.path.lexists(existing):
        parent = os.path.dirname(existing)
        if parent == existing:
            break
        existing = parent
    return existing


def _creatable(path, text):
    """Reason why ``path`` cannot be created below its nearest existing ancestor, or None."""
    existing = _nearest_existing(os.path.dirname(os.path.abspath(path)))
    if not os.path.isdir(existing):
        return f"{text!r} cannot be created: {existing!r} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{text!r} cannot be created: {existing!r} is not writable"
    return None


def output_file(text):
    """Argument type: a file the script writes (replaced atomically): not a directory, in a
    directory that exists or can be created.  Nothing is created here."""
    if not text:
        raise argparse.ArgumentTypeError("expected a file name, got ''")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a directory; name a file")
    reason = _creatable(text, text)
    if reason:
        raise argparse.ArgumentTypeError(reason)
    return text


def output_directory(text):
    """Argument type: a directory the script writes into: an existing writable directory, or a
    new one that can be created (it is created when the first file is written)."""
    if not text:
        raise argparse.ArgumentTypeError("expected a directory, got ''")
    if os.path.lexists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a directory")
    if os.path.isdir(text):
        if not os.access(text, os.W_OK | os.X_OK):
            raise argparse.ArgumentTypeError(f"{text!r} is not writable")
        return text
    reason = _creatable(text, text)
    if reason:
        raise argparse.ArgumentTypeError(reason)
    return text


def input_file(text):
    """Argument type: an existing regular file."""
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text!r}: no such file")
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a regular file")
    return text


def input_directory(text):
    """Argument type: an existing directory."""
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r}: no such directory")
    return text


def requires(module, package, where, why):
    """Exit 2 unless ``module`` can be imported (checked without importing it): one line naming the
    package and the extra that installs it (``where``: the subcommand or flag that needs it)."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        die(f"{where}: {package} is not installed ({why}); {EXTRA} installs it")


def non_finite(obj, where=""):
    """The key path (``tables.main.rows[0][3]``) and value of the first NaN or infinity in the
    parsed JSON ``obj``, or ``None``."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return where or "the value", obj
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        found = non_finite(value, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else key)
        if found:
            return found
    return None


class FileError(ValueError):
    """An input file that cannot be used: its message is one line naming the file and what is wrong."""


def load_json(path, keys=(), name=None):
    """The JSON object in ``path``; :class:`FileError` (its message starts with ``name``, default
    ``path``) if it cannot be read, is not an object, lacks one of ``keys`` or holds a NaN or an
    infinity."""
    path, name = Path(path), name or str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileError(f"{name}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise FileError(f"{name}: cannot be read: {getattr(err, 'strerror', None) or err}") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise FileError(
            f"{name}: not valid JSON ({err.msg} at line {err.lineno}, column {err.colno}; truncated or edited?)"
        ) from None
    if not isinstance(obj, dict):
        raise FileError(f"{name}: expected a JSON object, found {type(obj).__name__}")
    missing = [k for k in keys if k not in obj]
    if missing:
        raise FileError(f"{name}: no {', '.join(repr(k) for k in missing)} key")
    bad = non_finite(obj)
    if bad:
        raise FileError(f"{name}: {bad[0]} is {bad[1]}; only finite numbers are accepted")
    return obj


def read_json(path, what, keys=(), hint=""):
    """:func:`load_json`, exit 2 with one line (``<what>: <file>: <problem><hint>``) if it fails."""
    try:
        return load_json(path, keys)
    except FileError as err:
        die(f"{what}: {err}{hint}")


def read_npz(path, keys, what, hint=""):
    """The arrays ``keys`` of the ``.npz`` file ``path`` (loaded); exit 2 with one line naming the
    file if it is missing, truncated or not an ``.npz``, or lacks one of ``keys``."""
    try:
        with open(path, "rb") as f:
            z = np.load(f, allow_pickle=False)
            if not isinstance(z, np.lib.npyio.NpzFile):
                die(f"{what}: {path}: not an .npz file (a single array){hint}")
            with z:
                missing = [k for k in keys if k not in z.files]
                if missing:
                    die(
                        f"{what}: {path}: no array {', '.join(repr(k) for k in missing)} "
                        f"(it has {', '.join(z.files) or 'none'}){hint}"
                    )
                return {k: z[k] for k in keys}
    except FileNotFoundError:
        die(f"{what}: {path}: no such file{hint}")
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as err:
        reason = getattr(err, "strerror", None) or str(err) or type(err).__name__
        die(f"{what}: {path}: not a readable .npz file ({reason}; truncated?){hint}")
