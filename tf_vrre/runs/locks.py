"""The one lock of tf_vrre's output directories: an ``flock`` on a ``.lock`` file (no TensorFlow).

Two kinds of holders use it:

- a **run** (``RUN/.lock``): ``tf-vrre train`` and ``tf-vrre repair`` hold it exclusively while
  they write the run (:func:`lock_run`); ``tf-vrre evaluate``, ``diagnose`` and ``export`` hold it
  shared while they read it (:func:`share_run`), so that no writer starts meanwhile;
- a **callback's directory** (``samples/.lock``, ``swaps/.lock``, ``backup/.lock``, ``log.csv.lock``):
  :func:`tf_vrre.runs.ownership.claim` holds it exclusively for the fit that writes there.

What a holder can rely on:

- a second writer is refused at once (``LOCK_NB``), naming the holder's pid, or that readers hold it;
- the lock file is opened with ``O_NOFOLLOW``: a symbolic link planted at its name is refused,
  never written through; a directory, FIFO or other special file there is refused too
  (:class:`tf_vrre.runs.atomic.SpecialFileError`, naming it), without blocking;
- only an exclusive holder writes the file: its pid, when it starts writing the directory
  (:meth:`Lock.mark`; a command that is refused, before or after taking the lock, changes
  nothing); :meth:`Lock.release` empties it again, so a finished run keeps no stale pid.  The file itself stays: it is the lock, and a
  reader must find it without creating files in a run it only reads.  The OS releases the lock of
  a process that dies (its pid then stays in the file; the lock is free all the same);
- identity: a :class:`Lock` remembers the device and inode of its file; :meth:`Lock.owned` says
  whether the name still points at it.  A lock file deleted or replaced by hand lets another
  process lock a new file of that name: from then on the first holder no longer owns the
  directory and must not clean it up (the holders here check before removing anything).

Example:
  >>> lock = lock_run("runs/a")                 # exclusive: this process writes runs/a
  >>> open("runs/a/.lock").read() == str(os.getpid()), lock.owned()
  (True, True)
  >>> unlock_run("runs/a")
  >>> open("runs/a/.lock").read()               # released: no pid left behind
  ''
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from typing import IO, Literal, overload

import tf_vrre.runs.atomic as atomic
import tf_vrre.runs.run_json as run_json
from tf_vrre import errors

try:
    import fcntl
except ImportError:  # no fcntl (Windows): the in-process checks only
    fcntl = None  # type: ignore[assignment]  # None: this platform has no fcntl

LOCK = run_json.LOCK

__all__ = [
    "LOCK",
    "Lock",
    "Busy",
    "RunLockedError",
    "acquire",
    "check_free",
    "lock_run",
    "check_run_free",
    "share_run",
    "reading",
    "unlock_run",
    "make_run_directory",
    "give_back_run",
    "holds_run_lock",
    "run_lock",
    "busy_message",
]

_RETRIES = 5  # a lock file replaced between its open and its flock is opened again


class Busy(errors.TfVrreError, OSError):
    """Another process holds the lock: ``pid`` (text, ``None`` if unknown) of an exclusive holder,
    or ``readers`` when only shared holders (readers) have it."""

    def __init__(self, path: str, pid: str | None, readers: bool) -> None:
        super().__init__(errno.EWOULDBLOCK, "readers hold the lock" if readers else f"held by pid {pid or '?'}", path)
        self.pid, self.readers = pid, readers


class RunLockedError(run_json.RunDirError):
    """Another process writes (or reads) the run directory, or this process lost its lock."""


class Lock:
    """A held ``flock`` on a lock file (made by :func:`acquire`).

    Attributes:
      path: the lock file.
      shared: a reader's (shared) lock; else exclusive.
      created: this lock created the file.
    """

    def __init__(self, path: str, file: IO[str], shared: bool, created: bool) -> None:
        self.path, self._file, self.shared, self.created = path, file, shared, created
        st = os.fstat(file.fileno())
        self._identity = (st.st_dev, st.st_ino)
        self._marked = False

    @property
    def marked(self) -> bool:
        """Whether this lock wrote its pid (:meth:`mark`)."""
        return self._marked

    @property
    def closed(self) -> bool:
        """Whether the lock was released."""
        return self._file.closed

    def owned(self) -> bool:
        """Whether this lock is held and ``path`` still names its file (not deleted or replaced)."""
        if self.closed:
            return False
        try:
            st = os.lstat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._identity and os.fstat(self._file.fileno()).st_nlink > 0

    def mark(self) -> None:
        """Writes this process's pid into the file (exclusive locks: what a refused writer reads)."""
        if self.shared:
            raise ValueError("a shared lock does not write its lock file")
        f = self._file
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        self._marked = True

    def release(self, remove: bool = False) -> None:
        """Empties the pid written by :meth:`mark` and drops the lock (no-op if released).

        Args:
          remove: also delete the lock file, if this lock created it and still owns it (a
            directory made for a command that then wrote nothing is given back as it was).
        """
        if self.closed:
            return
        owned = self.owned()
        try:
            if remove and self.created and owned:
                os.unlink(self.path)  # while still locked: a waiting process sees the name gone and retries
            elif self._marked and owned:
                self._file.seek(0)
                self._file.truncate()
                self._file.flush()
        finally:
            self._file.close()  # closing drops the flock


