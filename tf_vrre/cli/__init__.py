"""Command line ``tf-vrre``: one module per subcommand in this package.

    tf-vrre mixture            # the paper's Gaussian-mixture study (offline main job)
    tf-vrre train              # a method config on CIFAR / SVHN into a run directory
    tf-vrre evaluate           # BMA accuracy and uncertainty of a run's samples
    tf-vrre export             # the samples' model average as a TF Serving SavedModel
    tf-vrre diagnose --run RUN # replica flow, acceptance, ESS / R-hat of a run
    tf-vrre repair RUN         # keep the readable samples of a damaged run

Each subcommand module defines ``HELP`` (one line), ``DESCRIPTION``, ``add_arguments(parser)``,
optionally ``check(args)`` (validation that needs more than one flag, or the file system;
calls ``die`` on a bad value; no TensorFlow) and ``run(args) -> int``.  Modules import
TensorFlow only inside ``run`` (``import tf_vrre`` imports none), so a bad flag gives exactly
one line on stderr and exit status 2 before anything is written.  Ctrl-C during ``run``
prints ``tf-vrre: interrupted`` and exits 130; what finished before is on disk.  Shared
argument types and the one-line error live in :mod:`tf_vrre.cli._args`.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import sys
import types
from collections.abc import Sequence
from typing import NoReturn

from tf_vrre import errors
from tf_vrre.cli import _args, _shadowing, _startup
from tf_vrre.cli._args import die

SUBCOMMANDS = ("mixture", "train", "evaluate", "export", "diagnose", "repair")


class _Parser(argparse.ArgumentParser):
    """One line on stderr for a bad flag (no usage block), in the shape of every ``tf-vrre``
    error: ``tf-vrre: error: <subcommand>: <flag>: <message>`` (:func:`tf_vrre.cli._args.die`)."""

    def parse_known_args(self, args=None, namespace=None):
        # the top-level parser starts with no subcommand; the subcommand's parser names it
        _args.COMMAND = self.prog.split()[-1] if " " in self.prog else None
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        die(_args.argparse_message(message))


def _module(name: str) -> types.ModuleType:
    return importlib.import_module(f"tf_vrre.cli.{name}")


def parser() -> argparse.ArgumentParser:
    """The ``tf-vrre`` argument parser with every subcommand."""
    p = _Parser(prog="tf-vrre", description="Variance-reduced replica-exchange SG-MCMC for Keras 3.")
    p.add_argument(
        "--version",
        action="version",
        version=_args.version_text(),
        help="print the versions of tf_vrre, TensorFlow, Keras and Python, and exit",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in SUBCOMMANDS:
        mod = _module(name)
        sp = sub.add_parser(
            name, help=mod.HELP, description=mod.DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        mod.add_arguments(sp)
    return p


WRITE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG, errno.EIO}
INTERRUPTED = 130  # 128 + SIGINT, the shell's status for a job stopped by Ctrl-C


def main(argv: Sequence[str] | None = None) -> int:
    """Parses and checks the flags, then runs the subcommand; returns the exit status.

    Exit status: 0 done; 2 bad flag or input refused before the command started (one line on
    stderr, nothing written); 1 TensorFlow or Keras cannot be imported (a broken installation: one
    line naming the package and the exception, nothing written), or the command failed while it
    ran: a file could not be written (a
    full disk, no permission: one line naming the file; every file replaced so far is whole), or
    one of tf_vrre's own errors (:class:`tf_vrre.errors.TfVrreError`: a damaged or foreign run file
    met on resume, a lock lost or held by another process, a diverged chain; one line naming it;
    what finished before stays on disk); 130 interrupted (Ctrl-C; parts already finished stay on
    disk).  Any other exception is a bug and keeps its traceback.
    """
    args = parser().parse_args(argv)
    mod = _module(args.command)
    try:
        if hasattr(mod, "check"):
            mod.check(args)
    except errors.TfVrreError as err:
        return _own_error(args.command, err, 2)
    shadowed = _shadowing.current_note()  # a script run here would not import the package
    if shadowed:
        sys.stderr.write(f"tf-vrre: note: {shadowed}\n")
    if getattr(mod, "TENSORFLOW", True):
        try:  # TensorFlow's start-up lines dropped, unless $TF_CPP_MIN_LOG_LEVEL is set
            _startup.import_tensorflow()
        except _startup.BrokenInstall as err:
            sys.stderr.write(f"tf-vrre: error: {args.command}: {err}\n")
            return 1
    try:
        return mod.run(args)
    except KeyboardInterrupt:
        sys.stderr.write(f"\ntf-vrre: interrupted ({args.command}); results finished so far are on disk\n")
        return INTERRUPTED
    except errors.TfVrreError as err:
        return _own_error(args.command, err, 1)
    except OSError as err:
        if err.errno not in WRITE_ERRORS:
            raise
        where = f" {err.filename}" if err.filename else ""
        sys.stderr.write(
            f"tf-vrre: error: {args.command}: cannot write{where}: {err.strerror or err}; free space "
            "or fix permissions and run the same command again\n"
        )
        return 1
    except Exception as err:
        message = _tensorflow_write_error(err)
        if message is None:
            raise
        sys.stderr.write(
            f"tf-vrre: error: {args.command}: {message}; free space or fix permissions and run the same command again\n"
        )
        return 1


def _own_error(command: str, err: errors.TfVrreError, status: int) -> int:
    """Writes one of tf_vrre's own errors as one line (``tf-vrre: error: <command>: <message>``) and
    returns ``status``."""
    text = " ".join(line.strip() for line in str(err).splitlines() if line.strip()) or type(err).__name__
    sys.stderr.write(f"tf-vrre: error: {command}: {text}\n")
    return status


def _tensorflow_write_error(err: Exception) -> str | None:
    """The first line of a TensorFlow error caused by a full disk / missing permission, else ``None``."""
    tf = sys.modules.get("tensorflow")
    tf_errors = getattr(tf, "errors", None)
    if tf_errors is None or not isinstance(err, tf_errors.OpError):
        return None
    text = (getattr(err, "message", None) or str(err)).strip().splitlines()
    first = text[0] if text else type(err).__name__
    causes = ("No space left on device", "Disk quota exceeded", "Read-only file system", "Permission denied")
    return first[:300] if any(c in first for c in causes) else None
