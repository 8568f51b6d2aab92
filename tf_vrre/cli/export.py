"""``tf-vrre export``: the posterior's Bayesian model average as a TF Serving SavedModel.

tf-vrre export --run runs/cifar10 --out serving/cifar10                   # version 1, 2, ...
tf-vrre export --run runs/cifar10 --out serving/cifar10 --max-members 16 --version 7
tf-vrre export --samples runs/toy/samples --out serving/toy --temperature 2
"""

import os

import tf_vrre.cli._args as _args

HELP = "export the samples' model average as one SavedModel for TF Serving"
DESCRIPTION = (
    "Writes OUT/<version>/ (saved_model.pb, variables/, export.json): the Bayesian model average of the "
    "collected samples, servable by TF Serving or tf.saved_model.load without tf_vrre. Signatures: "
    "serving_default (probabilities, predictive_entropy, predicted_class) and members (also "
    "member_probabilities, expected_entropy, mutual_information); runs with run.json take raw uint8 "
    "images (serving_float32 / members_float32: float32) with the training normalisation inside the "
    "graph; they take raw pixels (0..255) and also return input_in_unit_range (true for an image whose pixels "
    "are all within [0, 1]: scaled to 0..1 by mistake). Every signature checks its input: another rank, size, "
    "channel count or dtype, NaN or Inf in a float input, and float pixels outside [0, 255] get an "
    "InvalidArgument error; an empty batch gets empty outputs. Versions are "
    "never overwritten; a failed or killed export leaves no version behind."
)


def add_arguments(p):
    """Flags of ``tf-vrre export``."""
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--run", metavar="RUN", help="run directory: RUN/run.json (preprocessing) and RUN/samples")
    src.add_argument(
        "--samples",
        metavar="DIR",
        help="SampleCollector directory (manifest.json, model.json); the model's own input signature",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="TF Serving model base path; writes DIR/<version>/")
    p.add_argument(
        "--version",
        type=_args.positive(int),
        metavar="N",
        help="version number (default: highest existing + 1); an existing version is an error",
    )
    p.add_argument(
        "--max-members",
        type=_args.positive(int),
        metavar="K",
        help="at most K members, spread evenly over the chain (default: every sample)",
    )
    p.add_argument(
        "--temperature",
        type=_args.positive(float),
        default=1.0,
        metavar="T",
        help="divide the members' logits by T before the softmax (default 1)",
    )
    p.add_argument("--quiet", action="store_true", help="print only the line naming the exported version")


def check(args):
    """Source (``run.json`` too), sample files, ``--out`` and ``--version``, before TensorFlow starts
    (exit 2 on a bad one)."""
    from tf_vrre.runs import samples
    from tf_vrre.serving import checks

    if args.run is not None:
        if not os.path.isfile(os.path.join(args.run, "run.json")):
            _args.die(f"--run: {args.run!r}: no run.json there (for a plain sample directory use --samples DIR)")
        try:
            checks.read_run(args.run)  # format, preprocessing, input shape
        except ValueError as err:
            _args.die(f"--run: {err}")
        sample_dir = os.path.join(args.run, "samples")
    else:
        if not os.path.isfile(os.path.join(args.samples, "manifest.json")):
            _args.die(f"--samples: {args.samples!r}: no manifest.json there (not a SampleCollector directory)")
        sample_dir = args.samples
    if os.path.isfile(os.path.join(sample_dir, "manifest.json")):
        try:
            samples.load_samples(sample_dir).check_finite()  # structure, sizes, checksums, shapes, finite weights
        except ValueError as err:
            _args.die(
                f"{'--run' if args.run is not None else '--samples'}: {err}; "
                f"{samples.repair_hint(args.run if args.run is not None else sample_dir)}"
            )
    _args.writable(args.out)
    if args.version is not None and os.path.exists(os.path.join(args.out, str(args.version))):
        _args.die(
            f"--version: {args.version}: {os.path.join(args.out, str(args.version))} exists "
            "(exported versions are never overwritten)"
        )
    try:
        checks.check_out(args.out)
        checks.choose_version(args.out, args.version)
        checks.check_temperature(args.temperature)
    except ValueError as err:
        _args.die(f"--out / --version / --temperature: {err}")
    from tf_vrre.runs import locks

    args.run_lock = locks.share_run(args.run if args.run is not None else sample_dir)  # no train / repair meanwhile


def run(args):
    """Exports (after :func:`check`); prints version path, member count, export time and size."""
    from tf_vrre.serving.export import export_ensemble

    try:
        info = export_ensemble(
            args.run if args.run is not None else args.samples,
            args.out,
            version=args.version,
            max_members=args.max_members,
            temperature=args.temperature,
        )
    except ValueError as err:
        message = str(err)
        if "model=<built keras.Model" in message:
            message += " (the CLI cannot take a model object)"
        _args.die(f"--run / --samples: {message}")
    print(
        f"exported {info['members']} of {info['samples_available']} samples (steps {_span(info['steps'])}) "
        f"to {info['path']}"
    )
    if args.quiet:
        return 0
    print(
        f"  export time {info['export_seconds']:.1f} s, SavedModel size {info['bytes'] / 2**20:.2f} MiB, "
        f"temperature {info['temperature']:g}, input {info['input']['name']} "
        f"{'/'.join(info['input']['dtypes'])} {info['input']['shape']}"
    )
    print(f"  signatures: {', '.join(info['signatures'])}")
    return 0


def _span(steps):
    return f"{steps[0]}..{steps[-1]}" if len(steps) > 1 else str(steps[0])
