"""Warnings that point at the user's line: the first caller outside tf_vrre, Keras and TensorFlow.

A warning about a user's call is reported at that call.  When the library is reached through
Keras (``keras.saving.load_model`` calling ``from_config``, ``fit`` calling a callback), a fixed
``stacklevel`` would name a line inside Keras; :func:`warn` walks the stack instead.  No
TensorFlow is imported here: the packages are found among the modules already imported.

Example:
  >>> import warnings
  >>> with warnings.catch_warnings(record=True) as caught:
  ...     warnings.simplefilter("always")
  ...     warn("a warning about this call")       # reported here, not in tf_vrre/_caller.py
  >>> caught[0].filename.startswith("<doctest")
  True
"""

from __future__ import annotations

import os
import sys
import warnings
from types import FrameType

__all__ = ["warn", "user_stacklevel"]

LIBRARIES = ("keras", "tensorflow")
"""Packages whose frames stand between the user's call and tf_vrre (besides tf_vrre itself)."""


def _library_dirs() -> tuple[str, ...]:
    dirs = [os.path.dirname(os.path.abspath(__file__))]
    for name in LIBRARIES:
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            dirs.append(os.path.dirname(os.path.abspath(path)))
    return tuple(d + os.sep for d in dirs)


def _in_library(frame: FrameType, dirs: tuple[str, ...]) -> bool:
    return os.path.abspath(frame.f_code.co_filename).startswith(dirs)


def user_stacklevel(frame: FrameType | None = None) -> int:
    """The ``stacklevel`` that makes ``warnings.warn`` (called in the function that called this one,
    or in ``frame``'s function) name the first frame outside tf_vrre, Keras and TensorFlow; the
    outermost frame when every frame is the library's (the ``tf-vrre`` command)."""
    frame = frame or sys._getframe(1)
    dirs, level = _library_dirs(), 1
    while frame.f_back is not None and _in_library(frame, dirs):
        frame, level = frame.f_back, level + 1
    return level


def warn(message: str | Warning, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` reported at the user's line (:func:`user_stacklevel`)."""
    caller = sys._getframe(1)
    warnings.warn(message, category, stacklevel=user_stacklevel(caller) + 1)
