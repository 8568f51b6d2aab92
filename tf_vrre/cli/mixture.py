"""``tf-vrre mixture``: the paper's Gaussian-mixture study offline (the main job).

tf-vrre mixture                      # default scenario (N = 1e3); its time: docs/benchmarks/mixture.md
tf-vrre mixture --iterations 20000 --seeds 2 --out runs/quick
tf-vrre mixture --paper              # the paper's Section 5.1 numbers (N = 1e5), reported honestly
tf-vrre mixture --appendix           # the appendix variant (tau = (1, 500), eta = 1e-5)
"""

import atexit
import os
import time

import tf_vrre.cli._args as _args
import tf_vrre.cli._ladder as _ladder

METHODS = (
    "sgld",
    "resgld",
    "vr-resgld",
    "vr-resgld-ladder",
)  # = tf_vrre.workflows.gaussian_mixture.target.ALL_METHODS (no TF import here)
OUTPUTS = ("summary.json", "traces.npz", "traces.png", "density.png", "variance.png", "sensitivity.png")
MAX_DATA_SIZE = 10**7  # the data set and the exact-posterior grid live in memory
MAX_STEPS = 10**9
MAX_LOCATION = 1e6  # |beta_0|, |phi|, |true beta| and sigma, prior sd: energies stay finite in float32

# Scenario presets; an explicit flag overrides its entry.  ``correction_re`` is F for reSGLD
# (``correction`` is F for VR-reSGLD and the ladder).
PRESETS = {
    "default": dict(
        data_size=1000,
        steps=30000,
        lr=3e-4,
        batch=100,
        m=4,
        tau1=10.0,
        tau2=3000.0,
        correction=2.0,
        correction_re=None,
        seeds=3,
        sens_ratios=(0.02, 0.1, 0.5),
        sens_lrs=(1e-5, 1e-4, 1e-3),
    ),
    # Section 5.1: m = 40, tau = (10, 1000), eta = 1e-7, F = 1 (VR) / 100 (reSGLD), N = 1e5.
    # n is not stated in the paper; the authors' C code uses 1000.
    "paper": dict(
        data_size=100000,
        steps=10000,
        lr=1e-7,
        batch=1000,
        m=40,
        tau1=10.0,
        tau2=1000.0,
        correction=1.0,
        correction_re=100.0,
        seeds=2,
        sens_ratios=(0.001, 0.01, 0.1),
        sens_lrs=(1e-8, 1e-7, 1e-6),
    ),
    # Appendix: tau = (1, 500), eta = 1e-5, F = 1 (VR) / 500 (reSGLD).
    "appendix": dict(
        data_size=100000,
        steps=10000,
        lr=1e-5,
        batch=1000,
        m=40,
        tau1=1.0,
        tau2=500.0,
        correction=1.0,
        correction_re=500.0,
        seeds=2,
        sens_ratios=(0.001, 0.01, 0.1),
        sens_lrs=(1e-6, 1e-5, 1e-4),
    ),
}
FULL_GRID = 5  # --full: 5 x 5 sensitivity grid ...
FULL_SEEDS = 10  # ... averaged over the paper's 10 realisations


HELP = "SGLD vs reSGLD vs VR-reSGLD on the 1-D Gaussian mixture (offline)"
DESCRIPTION = (
    "The paper's Section 5.1 study against the exact tempered posterior. "
    "Defaults are the 'default' scenario; --paper / --appendix change them."
)


def add_arguments(m):
    """Flags of ``tf-vrre mixture`` (``--help`` lists them in this order)."""
    _add_scenario_flags(m)
    _add_sampler_flags(m)
    _add_target_flags(m)
    _add_method_flags(m)
    _add_figure_flags(m)
    _add_output_flags(m)


