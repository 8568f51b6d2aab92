"""Every file tf_vrre writes goes through here: atomic replacement, append and lock files that
never follow a symbolic link (no TensorFlow).

- :func:`write` (and :func:`write_text`, :func:`write_json`, :func:`savez`, :func:`save_figure`):
  the content goes to a new temporary file in the target's directory, created with
  ``tempfile.mkstemp`` (``O_CREAT | O_EXCL``: a fresh name that no planted link can occupy),
  is flushed and ``fsync``-ed, then renamed over the target with ``os.replace``.  A reader
  sees the old file or the new one, never a mix; a kill or an error (a full disk) leaves the
  old file and no temporary one.  A symbolic link at the target is replaced by the file,
  the file it points to is left alone.
- :func:`open_append`: opens a log for appending with ``O_NOFOLLOW``; a symbolic link at the
  name is an error, never written through.
- :func:`open_lock`: opens a lock file with ``O_NOFOLLOW`` (same refusal).
- a log or lock file name that is a directory, a FIFO, a socket or a device is refused
  (:class:`SpecialFileError`), never opened in a way that could block: such names are opened
  with ``O_NONBLOCK`` and their type checked.

Temporary files are named ``.<target name>.<random>.tmp`` (``<random>``: the 8 characters
``tempfile.mkstemp`` draws from ``a-z0-9_``).  Only a kill between a temporary's creation and its
rename leaves one behind: a writer that takes its directory again (a resumed run, under the
directory's lock) removes its own with :func:`remove_temporaries`, by that rule and for the targets
it writes, and nothing else (another file ending in ``.tmp``, a temporary of another target).  An
``OSError`` while writing (``ENOSPC``, ``EACCES``, ...) propagates with the target's path as its
``filename``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Collection
from typing import IO, Any, TextIO

import tf_vrre.runs.fault_points as fault_points
from tf_vrre import errors

__all__ = [
    "write",
    "write_text",
    "write_json",
    "savez",
    "save_figure",
    "open_append",
    "open_lock",
    "open_regular",
    "SymlinkError",
    "SpecialFileError",
    "TMP_SUFFIX",
    "temporary_target",
    "remove_temporaries",
]

TMP_SUFFIX = ".tmp"
_TEMPORARY = re.compile(r"\.(?P<target>.+)\.[a-z0-9_]{8}" + re.escape(TMP_SUFFIX))
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO opened without it waits for its other end; no effect on regular files


class SymlinkError(errors.TfVrreError, OSError):
    """A log or lock file name is a symbolic link (planted or left behind); tf_vrre does not write through it."""

    def __str__(self) -> str:
        return str(self.strerror)


class SpecialFileError(errors.TfVrreError, OSError):
    """A log or lock file name is a directory, FIFO, socket or device; tf_vrre reads and writes
    regular files there only."""

    def __str__(self) -> str:
        return str(self.strerror)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_MODE = 0o666 & ~_umask()  # what open(path, "w") would give a new file


def write(path: str | os.PathLike[str], write_fn: Callable[[IO[Any]], object], text: bool = False) -> str:
    """Atomically replaces ``path`` with what ``write_fn(f)`` writes into a fresh temporary file.

    Args:
      path: the target file (its directory must exist).
      write_fn: called with the open temporary file (binary, or text with ``newline=""``
        when ``text``).
      text: open the temporary file in text mode (UTF-8, no newline translation).

    Raises:
      OSError: writing, syncing or renaming failed (the target is unchanged, the temporary
        file removed).

    Example:
      >>> import os
      >>> os.makedirs("runs/a")
      >>> write("runs/a/notes.txt", lambda f: f.write(b"hello\\n"))
      'runs/a/notes.txt'
      >>> open("runs/a/notes.txt").read(), os.listdir("runs/a")   # no temporary file left behind
      ('hello\\n', ['notes.txt'])
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=TMP_SUFFIX, dir=directory)
    try:
        os.fchmod(fd, _MODE)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") if text else os.fdopen(fd, "wb") as f:
            write_fn(f)
            f.flush()
            fault_points.point("atomic.write")
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(err, OSError) and err.filename is None and err.errno is not None:
            raise OSError(err.errno, err.strerror, path) from None
        raise
    return path


def temporary_target(name: str) -> str | None:
    """The target file name of a temporary file :func:`write` makes (``.<target>.<random>.tmp``), or
    ``None`` for a name of another form.

    Example:
      >>> temporary_target(".swaps.csv.k3j_9x2a.tmp"), temporary_target("notes.tmp"), temporary_target(".a.tmp")
      ('swaps.csv', None, None)
    """
    found = _TEMPORARY.fullmatch(name)
    return None if found is None else found.group("target")


