"""The Bayesian model average of the kept samples on held-out data, kept up to date while sampling.

Each sample's predictive ``p_s(y | x)`` on the validation inputs (``softmax`` of the cold
chain's logits, or its probabilities as they are) is stored with the sample; the BMA is
``p(y | x) = (1/S) sum_s p_s(y | x)`` over the ``S`` kept samples, scored by accuracy
(``argmax``) and NLL (``-mean log p(y_i | x_i)``).  A regression model's outputs
(``output="values"``) are stored as they are and their average is scored by its root mean
squared error against the labels (``bma_rmse``).  The sum is taken in step order over the
stored float32 values, so a resume that rebuilds it from the files gets bit-identical metrics.
Used by :class:`tf_vrre.callbacks.SampleCollector` (``validation_data=``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Any

import keras
import numpy as np

from tf_vrre.runs.samples import softmax

OUTPUTS = ("logits", "probabilities", "values")


def check_validation_data(validation_data: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """``(x, y)`` arrays of the same non-zero length (``None`` passes); ``TypeError`` /
    ``ValueError`` naming ``validation_data`` otherwise."""
    if validation_data is None:
        return None
    if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
        raise TypeError("validation_data must be a pair (x, y) of arrays")
    vx, vy = (np.asarray(v) for v in validation_data)
    if len(vx) != len(vy) or not len(vx):
        raise ValueError(f"validation_data: x and y must have the same non-zero length, got {len(vx)} and {len(vy)}")
    return vx, vy


def predictive(model: keras.Model, x: np.ndarray, output: str, batch_size: int) -> np.ndarray:
    """``model``'s predictive on ``x`` (float64; ``output="logits"``: softmax applied; otherwise the
    model's outputs as they are)."""
    p = np.asarray(model.predict(x, batch_size=batch_size, verbose=0), np.float64)
    return softmax(p) if output == "logits" else p


class RunningBMA:
    """The running average of the samples' predictive probabilities on one validation set.

    Args:
      labels: the validation labels, integer ``[n]`` or one-hot ``[n, C]``; for ``output="values"``
        the regression targets, ``[n]`` or ``[n, d]``.
      output: ``"logits"`` or ``"probabilities"`` (a classifier), or ``"values"`` (a regression).

    Example:
      >>> bma = RunningBMA(np.array([0, 1]))
      >>> bma.add(np.array([[0.9, 0.1], [0.4, 0.6]]))
      >>> bma.add(np.array([[0.7, 0.3], [0.8, 0.2]]))
      >>> {k: round(v, 4) for k, v in bma.metrics().items()}  # averages [0.8, 0.2], [0.6, 0.4]
      {'bma_accuracy': 0.5, 'bma_nll': 0.5697, 'bma_samples': 2.0}
    """

    def __init__(self, labels: np.ndarray, output: str = "logits"):
        y = np.asarray(labels)
        self.regression = output == "values"
        if self.regression:
            self.labels = y.astype(np.float64).reshape(len(y), -1)
        else:
            self.labels = y.argmax(-1) if y.ndim > 1 and y.shape[-1] > 1 else y.reshape(-1).astype(int)
        self.total: np.ndarray | None = None  # float64 [n, C]: sum of the kept samples' predictive
        self.count = 0  # samples in the sum

    def add(self, probabilities: np.ndarray) -> None:
        """Adds one sample's predictive ``[n, C]`` to the average."""
        pred = np.asarray(probabilities, np.float64)
        if self.total is None:
            self.total = np.zeros_like(pred)
        self.total += pred
        self.count += 1

    def recompute(self, directory: str, entries: Iterable[dict]) -> None:
        """The average over the stored predictive of ``entries`` (manifest entries of files in
        ``directory``), added in step order (the same order on resume)."""
        self.total, self.count = None, 0
        for entry in sorted(entries, key=lambda e: e["step"]):
            with np.load(os.path.join(directory, entry["file"])) as z:
                self.add(z["predictive"].astype(np.float64))

    def metrics(self) -> dict[str, float]:
        """``bma_accuracy``, ``bma_nll`` and ``bma_samples`` (NaN, NaN, 0 before the first sample);
        for a regression ``bma_rmse`` and ``bma_samples``."""
        if self.regression:
            if not self.count:
                return {"bma_rmse": math.nan, "bma_samples": 0.0}
            avg = (self.total / self.count).reshape(self.labels.shape)
            return {"bma_rmse": float(np.sqrt(np.mean((avg - self.labels) ** 2))), "bma_samples": float(self.count)}
        if not self.count:
            return {"bma_accuracy": math.nan, "bma_nll": math.nan, "bma_samples": 0.0}
        avg = self.total / self.count
        picked = np.clip(avg[np.arange(len(self.labels)), self.labels], 1e-12, 1.0)
        return {
            "bma_accuracy": float(np.mean(avg.argmax(-1) == self.labels)),
            "bma_nll": float(-np.mean(np.log(picked))),
            "bma_samples": float(self.count),
        }