def _add_scenario_flags(m):
    """``--paper`` / ``--appendix``: the presets of :data:`PRESETS` (mutually exclusive)."""
    scen = m.add_mutually_exclusive_group()
    scen.add_argument(
        "--paper",
        action="store_true",
        help="Section 5.1 numbers: N=1e5, m=40, tau=(10,1000), eta=1e-7, F=1 (VR) / 100 (reSGLD)",
    )
    scen.add_argument(
        "--appendix",
        action="store_true",
        help="appendix variant: N=1e5, m=40, tau=(1,500), eta=1e-5, F=1 (VR) / 500 (reSGLD)",
    )


def _add_sampler_flags(m):
    """The data set's size and seed and the sampler's hyperparameters (``None``: from the preset)."""
    m.add_argument(
        "--data-size",
        type=_args.positive(int, MAX_DATA_SIZE),
        help="N (default 1000; 1e5 with --paper/--appendix; at most 1e7)",
    )
    m.add_argument("--data-seed", type=_args.nonnegative_int, default=0, help="seed of the data set (default 0, fixed)")
    m.add_argument(
        "--iterations",
        "--steps",
        dest="steps",
        type=_args.positive(int, MAX_STEPS),
        help="iterations per method and seed (default 3e4; 1e4 with --paper/--appendix)",
    )
    m.add_argument("--lr", type=_args.positive(float), help="eta, multiplies the N-scaled gradient (default 3e-4)")
    m.add_argument("--batch", type=_args.positive(int), help="mini-batch size n (default 100; 1000 for --paper)")
    m.add_argument("--m", type=_args.positive(int), help="variance/snapshot period m (default 4; 40 for --paper)")
    m.add_argument("--tau1", type=_args.positive(float), help="cold temperature (default 10)")
    m.add_argument("--tau2", type=_args.positive(float), help="hot temperature (default 3000)")
    m.add_argument(
        "--correction",
        type=_args.positive(float),
        help="F of VR-reSGLD (and reSGLD unless "
        "--correction-re; default 2, the unbiased value for Gaussian energy noise)",
    )
    m.add_argument("--correction-re", type=_args.positive(float), help="F of reSGLD (default: --correction)")
    m.add_argument("--smoothing", type=_args.positive(float, 1.0), default=0.3, help="gamma in (0, 1] (default 0.3)")


def _add_target_flags(m):
    """The chains' start and the mixture itself (:class:`tf_vrre.workflows.gaussian_mixture.target.Mixture`)."""
    m.add_argument(
        "--initial", type=_args.bounded(MAX_LOCATION), default=30.0, help="beta_0 of every chain (default 30)"
    )
    m.add_argument(
        "--phi",
        type=_args.bounded(MAX_LOCATION),
        default=20.0,
        help="mirror point: components at beta and phi - beta (default 20, the paper's)",
    )
    m.add_argument(
        "--sigma",
        type=_args.positive(float, MAX_LOCATION),
        default=5.0,
        help="component standard deviation (default 5)",
    )
    m.add_argument(
        "--prior-sd", type=_args.positive(float, MAX_LOCATION), default=10.0, help="prior sd of beta (default 10)"
    )
    m.add_argument(
        "--true-beta", type=_args.bounded(MAX_LOCATION), default=-5.0, help="beta the data are drawn at (default -5)"
    )


def _add_method_flags(m):
    """The swap penalty, the chain seeds, the methods compared and how their traces are recorded."""
    m.add_argument(
        "--penalty",
        choices=("auto", "batch", "offset", "window"),
        default="auto",
        help="swap penalty's sigma2 (CorrectedSwap(penalty=...)): auto = batch with VR, the "
        "paper's window without (default auto)",
    )
    m.add_argument("--seed", type=_args.nonnegative_int, default=0, help="first chain seed (default 0)")
    m.add_argument(
        "--seeds", type=_args.positive(int, 1000), help="chain seeds per method: seed, seed+1, ... (default 3)"
    )
    m.add_argument(
        "--methods",
        default="sgld,resgld,vr-resgld",
        help="comma-separated subset of sgld,resgld,vr-resgld,vr-resgld-ladder",
    )
    m.add_argument(
        "--ladder-chains",
        type=_args.positive(int, 64),
        default=4,
        help="K of vr-resgld-ladder (geometric tau1..tau2, default 4)",
    )
    m.add_argument(
        "--burn-in", type=_args.fraction(), default=0.1, help="fraction of each trace discarded (default 0.1)"
    )
    m.add_argument("--record-every", type=_args.positive(int), default=10, help="record beta, sigma2 every k steps")


