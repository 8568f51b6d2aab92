"""Argument types and helpers shared by every ``tf-vrre`` subcommand.

Nothing here imports TensorFlow: flags are parsed and validated before any heavy import, so a
bad value gives exactly one line on stderr and exit status 2.  Numbers are finite and bounded:
ints below ``2**31`` (TensorFlow's int32 shapes and seeds), floats within float32's range
(values reach float32 variables), tighter where a flag says so.
"""

import argparse
import contextlib
import math
import os
import sys
import tempfile


def die(message):
    """One line on stderr (``tf-vrre: error: ...``) and exit status 2."""
    sys.stderr.write(f"tf-vrre: error: {message}\n")
    raise SystemExit(2)


INT_MAX = 2 ** 31 - 1
FLOAT_MAX = 3.0e38  # below float32's largest finite value (3.4e38)


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
    """Argument type: a finite ``kind`` (int or float) in ``(0, maximum]``."""
    def parse(text):
        value = _number(kind, text, maximum)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value
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
    import json

    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Progress:
    """``keras.utils.Progbar`` on stderr (stdout keeps the results) under a label line;
    ``.callback`` is a Keras callback feeding it."""

    def __init__(self, label, steps):
        import keras  # here, not at the top: this module is imported before TensorFlow

        outer = self

        class CB(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                outer.update(batch + 1)

        self.callback = CB()
        sys.stderr.write(f"{label}\n")
        with contextlib.redirect_stdout(sys.stderr):  # Progbar writes to sys.stdout
            self.bar = keras.utils.Progbar(steps)

    def update(self, done):
        with contextlib.redirect_stdout(sys.stderr):
            self.bar.update(done)
