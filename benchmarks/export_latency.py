"""What serving the posterior costs: export time, SavedModel size and latency per call of the
K-member model average (K = 1, 8, 32) beside one plain member, ResNet-20 on CIFAR-10.

    python benchmarks/export_latency.py --force         # ~5 minutes on 2 CPU cores
    python benchmarks/export_latency.py --rounds 3 --ks 1,8 --results runs/export-latency.json

The table goes to ``benchmarks/results/export-latency.json`` (``--results``), which
``python benchmarks/render_docs.py`` puts into ``docs/benchmarks/export-latency.md``.

Samples: a short VR-reSGHMC run of ResNet-20 (``models.resnet20``) on real CIFAR-10 training
images with ``SampleCollector(every=1)`` (the weights' values do not change the cost), written
as a run directory (``run.json`` + ``samples/``) and exported with
``tf_vrre.export_ensemble(run, out, max_members=K)``.  The baseline "1 member (plain)" is one
sample's network exported with Keras' own ``model.export`` (float32 normalised input, logits
out).  Latency: each SavedModel loaded with ``tf.saved_model.load`` and its serving signature
called on uint8 images (float32 normalised for the plain member); configurations interleaved in
rounds, median per call after one warm-up call.  Times include the host -> tensor conversion.

The flags and the two CIFAR-10 files are checked before TensorFlow starts (exit status 2 and one
line naming the flag or file).
"""

import os
import shutil
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import arguments
import results

from tf_vrre.runs import atomic

# real CIFAR-10 .npz files: $TF_VRRE_DATA_DIR, else ../shared/data beside the repository
DATA = os.environ.get("TF_VRRE_DATA_DIR") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data"
)
TRAIN = os.path.join(DATA, "cifar10", "cifar10_train_part1of2.npz")
TEST = os.path.join(DATA, "cifar10", "cifar10_test.npz")


def write_run_json(run_dir, run):
    """Writes the run record ``run_dir/run.json`` atomically (a symbolic link there is replaced,
    never followed)."""
    return atomic.write_json(os.path.join(run_dir, "run.json"), run, indent=None)


def make_run(run_dir, k_max, train, batch_size, seed=0):
    """ResNet-20 samples from a short run on the images and labels ``train``: burn-in 4 steps, then
    one sample per step."""
    import keras
    import numpy as np
    import tensorflow as tf

    import tf_vrre
    from tf_vrre.workflows.image_classification.models import resnet20

    x, y = train
    train_size = len(x)
    scale = 1.0 / 255.0
    xs = x.astype(np.float64) * scale
    pre = {"kind": "normalize", "scale": scale, "mean": xs.mean((0, 1, 2)).tolist(), "std": xs.std((0, 1, 2)).tolist()}
    xn = (x.astype(np.float32) * np.float32(scale) - np.float32(pre["mean"])) / np.float32(pre["std"])
    spe = train_size // batch_size
    steps = 4 + k_max
    sampler = tf_vrre.ReplicaExchangeSampler(
        resnet20,
        data_size=train_size,
        num_chains=2,
        temperatures=[1e-3, 5e-3],
        learning_rates=[2e-6 * 50000 / train_size, 3e-6 * 50000 / train_size],
        dynamics="sghmc",
        weight_decay=5.0,
        swap=tf_vrre.CorrectedSwap(correction=2.0),
        variance_reduction=tf_vrre.ControlVariates(period=spe),
        seed=seed,
    )
    sampler.set_reference_data((xn, y))
    sampler.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    collector = tf_vrre.SampleCollector(os.path.join(run_dir, "samples"), every=1, burn_in_steps=4)
    t0 = time.perf_counter()
    sampler.fit(
        sampler.make_dataset(batch_size, repeat=True),
        epochs=1,
        steps_per_epoch=steps,
        verbose=0,
        shuffle=False,
        callbacks=[collector],
    )
    print(f"  sampled {k_max} ResNet-20 members in {steps} steps ({time.perf_counter() - t0:.0f} s)")
    run = {
        "format": "tf_vrre.run/1",
        "method": "vr-resghmc",
        "config": {"benchmark": True},
        "model": {"name": "resnet20", "kwargs": {}, "num_classes": 10, "input_shape": [32, 32, 3]},
        "data": {
            "dataset": "cifar10",
            "source": "npz",
            "data_dir": os.path.dirname(TRAIN),
            "train_size": train_size,
            "subset": None,
        },
        "preprocessing": pre,
        "seed": seed,
        "versions": {"tf_vrre": tf_vrre.__version__, "tensorflow": tf.__version__, "keras": keras.__version__},
        "status": "complete",
    }
    write_run_json(run_dir, run)
    return run


