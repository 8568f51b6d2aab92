"""Command line ``tf-vrre``: one module per subcommand in this package.

    tf-vrre mixture            # the paper's Gaussian-mixture study (offline main job)
    tf-vrre train              # a method config on CIFAR / SVHN into a run directory
    tf-vrre evaluate           # BMA accuracy and uncertainty of a run's samples
    tf-vrre export             # the samples' model average as a TF Serving SavedModel
    tf-vrre diagnose --run RUN # replica flow, acceptance, ESS / R-hat of a run

Each subcommand module defines ``HELP`` (one line), ``DESCRIPTION``, ``add_arguments(parser)``
and ``run(args) -> int``; modules import TensorFlow only inside ``run`` so that flags are
parsed and validated first.  Shared argument types and the one-line error live in
:mod:`tf_vrre.cli._args`.
"""

import argparse
import importlib
import os

from tf_vrre.cli._args import die  # noqa: F401  (re-export for subcommands and tests)

SUBCOMMANDS = ("mixture", "train", "evaluate", "export", "diagnose")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line on stderr, exit 2 (no usage block)
        die(f"{self.prog.split()[-1]}: {message}" if " " in self.prog else message)


def _module(name):
    return importlib.import_module(f"tf_vrre.cli.{name}")


def parser():
    """The ``tf-vrre`` argument parser with every subcommand."""
    p = _Parser(prog="tf-vrre", description="Variance-reduced replica-exchange SG-MCMC for Keras 3.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in SUBCOMMANDS:
        mod = _module(name)
        sp = sub.add_parser(name, help=mod.HELP, description=mod.DESCRIPTION,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(sp)
    return p


def main(argv=None):
    """Entry point of the ``tf-vrre`` console script; returns the exit status."""
    args = parser().parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return _module(args.command).run(args)