def _add_figure_flags(m):
    """The extra runs behind ``variance.png`` and ``sensitivity.png``."""
    m.add_argument(
        "--variance-m",
        type=_args.positive_list(int, MAX_STEPS),
        default=(10, 40, 200),
        help="extra VR-reSGLD periods m for variance.png (default 10,40,200)",
    )
    m.add_argument(
        "--variance-steps",
        type=_args.positive(int, MAX_STEPS),
        default=4000,
        help="iterations of each extra variance.png run (default 4000)",
    )
    m.add_argument(
        "--sens-ratios", type=_args.positive_list(float, 1.0), help="n/N values of sensitivity.png, in (0, 1]"
    )
    m.add_argument("--sens-lrs", type=_args.positive_list(float), help="eta values of sensitivity.png")
    m.add_argument("--sens-seeds", type=_args.positive(int, 1000), help="seeds averaged per grid point (default 2)")
    m.add_argument(
        "--sens-steps",
        type=_args.positive(int, MAX_STEPS),
        default=300,
        help="iterations per sensitivity run; sigma2 averaged over the second half (default 300)",
    )
    m.add_argument("--full", action="store_true", help="5 x 5 sensitivity grid averaged over 10 seeds")


def _add_output_flags(m):
    """Where the results go, the ladder report's flags and how much is printed."""
    m.add_argument(
        "--out",
        default=None,
        help="output directory (default runs/mixture-<timestamp>); results are written as each method / seed finishes",
    )
    m.add_argument("--overwrite", action="store_true", help="replace the results of an earlier study in --out")
    _ladder.add_mixture_arguments(m)
    m.add_argument("--quiet", action="store_true", help="no progress on stderr and no set-up lines: only the table")


def _settings(args):
    """Fills unset flags from the chosen preset; returns the scenario name."""
    scenario = "paper" if args.paper else "appendix" if args.appendix else "default"
    preset = PRESETS[scenario]
    for key, value in preset.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    if args.correction_re is None:
        args.correction_re = args.correction
    if args.sens_seeds is None:
        args.sens_seeds = FULL_SEEDS if args.full else 2
    if args.full:
        lo_r, hi_r = min(args.sens_ratios), max(args.sens_ratios)
        lo_l, hi_l = min(args.sens_lrs), max(args.sens_lrs)
        import numpy as np

        args.sens_ratios = tuple(float(v) for v in np.geomspace(lo_r, hi_r, FULL_GRID))
        args.sens_lrs = tuple(float(v) for v in np.geomspace(lo_l, hi_l, FULL_GRID))
    return scenario


def check(args):
    """Fills the preset, validates flags that depend on each other and ``--out``, then takes the
    lock of ``--out`` (:func:`tf_vrre.runs.locks.lock_run`: one study writes a directory at a time;
    a second one is refused here, before TensorFlow starts) and checks the directory again under it
    (no TensorFlow)."""
    args.scenario = _settings(args)
    _validate(args)
    args.out = args.out or os.path.join("runs", "mixture-" + time.strftime("%Y%m%d-%H%M%S"))
    _args.writable(args.out)
    _args.fresh_directory(args.out, OUTPUTS, args.overwrite)
    _lock_out(args)
    _args.fresh_directory(args.out, OUTPUTS, args.overwrite)  # again under the lock: nothing written meanwhile


