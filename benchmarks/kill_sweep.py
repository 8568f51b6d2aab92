"""Kill-at-any-instant sweep: a real SIGKILL at every instrumented point, many occurrences each.

The CI test (``tests/callbacks/test_checkpoint_resume.py``) kills a handful of instants in one chain.
This script runs ``tests/helpers/_ckpt_job.py`` (a tiny VR-reSGHMC run with SampleCollector, SwapLogger,
HyperparameterScheduler, CSVLogger and Checkpoint; 8 epochs x 4 steps) once uninterrupted,
then for every point and occurrence ``n``: kills a fresh run the ``n``-th time it passes the
point, runs the same command again, and compares every file and the final state with the
uninterrupted run bit for bit.  Points (see ``tf_vrre/runs/fault_points.py`` and ``tests/helpers/_ckpt_job.py``):
between writers after a step (``batch``), between callbacks' epoch ends (``epoch_end``), rows
torn mid-write (``torn``), sample file written / manifest written (``sample.file``,
``sample.manifest``), swap rows flushed (``swaps.drained``), log row flushed (``csv.row``),
inside the checkpoint write before its commit (``checkpoint.data``) and after it
(``checkpoint.committed``).

    python benchmarks/kill_sweep.py --force            # 41 kills over 9 points, ~30 minutes on 2 CPU cores
    python benchmarks/kill_sweep.py --points checkpoint.data,torn --occurrences 1,2,3,5,8 --results runs/kills.json

The table goes to ``benchmarks/results/kill-sweep.json`` (``--results``), which
``python benchmarks/render_docs.py`` puts into ``docs/benchmarks/kill-sweep.md``.
"""

import os
import shutil
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "callbacks"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "helpers"))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import arguments
import results

POINTS = (
    "batch",
    "epoch_end",
    "torn",
    "sample.file",
    "sample.manifest",
    "swaps.drained",
    "csv.row",
    "checkpoint.data",
    "checkpoint.committed",
)
# Occurrences spread over one uninterrupted run: 32 steps, 14 samples, 8 epochs.
OCCURRENCES = {
    "batch": (1, 7, 14, 22, 31),
    "torn": (1, 7, 14, 22, 31),
    "swaps.drained": (1, 7, 14, 22, 31),
    "sample.file": (1, 4, 8, 11, 14),
    "sample.manifest": (1, 4, 8, 11, 14),
    "epoch_end": (1, 3, 5, 8),
    "csv.row": (1, 3, 5, 8),
    "checkpoint.data": (1, 3, 5, 8),
    "checkpoint.committed": (1, 3, 5, 8),
}
LABELS = {
    "batch": "`batch` (between writers after a step)",
    "epoch_end": "`epoch_end` (between callbacks' epoch ends)",
    "torn": "`torn` (rows torn mid-write)",
    "checkpoint.data": "`checkpoint.data` (inside the write, before the commit)",
}


def parse_args(argv=None):
    """The command line, checked before TensorFlow starts (exit 2 and one line for a bad value)."""
    p = arguments.parser(__file__, __doc__.splitlines()[0])
    p.add_argument(
        "--points", type=arguments.names(POINTS, "points"), default=POINTS, help="comma-separated points (default: all)"
    )
    p.add_argument(
        "--occurrences",
        type=arguments.int_list(1, 10**6, "occurrences"),
        default=None,
        help="comma-separated n: kill at the n-th pass (default: spread over the run, per point)",
    )
    p.add_argument("--keep", action="store_true", help="keep the run directories")
    results.add_arguments(p, "kill-sweep")
    args = p.parse_args(argv)
    results.check_target(args.results, args.force)
    return args


def main(argv=None):
    a = parse_args(argv)
    from test_checkpoint_resume import assert_same_run, job  # TensorFlow starts here

    target, points = a.results, list(a.points)
    chosen = None if a.occurrences is None else list(a.occurrences)
    root = tempfile.mkdtemp(prefix="kill-sweep-")
    t0 = time.perf_counter()
    code, out, err = job(os.path.join(root, "ref"))
    assert code == 0, err[-2000:]
    rows, failures = [], 0
    for point in points:
        for n in chosen or OCCURRENCES[point]:
            d = os.path.join(root, f"{point}-{n}")
            code, out, err = job(d, f"{point}:{n}")
            if code != -signal.SIGKILL:
                rows.append((point, n, "not reached", "-"))  # the run passes the point fewer than n times
                continue
            code, out, err = job(d)
            try:
                assert code == 0, err[-2000:]
                assert_same_run(os.path.join(root, "ref"), d)
                verdict = "identical"
            except AssertionError as e:
                verdict, failures = f"DIFFERENT: {(str(e) or type(e).__name__).splitlines()[0][:80]}", failures + 1
            rows.append((point, n, "killed", verdict))
            if not a.keep:
                shutil.rmtree(d)
            print(f"{point:<22}{n:>4}  {rows[-1][2]:<12}{rows[-1][3]}", flush=True)
    killed = sum(r[2] == "killed" for r in rows)
    print(
        f"\n{killed} kills, {sum(r[3] == 'identical' for r in rows)} resumed runs identical to the uninterrupted "
        f"one, {failures} different, {len(rows) - killed} points not reached; {time.perf_counter() - t0:.0f} s"
    )
    if not a.keep:
        shutil.rmtree(root)
    table = []
    for point in points:
        done = [r for r in rows if r[0] == point and r[2] == "killed"]
        table.append(
            [
                LABELS.get(point, f"`{point}`"),
                ", ".join(str(r[1]) for r in done) or "-",
                [sum(r[3] == "identical" for r in done), len(done)],
            ]
        )
    main_table = results.table(
        ["point", "occurrences killed", "resumed runs identical"], ["{}", "{}", "{} / {}"], table, keys=points
    )
    results.write(
        target,
        {"main": main_table},
        seconds=time.perf_counter() - t0,
        settings={"points": points, "occurrences": chosen, "steps": 32, "epochs": 8},
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
