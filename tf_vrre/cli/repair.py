"""``tf-vrre repair``: keep the readable samples of a damaged run and rewrite its manifest.

tf-vrre repair runs/c10-vr --dry-run     # what would be kept and dropped; changes nothing
tf-vrre repair runs/c10-vr               # rewrites runs/c10-vr/samples/manifest.json
"""

import os

from tf_vrre.cli._args import die

TENSORFLOW = False
"""The subcommand runs without TensorFlow: ``tf-vrre`` does not import it (nor silence its start-up)."""

HELP = "keep the readable samples of a damaged run (deleted / truncated sample, broken manifest)"
DESCRIPTION = (
    "Checks every sample of RUN/samples (or of a bare sample directory): present, the recorded size and "
    "SHA-256, a complete .npz, the same arrays as the other samples. Rewrites manifest.json atomically to "
    "list the good samples and renames each damaged file to damaged-<name>; prints what it kept and "
    "dropped. An unreadable manifest is rebuilt from the readable sample-<step>.npz files (their "
    "temperature / energy metadata and the run identity are lost: evaluate and export work, a resume "
    "refuses them). Refuses a run that tf-vrre train is writing. No TensorFlow."
)


def add_arguments(p):
    """Flags of ``tf-vrre repair``."""
    p.add_argument("run", metavar="RUN", help="run directory (its samples/) or a sample directory (manifest.json)")
    p.add_argument("--dry-run", action="store_true", help="print what would be kept and dropped; change nothing")


def _samples_dir(run):
    if not os.path.isdir(run):
        die(f"RUN: {run!r} is not a directory")
    sub = os.path.join(run, "samples")
    if os.path.isdir(sub):
        return sub
    if any(n == "manifest.json" or n.startswith("sample-") for n in os.listdir(run)):
        return run
    die(f"RUN: {run!r} has no samples/ directory and no manifest.json or sample files")


def check(args):
    """The sample directory, before anything is read (exit 2 on a bad one)."""
    args.samples = _samples_dir(args.run)


def run(args):
    """Repairs (or with ``--dry-run`` plans) the sample directory; returns the exit status.

    :func:`tf_vrre.runs.repair.repair` reads first; only a directory that needs a repair is
    locked (the run's lock and the sample directory's: a run being trained, or a sample
    directory a fit collects into, is refused and left as it is) and rewritten.
    """
    from tf_vrre.runs import atomic, repair

    try:
        result = repair.repair(args.samples, dry_run=args.dry_run)
    except (ValueError, atomic.SymlinkError) as err:  # a run being written; a link planted at a lock file
        die(f"RUN: {err}")
    if result["manifest_problem"]:
        print(f"manifest unreadable ({result['manifest_problem']}); rebuilt from the sample files")
    for name, why in result["dropped"]:
        print(f"drop {name}: {why}")
    steps = [e["step"] for e in result["kept"]]
    span = f" (steps {steps[0]}..{steps[-1]})" if steps else ""
    print(f"keep {len(steps)} sample(s){span}, drop {len(result['dropped'])}")
    manifest = os.path.join(args.samples, "manifest.json")
    if not result["changed"]:
        print(f"{args.samples}: every listed sample is sound; nothing to repair")
    elif args.dry_run:
        print(f"dry run: {manifest} not changed")
    else:
        print(f"rewrote {manifest}" + ("; damaged files renamed damaged-<name>" if result["dropped"] else ""))
    return 0
