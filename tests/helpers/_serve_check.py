"""Fresh-process consumer of an exported SavedModel: TensorFlow only, no tf_vrre.

    python _serve_check.py SAVED_MODEL_DIR INPUTS.npz OUTPUTS.npz

Calls every signature on ``images`` (batch of B) and on its first image alone (batch 1), and
writes the outputs as ``<signature>/<output>`` (``.../b1`` for batch 1) plus ``modules``: the
names of the imported top-level packages (the test checks ``tf_vrre`` is not among them).
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf


def main(model_dir, inputs_path, outputs_path):
    loaded = tf.saved_model.load(model_dir)
    with np.load(inputs_path) as z:
        images = z["images"]
    result = {}
    for name, fn in loaded.signatures.items():
        spec = fn.structured_input_signature[1]["images"]
        x = images.astype(spec.dtype.as_numpy_dtype)
        for suffix, batch in (("", x), ("/b1", x[:1])):
            for key, value in fn(images=tf.constant(batch)).items():
                result[f"{name}/{key}{suffix}"] = value.numpy()
    result["modules"] = np.array(sorted({m.split(".")[0] for m in sys.modules}))
    np.savez(outputs_path, **result)


if __name__ == "__main__":
    main(*sys.argv[1:4])
