"""Warnings that point at the user's code, not into the library.

A callback warns from deep inside ``keras.Model.fit`` (``fit`` -> Keras' training loop -> its
callback list -> the callback), so a fixed ``stacklevel`` points into Keras or tf_vrre.
:func:`warn` walks out of those frames instead: the warning carries the file and line of the
first caller outside tf_vrre, Keras and TensorFlow (the user's ``fit`` call), which is also the
module Python's warning filters match.  No TensorFlow or Keras import here (any layer may use it).

Example:
  >>> import warnings
  >>> with warnings.catch_warnings(record=True) as caught:
  ...     warnings.simplefilter("always")
  ...     warn("something to know")
  >>> caught[0].filename == "<doctest tf_vrre._user_warning[1]>"   # this example's frame, not this module's
  True
"""

import os
import sys
import types
import warnings

LIBRARIES = ("tf_vrre", "keras", "tensorflow", "tf_keras")
"""Packages whose frames a warning walks out of (imported ones only)."""


def _library_roots(names: tuple[str, ...] = LIBRARIES) -> tuple[str, ...]:
    roots = []
    for name in names:
        module = sys.modules.get(name)
        for path in getattr(module, "__path__", None) or []:
            roots.append(os.path.join(os.path.realpath(path), ""))
    return tuple(roots)


def _frozen(frame: types.FrameType) -> bool:
    """Python's own bootstrap frames (``<frozen runpy>`` of ``python -m``, importlib)."""
    return frame.f_code.co_filename.startswith("<frozen ")


def stacklevel(skip: int = 1) -> int:
    """The ``stacklevel`` that points ``warnings.warn`` at the first frame outside
    :data:`LIBRARIES`, for a ``warnings.warn`` called from the function ``skip`` frames above
    this one (``1``: this function's caller).  When there is none but Python's bootstrap (the
    library's own command line, ``python -m tf_vrre.cli``), the caller of the outermost Keras or
    TensorFlow frame (the command's ``fit`` call); ``2`` (that function's caller) without one."""
    roots = _library_roots()
    frameworks = _library_roots(LIBRARIES[1:])  # Keras and TensorFlow
    frame: types.FrameType | None = sys._getframe(skip)  # the frame that calls warnings.warn: stacklevel 1
    level, outermost_framework = 1, None
    while frame is not None and (_frozen(frame) or os.path.realpath(frame.f_code.co_filename).startswith(roots)):
        if os.path.realpath(frame.f_code.co_filename).startswith(frameworks):
            outermost_framework = level
        frame = frame.f_back
        level += 1
    if frame is not None:
        return level
    return outermost_framework + 1 if outermost_framework is not None else 2


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the first caller outside tf_vrre, Keras
    and TensorFlow (the user's line, e.g. the ``fit`` call whose callback warns).

    Args:
      message: the warning's text.
      category: its class (``UserWarning``).
    """
    warnings.warn(message, category, stacklevel=stacklevel(skip=1))
