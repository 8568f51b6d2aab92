"""Warnings point at the user's line (tf_vrre._user_warning): from a user's frame through Keras into
the library; and from the library's own command line (``python -m``: only Python's bootstrap
frames outside the libraries), at the command's call into Keras, not at ``<frozen runpy>``."""

import _thread
import os
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
