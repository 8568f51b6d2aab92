"""A training command for the kill-and-resume test: ``python _resume_job.py OUT [sleep]``.

Running it again after a kill continues from the last epoch-end checkpoint."""

import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(__file__))

import keras  # noqa: E402

from test_callbacks import make_sampler  # noqa: E402
from tf_vrre.callbacks import SampleCollector, SwapLogger  # noqa: E402


class Slow(keras.callbacks.Callback):
    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds

    def on_train_batch_end(self, batch, logs=None):
        time.sleep(self.seconds)


def main(out, sleep=0.0):
    s, x, y = make_sampler(vr=True, correction=1.0, temperatures=(1.0, 3.0), lr=3e-3)
    callbacks = [SampleCollector(os.path.join(out, "samples"), every=2, burn_in_steps=4, validation_data=(x, y)),
                 SwapLogger(os.path.join(out, "swaps")), Slow(sleep),
                 keras.callbacks.BackupAndRestore(os.path.join(out, "backup"), double_checkpoint=True)]
    s.fit(s.make_dataset(16), epochs=12, verbose=0, callbacks=callbacks)
    s.save_weights(os.path.join(out, "final.weights.h5"))
    print("done", int(s.step_counter.numpy()), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 0.0)
