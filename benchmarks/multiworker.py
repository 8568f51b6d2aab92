"""Chains on several machines: what crosses the network per step, and what a step costs, with one
chain per worker (``tf-vrre train --strategy multiworker --placement chain-per-replica``) against
data parallelism (``--placement replicated``).

1. **Bytes per step** that the replicas exchange, read from the traced train step's graph
   (:func:`tf_vrre.sampler.traffic.step_traffic`) of the image workflow's sampler: the
   ``vr-resghmc-ladder`` config with ``--chains K`` (VR-reSGHMC, batch 256; the ladder fixed), the small CNN and
   ResNet-20, under a ``MirroredStrategy`` over K logical CPUs.  With one device per machine
   every collective crosses the network; ``MultiWorkerMirroredStrategy`` runs the same
   collectives (the payload each replica hands to an all-reduce or all-gather, and the logs Keras
   reduces).  Copies between devices of one process (``edge`` in ``benchmarks/placement.py``) do
   not cross machines and are left out here (they are in the results file).
2. **Time per step** of ``tf-vrre train`` (VR-reSGHMC, K = 2, the small CNN, batch 128) as 2
   worker processes on this machine (127.0.0.1, ``TF_CONFIG``, one CPU device each) in both
   placements, against the same run on one device: the median over ``--rounds`` interleaved
   rounds of every epoch after the first (``epoch_seconds`` in ``log.csv``).  The two workers share this machine's cores,
   so the times measure what the collectives and the workers' lock step cost, not what a second
   machine would gain.

    nice python benchmarks/multiworker.py --data-dir DATA    # ~15 minutes on 2 cores

Each measurement runs in its own process (one strategy per process).  The tables go to
``benchmarks/results/multiworker.json`` (``--results``; ``--force`` to replace it);
``python benchmarks/render_docs.py`` renders them in ``docs/benchmarks/multiworker.md`` and the
scale guide.
"""

import argparse
import csv
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import arguments
import results

# the CIFAR-10 .npz files: $TF_VRRE_DATA_DIR, else ../shared/data beside the repository
DATA_DIR = os.environ.get("TF_VRRE_DATA_DIR") or os.path.join(os.path.dirname(ROOT), "shared", "data")
DEVICES = 8
N, BATCH = 512, 256
CASES = [("cnn", k, p) for k in (2, 4, 8) for p in ("replicated", "chain_per_replica")] + [
    ("resnet20", k, p) for k in (2, 4, 8) for p in ("replicated", "chain_per_replica") if (k, p) != (8, "replicated")
]
TIMED = ("one device", "replicated", "chain_per_replica")
NETWORK = ("all_reduce", "all_gather", "logs")


def measure_traffic(model, chains, placement):
    """The step's transfers for one case (run in a child process: one strategy per process)."""
    import keras
    import numpy as np
    import tensorflow as tf

    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * DEVICES
    )
    from tf_vrre.sampler import traffic
    from tf_vrre.workflows.image_classification import config, config_schedule, train

    over = {"ladder.chains": chains, "ladder.tune_epochs": 0, "model.name": model, "data.subset": N}
    cfg = config.resolve(config.apply_overrides(config.load("vr-resghmc-ladder"), over))
    values = config_schedule.schedule_values(cfg, N, N // BATCH)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(N, 32, 32, 3)).astype("float32"), (np.arange(N) % 10).astype("int64")
    with tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(chains)]).scope():
        s = train.build_sampler(
            cfg, values, 10, (32, 32, 3), N, synchronized_bn=placement == "replicated", placement=placement
        )
        s.set_reference_data((x, y))
        s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=False)
    t = traffic.step_traffic(s, s.make_dataset(BATCH, drop_remainder=True))
    kinds = t.by_kind()
    network = [e for e in t.transfers if e.kind in NETWORK]
    return {
        "params": int(sum(np.prod(w.shape) for w in s.cold_model.trainable_weights)),
        "kinds": kinds,
        "network": sum(kinds.get(k, 0) for k in NETWORK),
        "largest": max((int(np.prod(e.shape)) for e in network), default=0),
    }


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _train_flags(out, data_dir, epochs):
    return [
        "-m",
        "tf_vrre.cli",
        "train",
        "--config",
        "vr-resghmc",
        "--model",
        "cnn",
        "--subset",
        "1024",
        "--holdout",
        "64",
        "--batch-size",
        "128",
        "--epochs",
        str(epochs),
        "--schedule",
        "keep-rates",
        "--thinning",
        "8",
        "--set",
        "variance_reduction.period=16",
        "--set",
        "samples.validation=64",
        "--set",
        "samples.burn_in_epochs=0",
        "--data-dir",
        data_dir,
        "--source",
        "npz",
        "--out",
        out,
        "--quiet",
    ]


