"""Fresh-process caller of an exported SavedModel with bad requests: TensorFlow only, no tf_vrre.

    python _serve_bad.py SAVED_MODEL_DIR OUTPUTS.json

Calls every signature with a good batch of 2 and with: the batch axis missing (``rank``), other
sizes (``size``), other channels (``channels``), another dtype (``dtype``), an empty batch
(``empty``) and, for float signatures, a NaN and an Inf value (``nan``, ``inf``).  Writes
``{"<signature>/<case>": "ok <shape of probabilities>" | "<ErrorType>: <message>"}``.  Run in a
subprocess: a request that aborts the process (a C++ check failure) must fail the test, not
kill the test runner.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf


def cases(spec):
    shape = [2 if d is None else d for d in spec.shape]
    dtype = spec.dtype.as_numpy_dtype
    other = list(shape)
    other[1] = shape[1] - 4 if shape[1] > 4 else shape[1] + 1
    result = {
        "ok": np.ones(shape, dtype),
        "rank": np.ones(shape[1:], dtype),
        "size": np.ones(other, dtype),
        "channels": np.ones(shape[:-1] + [shape[-1] + 1 if shape[-1] == 1 else 1], dtype),
        "dtype": np.ones(shape, np.float64 if spec.dtype != tf.float64 else np.float32),
        "empty": np.ones([0] + shape[1:], dtype),
    }
    if spec.dtype.is_floating:
        for name, value in (("nan", np.nan), ("inf", np.inf)):
            x = np.ones(shape, dtype)
            x.reshape(-1)[len(x.reshape(-1)) // 2] = value
            result[name] = x
    return result


def main(model_dir, outputs_path):
    loaded = tf.saved_model.load(model_dir)
    result = {}
    for name, fn in sorted(loaded.signatures.items()):
        ((key, spec),) = fn.structured_input_signature[1].items()
        for case, x in cases(spec).items():
            try:
                out = fn(**{key: tf.constant(x)})
                result[f"{name}/{case}"] = f"ok {list(out['probabilities'].shape)}"
            except Exception as err:  # noqa: BLE001  (recorded: the test checks its type and text)
                result[f"{name}/{case}"] = f"{type(err).__name__}: {getattr(err, 'message', str(err))[:600]}"
    with open(outputs_path, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:3])