def dir_mib(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs) / 2**20


def export_models(run_dir, root, ks):
    """Exports the K-member averages of ``run_dir`` (``tf_vrre.export_ensemble``) and one sample's
    network with Keras' ``model.export`` and loads each serving signature.

    Returns ``(configs, exports, plain, plain_seconds)``: ``configs`` maps a configuration name to
    (signature, input kind), ``exports`` each K to ``export_ensemble``'s info, ``plain`` is the
    plain member's SavedModel directory.
    """
    import tensorflow as tf

    import tf_vrre
    from tf_vrre.workflows.image_classification.models import resnet20

    configs = {}  # name -> (signature, input dtype)
    exports = {}
    for k in ks:
        info = tf_vrre.export_ensemble(run_dir, os.path.join(root, "serving"), max_members=k)
        exports[k] = info
        configs[f"K={k}"] = (tf.saved_model.load(info["path"]).signatures["serving_default"], "uint8")
    samples = tf_vrre.load_samples(os.path.join(run_dir, "samples"))
    net = resnet20()
    net.set_weights(samples.weights(len(samples) - 1))
    plain = os.path.join(root, "plain")
    shutil.rmtree(plain, ignore_errors=True)
    t0 = time.perf_counter()
    net.export(plain, format="tf_saved_model", verbose=False)
    plain_seconds = time.perf_counter() - t0
    configs["plain"] = (tf.saved_model.load(plain).signatures["serving_default"], "normalized")
    return configs, exports, plain, plain_seconds


def time_calls(configs, preprocessing, images, batches, rounds):
    """Seconds per call of every configuration at every batch size: one warm-up call each, then
    ``rounds`` interleaved rounds on the CIFAR-10 test ``images`` (uint8, or normalised with
    ``preprocessing`` for the plain member)."""
    import numpy as np
    import tensorflow as tf

    images = images[: max(batches)]
    pre = preprocessing
    normalized = (images.astype(np.float32) * np.float32(pre["scale"]) - np.float32(pre["mean"])) / np.float32(
        pre["std"]
    )
    times = {(name, b): [] for name in configs for b in batches}

    def call(name, b):
        fn, kind = configs[name]
        x = images[:b] if kind == "uint8" else normalized[:b]
        t = time.perf_counter()
        out = fn(tf.constant(x))
        next(iter(out.values())).numpy()
        return time.perf_counter() - t

    for name in configs:  # warm-up
        for b in batches:
            call(name, b)
    for r in range(rounds):  # interleaved: every configuration once per round
        for b in batches:
            for name in configs:
                times[(name, b)].append(call(name, b))
        print(f"  round {r + 1}/{rounds} done", flush=True)
    return times


def print_table(med, ks, batches, exports, plain_cells):
    """Prints the markdown table of median ms per call; ``plain_cells`` is the plain member's
    (export seconds, SavedModel MiB)."""
    plain_seconds, plain_mib = plain_cells
    head = "| members | export s | SavedModel MiB | " + " | ".join(f"batch {b} ms (ratio)" for b in batches) + " |"
    print(head)
    print("|" + "---|" * (3 + len(batches)))
    row = [f"{med[('plain', b)]:.1f}" for b in batches]
    print(f"| 1, plain `model.export` | {plain_seconds:.1f} | {plain_mib:.2f} | " + " | ".join(row) + " |")
    for k in ks:
        cells = [f"{med[(f'K={k}', b)]:.1f} ({med[(f'K={k}', b)] / med[('plain', b)]:.1f}x)" for b in batches]
        print(
            f"| {k} | {exports[k]['export_seconds']:.1f} | {exports[k]['bytes'] / 2**20:.2f} | "
            + " | ".join(cells)
            + " |"
        )


