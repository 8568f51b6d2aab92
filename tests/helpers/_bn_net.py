"""The small BatchNorm classifier and data of the distributed subprocess checks
(``_distributed_check.py``, ``_multiworker_job.py``): synchronized BN, so replicas agree."""

import keras
import numpy as np


def build():
    """Dense(8) - BatchNormalization(synchronized) - tanh - Dense(3): logits of 3 classes."""
    inp = keras.Input((4,))
    h = keras.layers.Dense(8)(inp)
    h = keras.layers.BatchNormalization(synchronized=True)(h)
    h = keras.layers.Activation("tanh")(h)
    return keras.Model(inp, keras.layers.Dense(3)(h))


def data(n):
    """``n`` standard-normal 4-d inputs and labels in {0, 1, 2} from two thresholds (seed 0)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int64") + (x[:, 1] > 0.5).astype("int64")
    return x, y