def _lock_out(args):
    """This process becomes the one writer of ``--out`` (created), until the study ends: exit 2 if
    another process (a study, ``tf-vrre train``) holds it."""
    from tf_vrre.runs import locks, run_json

    created = locks.make_run_directory(args.out)
    try:
        locks.lock_run(args.out, mark=False)  # the pid is written when the study starts (run)
    except run_json.RunDirError as err:  # RunLockedError
        _args.die(f"--out: {err}")
    except OSError as err:  # a link or a special file at --out/.lock
        _args.die(f"--out: cannot lock {args.out!r}: {err}")
    atexit.register(locks.give_back_run, args.out, created)  # a study refused after this leaves no directory


def _validate(args):
    if args.tau1 >= args.tau2:
        _args.die(f"--tau1: must be < --tau2 (got {args.tau1:g} >= {args.tau2:g})")
    if args.batch > args.data_size:
        _args.die(f"--batch: must be <= --data-size ({args.data_size}), got {args.batch}")
    methods = tuple(t.strip() for t in args.methods.split(",") if t.strip())
    bad = [t for t in methods if t not in METHODS]
    if not methods or bad or len(set(methods)) != len(methods):
        _args.die(f"--methods: must be distinct names from {','.join(METHODS)}, got {args.methods!r}")
    args.methods = methods
    if "vr-resgld-ladder" in methods and args.ladder_chains < 3:
        _args.die(f"--ladder-chains: must be >= 3, got {args.ladder_chains}")
    _check_temperatures(args, methods)
    if args.steps < 20 * args.record_every:
        _args.die(f"--iterations: must be >= 20 * --record-every ({20 * args.record_every}), got {args.steps}")
    if args.sens_steps < 2 * args.m:
        _args.die(f"--sens-steps: must be >= 2 * --m ({2 * args.m}), got {args.sens_steps}")
    _check_step_sizes(args)
    _ladder.check_mixture(args)


def _check_temperatures(args, methods):
    """The sampler's rule on the chains' temperatures (:func:`tf_vrre.numerics.check_hyperparameter`):
    (tau1, tau2), and the geometric ladder of ``vr-resgld-ladder``, strictly increasing in float32."""
    import numpy as np

    from tf_vrre import numerics

    ladders = [("--tau1 / --tau2", [args.tau1, args.tau2])]
    if "vr-resgld-ladder" in methods:  # as tf_vrre.workflows.gaussian_mixture.target.ladder
        ladders.append(
            (
                "--tau1 / --tau2 / --ladder-chains",
                [float(t) for t in np.geomspace(args.tau1, args.tau2, args.ladder_chains)],
            )
        )
    for flags, taus in ladders:
        try:
            numerics.check_hyperparameter("temperatures", taus, num_chains=len(taus), name="the chains' temperatures")
        except ValueError as err:
            _args.die(f"{flags}: {err}")


def _check_step_sizes(args):
    """The numbers the SGLD steps compute with, before TensorFlow (:mod:`tf_vrre.workflows.step_bounds`):
    the mixture's energy ``U`` has curvature at most ``N / sigma^2 + 1 / prior_sd^2`` (each datum's
    negative log mixture density at most ``1 / sigma^2``), so a step ``eta`` at or beyond
    ``2 / curvature`` makes the chains diverge; and the hottest chain's noise variance
    ``2 eta tau2`` must be finite in float32."""
    from tf_vrre.numerics import F32_TINY
    from tf_vrre.workflows import step_bounds  # numpy only

    curvature = args.data_size / args.sigma**2 + 1.0 / args.prior_sd**2
    limit = min(step_bounds.prior_stability_limit(curvature), step_bounds.noise_variance_limit(args.tau2))
    why = (
        f"eta * (N / sigma^2 + 1 / prior_sd^2) must be < 2 with --data-size {args.data_size}, --sigma "
        f"{args.sigma:g}, --prior-sd {args.prior_sd:g}, or the chains diverge, and 2 eta --tau2 ({args.tau2:g}) "
        "must be finite in float32"
    )
    for flag, lrs in (("--lr", [args.lr]), ("--sens-lrs", args.sens_lrs)):
        for lr in lrs:
            try:
                step_bounds.within(flag, lr, F32_TINY, limit, why, hi_open=True)
            except step_bounds.BoundError as err:
                _args.die(f"{flag}: {str(err).removeprefix(flag + ' ')}")


