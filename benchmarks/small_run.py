"""A first CIFAR-10 run that learns in a few minutes on a laptop CPU: ``tf-vrre train``, then
``tf-vrre evaluate`` and ``tf-vrre diagnose``, run exactly as the docs show them.

VR-reSGHMC (the shipped ``vr-resghmc`` config) on a small CNN, 5,000 class-balanced training
images, 12 epochs of batch 64, ``--schedule keep-rates`` (the 500-epoch recipe's per-epoch rates
with its phases scaled to 12 epochs, instead of the whole schedule squeezed into them), one
cold-chain sample every half epoch after the scaled burn-in, control variates refreshed every two
epochs, seed 0. Evaluated on 2,000 class-balanced CIFAR-10 test images (and as many of CIFAR-100's
out of distribution).

Usage (what the section "A first run that learns" of docs/guides/image-workflow.md shows)::

    python benchmarks/small_run.py --data-dir DIR --force

``DIR`` holds ``cifar10/cifar10_train*.npz``, ``cifar10/cifar10_test.npz`` and
``cifar100/cifar100_test.npz`` (default ``$TF_VRRE_DATA_DIR``, else ``../shared/data`` beside the
repository). The commands run in ``--work`` (default ``runs/small-run``, which must not hold a
previous run) with ``data`` linked to ``DIR``, so they are recorded as a user types them. The
numbers go to ``benchmarks/results/small-run.json``, which ``python benchmarks/render_docs.py``
puts into the page.  The flags are checked before any command runs (exit status 2 and one line
naming the flag).
"""

import csv
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import arguments  # benchmarks/arguments.py
import results  # benchmarks/results.py

NAME = "small-run"
DATA_DIR = os.environ.get("TF_VRRE_DATA_DIR") or str(REPO.parent / "shared" / "data")
RUN = "runs/small"
COMMANDS = {
    "train": [
        "tf-vrre",
        "train",
        "--config",
        "vr-resghmc",
        "--model",
        "cnn",
        "--subset",
        "5000",
        "--epochs",
        "12",
        "--batch-size",
        "64",
        "--schedule",
        "keep-rates",
        "--thinning",
        "39",
        "--set",
        "variance_reduction.period=156",
        "--seed",
        "0",
        "--source",
        "npz",
        "--data-dir",
        "data",
        "--out",
        RUN,
    ],
    "evaluate": ["tf-vrre", "evaluate", "--run", RUN, "--test-size", "2000"],
    "diagnose": ["tf-vrre", "diagnose", "--run", RUN],
}
CHANCE = 0.1
OOD_NAMES = {"cifar100": "CIFAR-100", "svhn": "SVHN"}


def parse_args(argv=None):
    """The command line, checked before any command runs (exit 2 and one line for a bad value)."""
    p = arguments.parser(__file__, __doc__.split("\n", 1)[0])
    p.add_argument("--data-dir", default=DATA_DIR, help="root of the .npz files (linked as WORK/data)")
    p.add_argument(
        "--work",
        type=arguments.output_directory,
        default="runs/small-run",
        help=f"working directory of the commands (new or without {RUN})",
    )
    results.add_arguments(p, NAME)
    args = p.parse_args(argv)
    for folder in ("cifar10", "cifar100"):
        if not (Path(args.data_dir) / folder).is_dir():
            arguments.die(f"--data-dir: {args.data_dir!r} has no {folder}/ folder of .npz files")
    if (Path(args.work) / RUN).exists():
        arguments.die(
            f"--work: {args.work}/{RUN} exists; remove it or pass another --work (a finished run "
            "would be left alone and its old numbers recorded)"
        )
    results.check_target(args.results, args.force)
    return args


