"""Warnings point at the user's line (tf_vrre._user_warning): from a user's frame through Keras into
the library; and from the library's own command line (``python -m``: only Python's bootstrap
frames outside the libraries), at the command's call into Keras, not at ``<frozen runpy>``."""

import _thread
import os
import sys
import threading
import warnings

import keras

import tf_vrre
import tf_vrre._user_warning as _user_warning

KERAS = os.path.join(os.path.dirname(os.path.realpath(keras.__file__)), "fake_training_loop.py")
LIBRARY = os.path.join(os.path.dirname(os.path.realpath(tf_vrre.__file__)), "cli", "fake_command.py")


def _chain(outer_file):
    """A call chain ``outer_file`` -> this library (a command) -> Keras (``fit``) -> the library
    (a callback that warns), run as the outermost frame of a bare thread (nothing above it, as
    under ``python -m`` nothing but Python's bootstrap is); returns the recorded warning."""
    callback = compile("def callback():\n    warn('to know')\n", LIBRARY, "exec")
    fit = compile("def fit():\n    callback()\n", KERAS, "exec")
    command = compile("def command():\n    x = 1\n    fit()\n", LIBRARY, "exec")
    outer = compile("def outer():\n    try:\n        command()\n    finally:\n        done.set()\n", outer_file, "exec")
    scope = {"warn": _user_warning.warn, "done": threading.Event()}
    for code in (callback, fit, command, outer):
        exec(code, scope)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _thread.start_new_thread(scope["outer"], ())
        assert scope["done"].wait(30)
    return caught[0]


def test_a_warning_points_at_the_users_frame():
    caught = _chain("user_script.py")
    assert (caught.filename, caught.lineno) == ("user_script.py", 3)


def test_under_python_m_a_warning_points_at_the_commands_fit_call():
    caught = _chain("<frozen runpy>")
    assert (caught.filename, caught.lineno) == (LIBRARY, 3)  # command(): the line that calls fit


def test_the_warnings_of_a_fit_point_at_the_fit_call(tmp_path):
    """The library's warnings during ``fit`` (the sampler's input check, and callbacks warning from
    inside Keras' callback list) name the line of the user's ``fit`` call."""
    import numpy as np

    class Late(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                logs["late"] = 1.0  # a key CSVLogger's columns do not have

    class Unregistered(keras.layers.Layer):  # the cold model's JSON does not load back
        def call(self, x):
            return x

    def net():
        inp = keras.Input((4,))
        return keras.Model(inp, keras.layers.Dense(2)(Unregistered()(inp)))

    x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    s = tf_vrre.ReplicaExchangeSampler(net, data_size=64, num_chains=1, learning_rates=1e-3, seed=0)
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    callbacks = [Late(), tf_vrre.CSVLogger(str(tmp_path / "log.csv")), tf_vrre.SampleCollector(str(tmp_path / "s"))]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        s.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=callbacks)
    where = {str(w.message).split(":")[0]: (w.filename, w.lineno) for w in caught}
    for source in ("fit", "CSVLogger", "SampleCollector"):
        assert where.get(source) == (__file__, line), (source, where)
