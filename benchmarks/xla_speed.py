"""Per-step cost with and without XLA (``compile(jit_compile=True/False)``), side by side.

Three models, each a 2-chain sampler with control variates: the 1-parameter Gaussian mixture
(``tf_vrre.workflows.gaussian_mixture.target``, batch 100), the ten-line example's MLP (8-16-2, batch 64) and ResNet-8 on CIFAR
images (batch 128; ``../shared/data`` beside the repository or ``--data``, random images if absent).  Each sampler is
built, compiled and warmed up (tracing and XLA compilation excluded), then the two modes are
timed in interleaved rounds; medians over ``--repeats`` rounds.  What ``jit_compile="auto"``
picks for each model is printed beside the numbers (``tf_vrre/xla.py``).

    python benchmarks/xla_speed.py --force     # ~3-5 minutes on 2 cores

The table goes to ``benchmarks/results/xla-speed.json`` (``--results``), which
``python benchmarks/render_docs.py`` puts into ``docs/benchmarks/xla-speed.md``.  The flags and
an existing ``--data`` file are checked before TensorFlow starts (exit status 2 and one line).
"""

import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import arguments
import numpy as np
import results

IMAGES = 640  # CIFAR images of the ResNet-8 problem
DATA = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data", "cifar10", "cifar10_test.npz"
)


def mlp():
    import keras

    inp = keras.Input((8,))
    return keras.Model(inp, keras.layers.Dense(2)(keras.layers.Dense(16, activation="relu")(inp)))


def read_images(path):
    """The first :data:`IMAGES` images and labels of the ``--data`` file, checked (exit 2 with one
    line naming it if it is damaged or too small); ``None`` if there is no such file."""
    if not os.path.exists(path):
        return None
    d = arguments.read_npz(path, ("x", "y"), "--data")
    x, y = d["x"], d["y"].reshape(-1)
    if x.ndim != 4 or x.shape[1:] != (32, 32, 3) or len(y) != len(x) or len(x) < IMAGES:
        arguments.die(
            f"--data: {path}: x has shape {list(x.shape)}, y {len(y)} labels; expected at least {IMAGES} "
            "images [N, 32, 32, 3] and N labels"
        )
    return x[:IMAGES], y[:IMAGES]


def _problems(data_path, images):
    from tf_vrre.workflows.gaussian_mixture import target
    from tf_vrre.workflows.image_classification.models import resnet

    rng = np.random.default_rng(0)
    x = rng.normal(size=(512, 8)).astype("float32")
    mix = target.make_data(1000, seed=0)
    if images is not None:
        xi, yi = images
    else:
        print(f"note: {data_path} not found, random images")
        xi, yi = rng.integers(0, 256, (IMAGES, 32, 32, 3), dtype=np.uint8), rng.integers(0, 10, IMAGES)
    xi = ((xi / 255.0 - 0.47) / 0.25).astype("float32")
    return {
        "1-parameter mixture (`tf_vrre.workflows.gaussian_mixture.target`, batch 100)": (
            target.build_default_model,
            (mix,),
            100,
            500,
            dict(
                nll=target.nll,
                weight_decay=target.weight_decay(),
                dynamics="sgld",
                temperatures=[10.0, 3000.0],
                learning_rates=3e-4,
            ),
        ),
        "MLP 8-16-2 (the ten-line example, batch 64)": (mlp, (x, (x[:, 0] > 0).astype("int64")), 64, 200, {}),
        "ResNet-8 (batch 128, CIFAR images)": (lambda: resnet(8), (xi, yi.astype("int64")), 128, 5, {}),
    }


def _sampler(model_fn, data, jit, kw):
    import keras

    import tf_vrre

    args = dict(
        data_size=len(data[0]),
        num_chains=2,
        temperatures=[0.01, 0.05],
        learning_rates=1e-5,
        seed=0,
        variance_reduction=tf_vrre.ControlVariates(period=16),
    )
    args.update(kw)
    s = tf_vrre.ReplicaExchangeSampler(model_fn, **args)
    s.set_reference_data(data if len(data) > 1 else data[0])
    if s.nll is None:
        s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=jit)
    else:
        s.compile(jit_compile=jit)
    return s


def parse_args(argv=None):
    """The command line, checked before TensorFlow starts (exit 2 and one line for a bad value)."""
    p = arguments.parser(__file__, __doc__.splitlines()[0])
    p.add_argument("--repeats", type=arguments.positive(int, 1000), default=3, help="interleaved rounds (median)")
    p.add_argument("--data", default=DATA, help="CIFAR-10 .npz with x and y (random images if it does not exist)")
    results.add_arguments(p, "xla-speed")
    args = p.parse_args(argv)
    args.images = read_images(args.data)
    results.check_target(args.results, args.force)
    return args


def main(argv=None):
    args = parse_args(argv)
    from tf_vrre.sampler import xla

    results_path = args.results
    rows = []
    for name, (model_fn, data, batch, spe, kw) in _problems(args.data, args.images).items():
        samplers, times = {}, {False: [], True: []}
        for jit in (False, True):
            s = samplers[jit] = _sampler(model_fn, data, jit, kw)
            ds = s.make_dataset(batch, repeat=True, drop_remainder=True)
            s.fit(ds, steps_per_epoch=spe * 2, epochs=1, verbose=0)  # trace, compile, warm up
            samplers[jit] = (s, ds)
        for r in range(args.repeats):
            for jit in (False, True) if r % 2 == 0 else (True, False):
                s, ds = samplers[jit]
                t0 = time.perf_counter()
                s.fit(ds, steps_per_epoch=spe * 4, epochs=1, verbose=0)
                times[jit].append((time.perf_counter() - t0) / (spe * 4) * 1e3)
        auto = xla.resolve_jit_compile("auto", samplers[False][0].chains[0])
        graph, fused = np.median(times[False]), np.median(times[True])
        rows.append((name, graph, fused, fused / graph, "XLA" if auto else "no XLA"))
        print(f"{name}: graph {graph:.3f} ms/step, XLA {fused:.3f} ms/step", flush=True)
    print(f"\n{'model (2 chains, VR)':<34}{'graph ms/step':>14}{'XLA ms/step':>13}{'XLA/graph':>11}  auto picks")
    for name, graph, fused, ratio, auto in rows:
        print(f"{name:<34}{graph:>14.3f}{fused:>13.3f}{ratio:>11.2f}  {auto}")
    table = results.table(
        ["model (2 chains, VR)", "graph ms/step", "XLA ms/step", '`"auto"` picks'],
        ["{}", "{:.3g}", "{:.3g} ({:.2f}x)", "{}"],
        [[name, float(graph), [float(fused), float(ratio)], auto] for name, graph, fused, ratio, auto in rows],
        keys=["mixture", "mlp", "resnet8"][: len(rows)],
    )
    results.write(results_path, {"main": table}, settings={"repeats": args.repeats})


if __name__ == "__main__":
    main()