def _fmt(value, spec, none="-"):
    return none if value is None else format(value, spec)


def _print_table(study, results, factor, variance_m, wrote):
    a = study.args
    print(
        f"\n{len(study.seeds)} chain seeds; mean +- standard error across seeds; weights after {a.burn_in:.0%} burn-in"
    )
    print(
        f"{'method':<17}{'swaps':>8}{'accept':>9}{'mean sigma2':>13}{'mode changes':>14}"
        f"{'left-mode weight':>19}{'KS':>16}{'ESS(beta)':>10}{'R-hat':>7}{'time':>8}"
    )
    for method, r in results.items():
        w = f"{r['left_mode_weight']:.3f} +- {_fmt(r['left_mode_weight_se'], '.3f')}"
        ks = f"{r['ks']:.3f} +- {_fmt(r['ks_se'], '.3f')}"
        print(
            f"{method:<17}{_fmt(r['swaps'], '.0f'):>8}{_fmt(r['accept_rate'], '.4f'):>9}"
            f"{_fmt(r['mean_sigma2'], '.4g'):>13}{r['mode_changes']:>14.1f}{w:>19}{ks:>16}"
            f"{_fmt(r['beta_ess'], '.0f'):>10}{_fmt(r['beta_rhat'], '.2f'):>7}{r['seconds']:>7.1f}s"
        )
    print(f"{'exact':<17}{'':>8}{'':>9}{'':>13}{'':>14}{study.exact_left:>19.3f}{0:>16.3f}")
    print(
        f"ESS(beta), R-hat: tfp.mcmc on the recorded cold-chain beta (every {a.record_every} steps) after "
        "burn-in, seeds as chains split in halves"
    )
    if factor is not None:
        print(f"variance reduction factor (reSGLD sigma2 / VR sigma2): {factor:.1f}")
    if variance_m:
        print("VR-reSGLD mean sigma2 by m: " + ", ".join(f"m={k}: {v:.4g}" for k, v in variance_m.items()))
    print(wrote)


def run(args):
    """Runs the study (after :func:`check`, holding the lock of ``--out``); writes results as each
    method / seed finishes; releases the lock at the end."""
    from tf_vrre.runs import locks

    try:
        locks.lock_run(args.out)  # still this process's directory? its pid goes into the lock file now
        return _run(args)
    finally:
        locks.unlock_run(args.out)


def _run(args):
    """The body of :func:`run`."""
    t_start = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    from tf_vrre.workflows.gaussian_mixture.study import Study  # TensorFlow: after the flags were checked

    study = Study(args, args.scenario, args.out)
    if not args.quiet:
        study.describe()
    runs = {}
    try:
        study.main_runs(runs, lambda r: study.save_partial(r, time.perf_counter() - t_start))
        results = {method: study.aggregate(method, rs) for method, rs in runs.items()}
        factor = None
        if "resgld" in results and "vr-resgld" in results and results["vr-resgld"]["mean_sigma2"]:
            factor = results["resgld"]["mean_sigma2"] / results["vr-resgld"]["mean_sigma2"]
        curves, variance_m = study.variance_runs(runs)
        sens = study.sensitivity()
        study.figures(runs, curves, sens)
    except KeyboardInterrupt:
        if runs:
            study.save_partial(runs, time.perf_counter() - t_start, status="interrupted")
        raise
    wall = time.perf_counter() - t_start
    _args.write_json(os.path.join(args.out, "summary.json"), study.summary(results, factor, variance_m, sens, wall))
    _print_table(
        study,
        results,
        factor,
        variance_m,
        f"wall time {wall:.1f}s; wrote summary.json, traces.npz, traces.png, density.png, "
        f"{'variance.png, ' if curves else ''}sensitivity.png to {args.out}",
    )
    _ladder.print_tables(_ladder.study_records(args.out), title=lambda p: os.path.basename(os.path.dirname(p)))
    return 0