def shown(command, width=88):
    """``command`` as a bash block line, continued with backslashes to fit ``width``."""
    words, i = [], 0
    while i < len(command):  # a flag and its value stay on one line
        pair = i + 1 < len(command) and command[i].startswith("--") and not command[i + 1].startswith("--")
        words.append(" ".join(command[i : i + 2]) if pair else command[i])
        i += 2 if pair else 1
    lines, line = [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width - 2:
            lines.append(line + " \\")
            line = "    " + word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


def run_commands(work):
    """Runs the commands in ``work`` with this repository's ``tf_vrre``; their wall seconds and CPU
    seconds (user + system, both cores: the time on an otherwise idle machine is close to these
    over the cores used, whatever else runs meanwhile)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    seconds = {}
    for step, command in COMMANDS.items():
        print("$ " + " ".join(command), flush=True)
        start, cpu = time.perf_counter(), _children_cpu()
        subprocess.run([sys.executable, "-m", "tf_vrre.cli", *command[1:]], cwd=work, env=env, check=True)
        seconds[step] = (time.perf_counter() - start, _children_cpu() - cpu)
    return seconds


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def last_epoch(run):
    with open(run / "log.csv", newline="") as f:
        return list(csv.DictReader(f))[-1]


def tables(run, seconds, load):
    report = json.loads((run / "report.json").read_text())
    diagnostics = json.loads((run / "diagnostics.json").read_text())
    epoch = last_epoch(run)
    test, ood, temperature = report["test"], report["ood"], report["temperature"]
    verdict = diagnostics["verdict"]
    total = [sum(s[i] for s in seconds.values()) for i in (0, 1)]
    time_table = results.table(
        ["command", "wall seconds", "CPU seconds", "load average (1 min) before / after"],
        ["{}", "{:.0f}", "{:.0f}", "{:.1f} / {:.1f}"],
        [[f"`tf-vrre {step}`", *seconds[step], None] for step in COMMANDS] + [["total", *total, load]],
        keys=[*COMMANDS, "total"],
    )

    def number(v, fmt):
        return {"value": v, "format": fmt}

    rows = [
        ("chance", "accuracy of a guess (10 classes)", number(CHANCE, "{:.3f}")),
        (
            "train_accuracy",
            "training accuracy, last epoch (cold chain, augmented batches)",
            number(float(epoch["accuracy"]), "{:.3f}"),
        ),
        ("samples", "cold-chain samples averaged", number(report["samples"], "{:d}")),
        (
            "test_accuracy",
            f"test accuracy of the sample average (n = {test['size']:,}, T = 1)",
            number(test["T=1"]["accuracy"], "{:.3f}"),
        ),
        (
            "last_sample_accuracy",
            "test accuracy of the last sample alone",
            number(test["last_sample"]["accuracy"], "{:.3f}"),
        ),
        ("test_nll", "test NLL of the sample average (T = 1; a guess: 2.303)", number(test["T=1"]["nll"], "{:.3f}")),
        ("ece", "test ECE, T = 1", number(test["T=1"]["ece"], "{:.3f}")),
        ("fitted_t", "fitted temperature T", number(temperature["T"], "{:.2f}")),
        ("ece_fitted", "test ECE at the fitted T", number(test["T=fitted"]["ece"], "{:.3f}")),
        (
            "ood_auroc",
            f"AUROC CIFAR-10 vs {OOD_NAMES.get(ood['dataset'], ood['dataset'])} by entropy (T = 1)",
            number(ood["T=1"]["auroc"], "{:.3f}"),
        ),
        ("swaps", "swaps accepted / attempted", f"{report['swaps']['swaps']} / {report['swaps']['attempts']}"),
        ("verdict", "`tf-vrre diagnose` verdict", verdict["status"]),
    ]
    numbers = results.table(
        ["", "value"], ["{}", "{}"], [[label, v] for _, label, v in rows], keys=[key for key, _, _ in rows]
    )
    return {"time": time_table, "numbers": numbers}, verdict


def main(argv=None):
    args = parse_args(argv)
    target = args.results
    work = Path(args.work).resolve()
    data = Path(args.data_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    link = work / "data"
    if link.is_symlink() and link.resolve() != data:
        link.unlink()
    if not link.exists():
        link.symlink_to(data, target_is_directory=True)
    load_before = os.getloadavg()[0]
    seconds = run_commands(work)
    load = [load_before, os.getloadavg()[0]]
    tabs, verdict = tables(work / RUN, seconds, load)
    print(results.markdown(tabs["time"]), results.markdown(tabs["numbers"]), sep="\n\n")
    results.write(
        target,
        tabs,
        commands={step: shown(c) for step, c in COMMANDS.items()},
        verdict=verdict,
        settings={"chance": CHANCE},
    )


if __name__ == "__main__":
    main()