def remove_temporaries(
    directory: str | os.PathLike[str], targets: Collection[str] | Callable[[str], bool]
) -> list[str]:
    """Removes the temporary files :func:`write` left in ``directory`` for the ``targets`` a writer
    writes there (file names, or a predicate on a file name): regular files named
    ``.<target>.<random>.tmp``, left by a process killed between creating and renaming one.  Another
    file ending in ``.tmp``, a temporary of another target, a link or a directory is left alone.
    Call it holding the directory's lock (no other writer is then between creation and rename).

    Returns:
      the names removed, sorted.

    Example:
      >>> os.makedirs("runs/b")
      >>> for name in (".log.csv.a1b2c3d4.tmp", ".other.json.a1b2c3d4.tmp", "draft.tmp"):
      ...     open(os.path.join("runs/b", name), "w").close()
      >>> remove_temporaries("runs/b", {"log.csv"}), sorted(os.listdir("runs/b"))
      (['.log.csv.a1b2c3d4.tmp'], ['.other.json.a1b2c3d4.tmp', 'draft.tmp'])
    """
    owns = targets if callable(targets) else set(targets).__contains__
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    removed = []
    for name in sorted(names):
        target = temporary_target(name)
        if target is None or not owns(target):
            continue
        path = os.path.join(directory, name)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISREG(os.lstat(path).st_mode):
                os.unlink(path)
                removed.append(name)
    return removed


def write_text(path: str | os.PathLike[str], content: str) -> str:
    """Atomically replaces ``path`` with the string ``content`` (UTF-8)."""
    return write(path, lambda f: f.write(content), text=True)


def write_json(
    path: str | os.PathLike[str], obj: Any, indent: int | None = 1, newline: bool = False, **kwargs: Any
) -> str:
    """Atomically replaces ``path`` with ``obj`` as JSON (``kwargs`` go to ``json.dumps``)."""
    return write_text(path, json.dumps(obj, indent=indent, **kwargs) + ("\n" if newline else ""))


def savez(path: str | os.PathLike[str], **arrays: Any) -> str:
    """Atomically replaces ``path`` with ``np.savez`` of ``arrays``."""
    import numpy as np

    return write(path, lambda f: np.savez(f, **arrays))


def save_figure(fig: Any, path: str | os.PathLike[str], **kwargs: Any) -> str:
    """Atomically replaces ``path`` with a PNG of the matplotlib figure ``fig``."""
    return write(path, lambda f: fig.savefig(f, format="png", **kwargs))


def _kind(mode: int) -> str | None:
    """What a file of ``mode`` is, if not a regular file (``None`` for a regular file)."""
    for test, name in (
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "FIFO (named pipe)"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "special file"


def _special(path: str, what: str, mode: int) -> SpecialFileError:
    return SpecialFileError(
        errno.EINVAL,
        f"{what} {path} is a {_kind(mode)}, not a regular file; tf_vrre "
        f"{'locks' if what == 'lock file' else 'writes'} regular files only: "
        "remove it and run again",
        path,
    )


def open_regular(path: str | os.PathLike[str], flags: int, what: str, mode: int | None = None) -> int:
    """``os.open`` of ``path`` with ``flags`` that never follows a symbolic link and never blocks
    on a FIFO: the name must be a regular file (or absent, with ``O_CREAT``).

    Args:
      path: the file.
      flags: ``os.O_*`` flags (``O_NOFOLLOW``, ``O_NONBLOCK`` and ``O_CLOEXEC`` are added).
      what: the file's role for messages (``"lock file"``, ``"log file"``).
      mode: permissions of a created file (default: what ``open(path, "w")`` gives).

    Raises:
      SymlinkError: ``path`` is a symbolic link.
      SpecialFileError: ``path`` is a directory, FIFO, socket or device.
    """
    path = os.fspath(path)
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | getattr(os, "O_CLOEXEC", 0), _MODE if mode is None else mode)
    except OSError as err:
        if os.path.islink(path):
            raise SymlinkError(
                err.errno, f"{what} {path} is a symbolic link; tf_vrre does not write through links (remove it)", path
            ) from None
        try:
            st = os.lstat(path)
        except OSError:
            raise err from None
        if _kind(st.st_mode) is not None:
            raise _special(path, what, st.st_mode) from None
        raise
    st = os.fstat(fd)
    if _kind(st.st_mode) is not None:
        os.close(fd)
        raise _special(path, what, st.st_mode)
    return fd


def open_append(path: str | os.PathLike[str], newline: str = "") -> TextIO:
    """``path`` opened for appending text (created if absent) without following a symbolic link.

    Raises:
      SymlinkError: ``path`` is a symbolic link.
    """
    fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, "log file")
    return os.fdopen(fd, "a", encoding="utf-8", newline=newline)


def open_lock(path: str | os.PathLike[str]) -> TextIO:
    """The lock file ``path`` opened read-write (created if absent) without following a link.

    Raises:
      SymlinkError: ``path`` is a symbolic link.
    """
    fd = open_regular(path, os.O_RDWR | os.O_CREAT, "lock file")
    return os.fdopen(fd, "r+", encoding="utf-8")
