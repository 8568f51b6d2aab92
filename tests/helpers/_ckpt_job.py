"""A training command for the kill-at-any-instant tests: ``python _ckpt_job.py OUT [POINT:N]``.

Trains a tiny VR-reSGHMC sampler (2 chains, N = 64, batch 16, 4 steps per epoch, 8 epochs) with
every tf_vrre writer: SampleCollector (every 2 steps, validation data, at most 5 samples kept,
so evictions happen), SwapLogger, HyperparameterScheduler, CSVLogger and Checkpoint.  Running
it again after a kill continues from the last committed checkpoint.  At the end it writes
``OUT/final.npz`` (every sampler variable) and prints ``done <step>``.

``POINT:N`` kills the process (SIGKILL) the N-th time this process passes POINT:

- a :mod:`tf_vrre.runs.fault_points` point (``sample.file``, ``sample.manifest``, ``swaps.drained``,
  ``csv.row``, ``checkpoint.data``, ``checkpoint.committed``);
- ``batch``: after a training step, between the collector and the swap logger;
- ``epoch_end``: inside ``on_epoch_end``, between the collector's and the swap logger's;
- ``torn``: after a training step, with half a row appended to ``swaps.csv`` and ``log.csv``
  (a kill in the middle of a write).
"""

import os
import signal
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(__file__))

import keras
import numpy as np
from _small_sampler import make_sampler

import tf_vrre
from tf_vrre.runs import fault_points

EPOCHS = 8


def die():
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


class Counter:
    """Kills the process the ``n``-th time :meth:`hit` sees ``point``."""

    def __init__(self, spec):
        self.point, n = (spec.split(":") + ["1"])[:2] if spec else (None, "0")
        self.n, self.seen = int(n), 0

    def hit(self, point, before_death=None):
        if point == self.point:
            self.seen += 1
            if self.seen == self.n:
                if before_death is not None:
                    before_death()
                die()


class Killer(keras.callbacks.Callback):
    """Sits between the collector and the swap logger in the callback list."""

    def __init__(self, counter, out):
        super().__init__()
        self.counter, self.out = counter, out

    def _tear(self):
        for path in (os.path.join(self.out, "swaps", "swaps.csv"), os.path.join(self.out, "log.csv")):
            if os.path.exists(path):
                with open(path, "a") as f:
                    f.write("12,3,0,0.5")  # no newline: a row cut short

    def on_train_batch_end(self, batch, logs=None):
        self.counter.hit("batch")
        self.counter.hit("torn", self._tear)

    def on_epoch_end(self, epoch, logs=None):
        self.counter.hit("epoch_end")


def main(out, spec=None):
    counter = Counter(spec)
    fault_points.hook = counter.hit
    s, x, y = make_sampler(vr=True, correction=1.0, temperatures=(1.0, 3.0), lr=3e-3)
    callbacks = [
        tf_vrre.HyperparameterScheduler(learning_rates=lambda e: 3e-3 / (1 + 0.1 * e)),
        tf_vrre.SampleCollector(
            os.path.join(out, "samples"), every=2, burn_in_steps=4, validation_data=(x, y), max_samples=5
        ),
        Killer(counter, out),
        tf_vrre.SwapLogger(os.path.join(out, "swaps")),
        tf_vrre.CSVLogger(os.path.join(out, "log.csv")),
        tf_vrre.Checkpoint(os.path.join(out, "checkpoint")),
    ]
    s.fit(s.make_dataset(16), epochs=EPOCHS, verbose=0, callbacks=callbacks)
    np.savez(os.path.join(out, "final.npz"), *[keras.ops.convert_to_numpy(v) for v in s.weights])
    print("done", int(s.state.step.numpy()), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
