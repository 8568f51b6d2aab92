"""Figures without pyplot, for the plotting helpers of tf_vrre.

A helper builds a ``matplotlib.figure.Figure`` directly: it never selects a backend
(``matplotlib.use``) and never registers the figure with pyplot, so a notebook's inline
figures stay as they are and a headless run needs no backend at all (a ``Figure`` renders
PNGs with matplotlib's Agg canvas by itself).  Every helper returns its ``Figure`` and writes
it when given a path.
"""

from tf_vrre.runs import atomic


def new(**kwargs):
    """A ``matplotlib.figure.Figure(**kwargs)`` (matplotlib imported on first use: the
    TensorFlow-free ``tf-vrre diagnose`` path loads it only when it draws)."""
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def save(fig, path, **savefig_kwargs):
    """Writes ``fig`` as a PNG to ``path`` (through a temporary file renamed into place, so a
    reader never sees half a file) unless ``path`` is ``None``; returns ``fig``."""
    if path is None:
        return fig
    atomic.save_figure(fig, path, **savefig_kwargs)  # no symbolic link at path is written through
    return fig