def results_table(med, ks, batches, exports, plain_cells):
    """The results file's table: the printed one, with the ratios to the plain member as numbers."""
    plain_seconds, plain_mib = plain_cells
    rows = [
        [
            "1, plain `model.export`",
            plain_seconds,
            plain_mib,
            *[{"value": med[("plain", b)], "format": "{:.1f}"} for b in batches],
        ]
    ]
    for k in ks:
        rows.append(
            [
                str(k),
                exports[k]["export_seconds"],
                exports[k]["bytes"] / 2**20,
                *[[med[(f"K={k}", b)], med[(f"K={k}", b)] / med[("plain", b)]] for b in batches],
            ]
        )
    return results.table(
        ["members", "export s", "SavedModel MiB", *[f"batch {b} ms (ratio)" for b in batches]],
        ["{}", "{:.1f}", "{:.2f}", *["{:.1f} ({:.1f}x)"] * len(batches)],
        rows,
        keys=["plain", *[f"K={k}" for k in ks]],
    )


BATCH = 64  # of the sampling run


def parse_args(argv=None):
    """The command line and the CIFAR-10 images, checked before TensorFlow starts; returns
    ``(args, train, test_images)``."""
    ap = arguments.parser(__file__, __doc__.split("\n")[0])
    ap.add_argument(
        "--ks",
        type=arguments.int_list(1, 10**4, "member counts"),
        default=(1, 8, 32),
        help="member counts (default 1,8,32)",
    )
    ap.add_argument(
        "--batches",
        type=arguments.int_list(1, 10**4, "batch sizes"),
        default=(1, 64, 256),
        help="batch sizes (default 1,64,256)",
    )
    ap.add_argument(
        "--rounds", type=arguments.positive(int, 10**4), default=5, help="timed calls per configuration (default 5)"
    )
    ap.add_argument(
        "--train-size", type=arguments.at_least(BATCH), default=512, help=f"training images of the run (>= {BATCH})"
    )
    ap.add_argument(
        "--out",
        type=arguments.output_directory,
        default=None,
        help="keep the run and exports here (default: temporary)",
    )
    results.add_arguments(ap, "export-latency")
    args = ap.parse_args(argv)
    results.check_target(args.results, args.force)
    hint = " (the CIFAR-10 .npz files: set $TF_VRRE_DATA_DIR)"
    train = arguments.read_npz(TRAIN, ("x", "y"), "training images", hint)
    if len(train["x"]) < args.train_size or len(train["y"]) != len(train["x"]):
        arguments.die(f"--train-size: {TRAIN} holds {len(train['x'])} images, fewer than {args.train_size}")
    test = arguments.read_npz(TEST, ("x",), "test images", hint)["x"]
    if len(test) < max(args.batches):
        arguments.die(f"--batches: {TEST} holds {len(test)} images, fewer than {max(args.batches)}")
    return args, (train["x"][: args.train_size], train["y"][: args.train_size]), test


def main(argv=None):
    args, train, test_images = parse_args(argv)
    target, ks, batches = args.results, list(args.ks), list(args.batches)

    import keras
    import numpy as np
    import tensorflow as tf

    root = args.out or tempfile.mkdtemp(prefix="export_latency-")
    run_dir = os.path.join(root, "run")
    os.makedirs(run_dir, exist_ok=True)
    print(
        f"ResNet-20, CIFAR-10; tensorflow {tf.__version__}, keras {keras.__version__}, "
        f"{os.cpu_count()} CPUs; work dir {root}"
    )
    run = make_run(run_dir, max(ks), train, BATCH)
    configs, exports, plain, plain_seconds = export_models(run_dir, root, ks)
    times = time_calls(configs, run["preprocessing"], test_images, batches, args.rounds)

    med = {key: float(np.median(v)) * 1e3 for key, v in times.items()}
    print(f"\nmedian ms per call over {args.rounds} interleaved rounds (ratio: / plain member)")
    print_table(med, ks, batches, exports, (plain_seconds, dir_mib(plain)))
    table = results_table(med, ks, batches, exports, (plain_seconds, dir_mib(plain)))
    results.write(
        target, {"main": table}, settings={k: v for k, v in vars(args).items() if k not in ("out", "results", "force")}
    )
    if args.out is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