def time_training(case, data_dir, epochs, root):
    """Seconds per step of each epoch after the first of one ``tf-vrre train`` (``case``: one of :data:`TIMED`)."""
    out = os.path.join(root, case.replace(" ", "-"))
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    flags = _train_flags(out, data_dir, epochs)
    if case == "one device":
        procs = [subprocess.Popen([sys.executable, *flags, "--strategy", "default"], env=env)]
    else:
        cluster = {"worker": [f"127.0.0.1:{_free_port()}" for _ in range(2)]}
        extra = ["--strategy", "multiworker", "--placement", case.replace("_", "-")]
        procs = [
            subprocess.Popen(
                [sys.executable, *flags, *extra],
                env=dict(env, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})),
            )
            for i in range(2)
        ]
    for p in procs:
        if p.wait() != 0:
            sys.exit(f"{case}: tf-vrre train failed (exit {p.returncode})")
    with open(os.path.join(out, "log.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(out, "run.json")) as f:
        steps = json.load(f)["schedule"]["steps_per_epoch"]
    return [float(r["epoch_seconds"]) / steps for r in rows[1:]]


def traffic_table(measured):
    rows, keys = [], []
    for model, chains, placement in CASES:
        m = measured[f"{model}/{chains}/{placement}"]
        what = "; ".join(f"{k} {m['kinds'][k]:,}" for k in NETWORK if m["kinds"].get(k))
        rows.append([model, m["params"], chains, placement, m["network"], m["largest"], what])
        keys.append(f"{model}-k{chains}-{placement}")
    return results.table(
        [
            "model",
            "parameters per chain",
            "K",
            "placement",
            "bytes / step between replicas",
            "largest tensor (elements)",
            "what crosses",
        ],
        ["{}", "{:,}", "{}", "{}", "{:,}", "{:,}", "{}"],
        rows,
        keys,
    )


def time_table(times):
    base = times["one device"]
    rows = [[case, 1 if case == "one device" else 2, 1000 * times[case], times[case] / base] for case in TIMED]
    return results.table(
        ["run", "workers", "ms / step", "/ one device"], ["{}", "{}", "{:.0f}", "{:.2f}"], rows, list(TIMED)
    )


def parse_args(argv=None):
    """The command line, checked before TensorFlow starts (exit 2 and one line for a bad value)."""
    p = arguments.parser(__file__, __doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default=DATA_DIR, help="npz root holding cifar10 (the image workflow's layout)")
    p.add_argument(
        "--epochs",
        type=arguments.at_least(2, 1000),
        default=4,
        help="epochs of each timed run (the first is not timed)",
    )
    p.add_argument(
        "--rounds", type=arguments.positive(int, 100), default=3, help="interleaved rounds of the timed runs (median)"
    )
    p.add_argument(
        "--traffic-from",
        metavar="RESULTS",
        type=arguments.input_file,
        help="take the bytes from this results file of an earlier run instead of measuring them again (they are "
        "a function of the code: the same in every run)",
    )
    p.add_argument("--case", nargs=3, help=argparse.SUPPRESS)  # child: MODEL K PLACEMENT, JSON out
    results.add_arguments(p, "multiworker")
    args = p.parse_args(argv)
    if args.case:
        return args
    results.check_target(args.results, args.force)
    folder = os.path.join(args.data_dir, "cifar10")
    if not any(os.path.isfile(os.path.join(folder, f)) for f in ("cifar10_train.npz", "cifar10_train_part1of2.npz")):
        arguments.die(f"--data-dir: {args.data_dir!r} has no cifar10/ folder of training .npz files")
    args.measured = {}
    if args.traffic_from:
        args.measured = arguments.read_json(args.traffic_from, "--traffic-from", ("measured",))["measured"]
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.case:
        model, chains, placement = args.case
        print(json.dumps(measure_traffic(model, int(chains), placement)))
        return
    measured = dict(args.measured)
    for model, chains, placement in [] if measured else CASES:
        child = subprocess.run(
            [sys.executable, __file__, "--case", model, str(chains), placement],
            capture_output=True,
            text=True,
            check=False,
        )
        if child.returncode:
            sys.exit(f"{model} K={chains} {placement} failed:\n{child.stderr[-3000:]}")
        measured[f"{model}/{chains}/{placement}"] = json.loads(child.stdout.strip().splitlines()[-1])
        print(model, chains, placement, measured[f"{model}/{chains}/{placement}"]["network"], flush=True)
    per_step = {case: [] for case in TIMED}
    for r in range(args.rounds):  # interleaved: load that comes and goes hits every case alike
        for case in TIMED:
            with tempfile.TemporaryDirectory() as root:
                per_step[case] += time_training(case, args.data_dir, args.epochs, root)
            print(f"round {r + 1}: {case}: {statistics.median(per_step[case]) * 1000:.0f} ms/step so far", flush=True)
    times = {case: statistics.median(v) for case, v in per_step.items()}
    tables = {"traffic": traffic_table(measured), "time": time_table(times)}
    for tab in tables.values():
        print(results.markdown(tab))
    results.write(
        args.results,
        tables,
        settings={"n": N, "batch": BATCH, "devices": DEVICES, "epochs": args.epochs, "rounds": args.rounds},
        measured=measured,
        seconds_per_step=times,
        epoch_seconds_per_step=per_step,
    )


if __name__ == "__main__":
    main()