def _holder(f: IO[str], path: str) -> Busy:
    """Why the exclusive lock of ``path`` (open as ``f``) cannot be taken: a writer (its pid) or
    readers only (a shared lock can be had)."""
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return Busy(path, _read_pid(f), False)
    fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    return Busy(path, None, True)


def _open(path: str, shared: bool) -> tuple[IO[str] | None, bool]:
    """``(file, created)``: the lock file opened without following a link; ``(None, False)`` for a
    shared lock on a missing file (readers never create it)."""
    if shared:
        try:
            fd = atomic.open_regular(path, os.O_RDONLY, "lock file")
        except FileNotFoundError:
            return None, False
        return os.fdopen(fd, "r", encoding="utf-8"), False
    created = not os.path.lexists(path)
    return atomic.open_lock(path), created


@overload
def acquire(path: str | os.PathLike, shared: Literal[False] = False, mark: bool = True) -> Lock: ...
@overload
def acquire(path: str | os.PathLike, shared: bool, mark: bool = True) -> Lock | None: ...
def acquire(path: str | os.PathLike, shared: bool = False, mark: bool = True) -> Lock | None:
    """Takes the lock of lock file ``path`` without waiting.

    Exclusive (default): the file is created if absent, locked, and (``mark``) this process's pid
    written into it (:meth:`Lock.mark`).  Shared: an existing file is locked for reading and left
    unchanged; returns ``None`` if there is no lock file (nothing to lock: nobody wrote there).

    Raises:
      Busy: another process holds it (exclusive: any holder; shared: a writer).
      SymlinkError: ``path`` is a symbolic link.
      SpecialFileError: ``path`` is a directory, FIFO or other special file.
    """
    path = os.fspath(path)
    for _ in range(_RETRIES):
        f, created = _open(path, shared)
        if f is None:
            return None
        if fcntl is not None:
            try:
                fcntl.flock(f.fileno(), (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            except OSError:
                busy = Busy(path, _read_pid(f), False) if shared else _holder(f, path)
                f.close()
                raise busy from None
        lock = Lock(path, f, shared, created)
        if lock.owned():  # the name still points at the file locked (not removed since it was opened)
            if mark and not shared:
                lock.mark()
            return lock
        f.close()
    raise Busy(path, None, False)


def _read_pid(f: IO[str]) -> str | None:
    """The pid written in lock file ``f``, if it names a live process (a killed holder's stale pid,
    or text that is no pid, is not reported)."""
    try:
        f.seek(0)
        text = f.read(64).strip()
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not text.isdigit() or len(text) > 10:
        return None
    try:
        os.kill(int(text), 0)
    except ProcessLookupError:
        return None
    except (PermissionError, OverflowError, ValueError):
        pass  # alive, another user's
    return text


# ---- the run lock: RUN/.lock ------------------------------------------------------------------
_runs: dict[str, Lock] = {}  # realpath of a run directory -> this process's exclusive lock of it


def _key(run_dir: str | os.PathLike) -> str:
    return os.path.realpath(os.fspath(run_dir))


def run_lock(run_dir: str | os.PathLike) -> Lock | None:
    """This process's exclusive lock of ``run_dir`` (``None`` if it holds none)."""
    return _runs.get(_key(run_dir))


def holds_run_lock(run_dir: str | os.PathLike) -> bool:
    """Whether this process holds ``run_dir``'s exclusive lock (:func:`lock_run`)."""
    return _key(run_dir) in _runs


def lock_run(run_dir: str | os.PathLike, mark: bool = True) -> Lock:
    """Makes this process the one writer of ``run_dir`` (created if absent) until
    :func:`unlock_run` or the end of the process: an exclusive lock of ``RUN/.lock`` (see the
    module docstring).  A second call returns the same :class:`Lock` after checking it still owns
    the directory.  ``mark``: write this process's pid into the lock file now (``False``: a command
    that still checks, and writes its pid by calling this again when it starts writing).

    Raises:
      RunLockedError: another process writes or reads ``run_dir`` (naming it and the writer's
        pid), or the lock file this process locked was deleted or replaced meanwhile.
      SymlinkError: ``RUN/.lock`` is a symbolic link.
    """
    name = os.fspath(run_dir)
    held = _runs.get(_key(name))
    if held is not None:
        if not held.owned():
            raise RunLockedError(
                f"{name!r}: its lock file {LOCK} was deleted or replaced while this process held "
                "it; another process may now write the run, so this one stops here"
            )
        if mark and not held.marked:
            held.mark()
        return held
    os.makedirs(name, exist_ok=True)
    try:
        lock = acquire(os.path.join(name, LOCK), mark=mark)
    except Busy as busy:
        raise RunLockedError(busy_message(name, busy)) from None
    _runs[_key(name)] = lock
    return lock


def busy_message(run_dir: str, busy: Busy) -> str:
    """The one line for a run another process holds (``busy`` from :func:`acquire`)."""
    if busy.readers:
        return (
            f"{run_dir!r} is being read by another process (tf-vrre evaluate, diagnose or export); run again "
            "when it ends"
        )
    who = (
        "this process"
        if busy.pid == str(os.getpid())
        else f"another process (pid {busy.pid})"
        if busy.pid
        else "another process (still checking its inputs)"
    )
    return f"{run_dir!r} is being written by {who}; wait for it to end or stop it, then run again"


def check_free(path: str | os.PathLike) -> None:
    """Whether :func:`acquire` of lock file ``path`` could succeed now, changing nothing: the file
    is opened read-only (never created) and its exclusive lock tried and dropped at once.

    Raises:
      Busy: another process holds it.
    """
    path = os.fspath(path)
    if fcntl is None:
        return
    try:
        fd = atomic.open_regular(path, os.O_RDONLY, "lock file")
    except OSError:  # absent (nobody holds it), or a link / FIFO / unreadable: acquire says so when it is taken
        return
    with os.fdopen(fd, "r", encoding="utf-8") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise _holder(f, path) from None


def check_run_free(run_dir: str | os.PathLike) -> None:
    """Refuses, changing nothing, a run another process writes or reads (:func:`check_free` of
    ``RUN/.lock``): what :func:`lock_run` would say, for the checks a command makes before it takes
    the lock.

    Raises:
      RunLockedError: another process holds the lock (naming the directory and the writer's pid).
    """
    name = os.fspath(run_dir)
    if holds_run_lock(name):
        return
    try:
        check_free(os.path.join(name, LOCK))
    except Busy as busy:
        raise RunLockedError(busy_message(name, busy)) from None


def unlock_run(run_dir: str | os.PathLike, remove: bool = False) -> None:
    """Releases this process's lock of ``run_dir`` (no-op if it holds none); ``remove``: see
    :meth:`Lock.release`."""
    lock = _runs.pop(_key(run_dir), None)
    if lock is not None:
        lock.release(remove=remove)


def make_run_directory(run_dir: str | os.PathLike) -> tuple[int, int] | None:
    """Creates ``run_dir`` if absent, before :func:`lock_run`; returns the identity of the directory
    it made (``(st_dev, st_ino)``, for :func:`give_back_run`) or ``None`` if it was there."""
    if os.path.isdir(run_dir):
        return None
    os.makedirs(run_dir, exist_ok=True)
    st = os.stat(run_dir)
    return (st.st_dev, st.st_ino)


def give_back_run(run_dir: str | os.PathLike, created: tuple[int, int] | None) -> None:
    """Releases this process's lock of ``run_dir`` (no-op if it holds none); a directory
    :func:`make_run_directory` made (``created``) that holds nothing but the lock file is removed,
    if the lock file is still this process's and the directory still the one made (never a
    directory another process now owns): a command refused after taking the lock leaves nothing."""
    lock = run_lock(run_dir)
    if lock is None:
        return
    try:
        st = os.lstat(run_dir)
        same_dir = created is not None and (st.st_dev, st.st_ino) == created
        empty = same_dir and lock.owned() and os.listdir(run_dir) == [LOCK]
    except OSError:
        empty = False
    unlock_run(run_dir, remove=empty)
    if empty:
        with contextlib.suppress(OSError):  # something appeared meanwhile: keep it
            os.rmdir(run_dir)


def share_run(run_dir: str | os.PathLike) -> Lock | None:
    """A reader's shared lock of ``run_dir`` (held until the process ends or it is released), so
    that no ``tf-vrre train`` / ``repair`` starts writing the run while it is read.

    Returns ``None``, touching nothing, when the run has no lock file (or a symbolic link, a
    directory or a FIFO in its place) or a writer holds it: a run being trained is read as it is (every file in it is replaced
    atomically, so each file read is whole).  Never creates or writes a file.
    """
    try:
        return acquire(os.path.join(os.fspath(run_dir), LOCK), shared=True)
    except (Busy, atomic.SymlinkError, atomic.SpecialFileError):
        return None


@contextlib.contextmanager
def reading(run_dir: str | os.PathLike) -> Iterator[Lock | None]:
    """:func:`share_run` for the duration of a ``with`` block (released at its end)."""
    reader = share_run(run_dir)
    try:
        yield reader
    finally:
        if reader is not None:
            reader.release()
