"""Argument types and helpers shared by every ``tf-vrre`` subcommand.

Nothing here imports TensorFlow: flags are parsed and validated before any heavy import, so a
bad value gives exactly one line on stderr and exit status 2.
"""

import argparse
import math
import os
import sys
import time


def die(message):
    """One line on stderr (``tf-vrre: error: ...``) and exit status 2."""
    sys.stderr.write(f"tf-vrre: error: {message}\n")
    raise SystemExit(2)


def _number(kind, text):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a{'n' if kind is int else ''} {kind.__name__}, "
                                         f"got {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def finite(text):
    """Argument type: any finite float."""
    return _number(float, text)


def positive(kind):
    """Argument type: a finite ``kind`` (int or float) > 0."""
    def parse(text):
        value = _number(kind, text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value
    return parse


def nonnegative_int(text):
    """Argument type: an int >= 0."""
    value = _number(int, text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def positive_list(kind):
    """Argument type: a comma-separated list of finite ``kind`` > 0, as a tuple."""
    one = positive(kind)

    def parse(text):
        items = [t for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
        return tuple(one(t.strip()) for t in items)
    return parse


def writable(out, flag="--out"):
    """Creates ``out`` if needed and checks that files can be written there (else exit 2)."""
    try:
        os.makedirs(out, exist_ok=True)
        probe = os.path.join(out, ".write-test")
        open(probe, "w").close()
        os.remove(probe)
    except OSError as err:
        die(f"{flag} {out!r} is not writable: {err}")


class Progress:
    """A one-line text progress bar on stderr; ``.callback`` is a Keras callback feeding it."""

    def __init__(self, label, steps):
        import keras

        outer = self

        class CB(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                outer.update(batch + 1)

        self.callback = CB()
        self.label, self.steps, self.last = label, steps, -1
        self.start = time.perf_counter()

    def update(self, done):
        pct = int(100 * done / self.steps)
        if pct // 5 != self.last // 5:
            self.last = pct
            bar = "#" * (pct // 5) + "." * (20 - pct // 5)
            sys.stderr.write(f"\r  {self.label:<22} [{bar}] {pct:3d}%  {time.perf_counter() - self.start:6.1f}s")
            if pct >= 100:
                sys.stderr.write("\n")
            sys.stderr.flush()
