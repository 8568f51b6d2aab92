"""Writes the docs' benchmark tables and the numbers the README and docs quote from the results
files in ``benchmarks/results/`` (see ``benchmarks/results.py``).

    python benchmarks/render_docs.py           # rewrite every table and quoted number
    python benchmarks/render_docs.py --check   # list what differs from the results files; exit 1 if any

Two things are generated, both edited here, never by hand in the Markdown:

- **Tables**, between markers in a page::

      <!-- results: swap-bias main -->
      (the table of benchmarks/results/swap-bias.json, "tables" -> "main")
      <!-- /results -->

  ``<!-- results: NAME source -->`` renders where the numbers come from (command, date, commit).
- **Quoted numbers** in prose (:data:`CLAIMS`): a sentence with ``{name.key:format}`` fields;
  the sentence is found in its file (line breaks may fall anywhere) and its numbers replaced by
  ``VALUES[name](results)[key]``. Rewording such a sentence means editing its template here.

``tests/test_benchmark_results.py`` runs ``--check``: a page that disagrees with its results file
fails the test suite.

A results file that cannot be used (missing, not valid JSON, a table of the wrong shape, a NaN or
an infinity anywhere, a cell its format cannot show, a quoted number that cannot be computed from
it) is reported in one line naming the page, the results file and the key, and then no page is
written: a NaN never reaches a page, and a refused run changes nothing.  Pages are written
through :mod:`tf_vrre.runs.atomic`.
"""

import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import arguments
import results
from docs_values import VALUES  # the numbers quoted in prose, one function per results file

from tf_vrre.runs import atomic

PROBLEMS = (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError, AttributeError, StopIteration)
"""What reading a results file of the wrong shape raises (a missing key, a string for a number ...)."""

ROOT = results.ROOT
PAGES = [
    "README.md",
    "docs/index.md",
    "docs/getting-started.md",
    "docs/algorithm.md",
    "docs/guides/tuning.md",
    "docs/guides/image-workflow.md",
    "docs/guides/ladder.md",
    "docs/guides/scale.md",
    "docs/guides/is-it-done.md",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "benchmarks").glob("*.md")),
]
REGION = re.compile(
    r"(<!-- results: (?P<name>[\w-]+) (?P<part>[\w-]+) -->\n)(?P<body>.*?)(<!-- /results -->)", re.DOTALL
)
FIELD = re.compile(r"\{(?P<name>[\w-]+)\.(?P<key>\w+)(?::(?P<fmt>[^{}]*))?\}")
NUMBER = r"([-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?)"


# ---------------------------------------------------------------------------------------------
# quoted numbers: (file, sentence template)

CLAIMS = [
    (
        "docs/benchmarks/regimes.md",
        "(mixture error {regimes.mixture_N1e3_tau10_sghmc:.3f} at N = 1e3, the exact weight of the mode it missed;"
        " sine TV {regimes.sine_N1e3_tau1_sghmc:.3f}), and reSGHMC came closer on the mixture at every data size"
        " ({regimes.mixture_N1e3_tau10_resghmc:.3f}, {regimes.mixture_N1e4_tau10_resghmc:.3f} and"
        " {regimes.mixture_N1e5_tau10_resghmc:.3f} at N = 1e3, 1e4 and 1e5) and on the sine at the two smaller"
        " ones ({regimes.sine_N1e3_tau1_resghmc:.3f} and {regimes.sine_N1e4_tau1_resghmc:.3f})",
    ),
    (
        "docs/benchmarks/regimes.md",
        "(reSGHMC's TV {regimes.sine_N1e5_tau1_resghmc:.3f}, as one chain's)",
    ),
    (
        "docs/benchmarks/regimes.md",
        "VR-reSGHMC was closest on the mixture at tau = 10 ({regimes.mixture_N1e3_tau10_vr_resghmc:.3f} against"
        " reSGHMC's {regimes.mixture_N1e3_tau10_resghmc:.3f}) and at tau = 0.1"
        " ({regimes.mixture_N1e3_tau0p1_vr_resghmc:.3f} against {regimes.mixture_N1e3_tau0p1_resghmc:.3f} +-"
        " {regimes.mixture_N1e3_tau0p1_resghmc_se:.3f})",
    ),
    (
        "docs/benchmarks/regimes.md",
        "cold-pair penalty {regimes.mixture_N1e4_tau10_penalty_vr:.3g} against {regimes.mixture_N1e4_tau10_penalty_naive:.3g}"
        " nats on the mixture, {regimes.sine_N1e4_tau1_penalty_vr:.3g} against {regimes.sine_N1e4_tau1_penalty_naive:.3g} on"
        " the sine",
    ),
    (
        "docs/benchmarks/regimes.md",
        "on the mixture VR-reSGHMC never left its starting mode (error {regimes.mixture_N1e5_tau10_vr_resghmc:.3f})",
    ),
    (
        "docs/benchmarks/regimes.md",
        "mini-batch energies was {regimes.sine_N1e3_tau1_penalty_naive:.3g} nats at tau = 1,"
        " {regimes.sine_N1e3_tau0p1_penalty_naive:.3g} at tau = 0.1 and {regimes.sine_N1e3_tau0p01_penalty_naive:.3g}"
        " at tau = 0.01, and control variates cut it to {regimes.sine_N1e3_tau1_penalty_vr:.3g},"
        " {regimes.sine_N1e3_tau0p1_penalty_vr:.3g} and {regimes.sine_N1e3_tau0p01_penalty_vr:.3g}",
    ),
    (
        "docs/benchmarks/regimes.md",
        "(TV {regimes.sine_N1e3_tau0p1_resghmc:.3f} +- {regimes.sine_N1e3_tau0p1_resghmc_se:.3f} at tau = 0.1 against"
        " VR-reSGHMC's {regimes.sine_N1e3_tau0p1_vr_resghmc:.3f} +- {regimes.sine_N1e3_tau0p1_vr_resghmc_se:.3f}",
    ),
    (
        "docs/benchmarks/regimes.md",
        "the ratio was above 1 on {regimes.gain_above_one} of the {regimes.problems} problems"
        " ({regimes.gain_above_one_where}), and VR-reSGHMC was the closest method on {regimes.vr_closest_where_gain}"
        " of them",
    ),
    (
        "docs/benchmarks/regimes.md",
        "mini-batch energies pay {regimes.check_mixture_main_job_penalty_naive:.3g} nats per swap, which shuts the"
        " swaps off, and control variates cut that to {regimes.check_mixture_main_job_penalty_vr:.3g}: the ratio is"
        " {regimes.check_mixture_main_job_gain:.2f}",
    ),
    (
        "docs/benchmarks/regimes.md",
        "was closest at every size and temperature ({regimes.linear_N1e3_tau1_closest} at N = 1e3,"
        " {regimes.linear_N1e4_tau1_closest} at N = 1e4,"
        " {regimes.linear_N1e5_tau1_closest} at N = 1e5)",
    ),
    (
        "docs/benchmarks/regimes.md",
        "W1 {regimes.linear_N1e5_tau1_cycsghmc:.2f} against SGHMC's {regimes.linear_N1e5_tau1_sghmc:.2f}",
    ),
    (
        "docs/benchmarks/regimes.md",
        "mini-batch cold-pair penalty of {regimes.mixture_N1e5_tau10_penalty_naive:.3g} nats predicts",
    ),
    (
        "docs/benchmarks/regimes.md",
        "mode down (error {regimes.mixture_N1e5_tau10_resghmc:.3f} against one chain's {regimes.mixture_N1e5_tau10_sghmc:.3f})",
    ),
    (
        "README.md",
        "({regimes.problems} problems with exact answers, all methods at equal per-example gradient evaluations)"
        " VR-reSGHMC was closest on {regimes.closest_vr_resghmc}, reSGHMC on {regimes.closest_resghmc} and a"
        " single chain on {regimes.closest_one_chain} of them",
    ),
    (
        "README.md",
        "the pilots expected more round trips per gradient evaluation from variance reduction than from mini-batch"
        " energies on {regimes.gain_above_one} of them ({regimes.gain_above_one_where}), and VR-reSGHMC was the"
        " closest method on {regimes.vr_closest_where_gain} of those",
    ),
    (
        "README.md",
        "or within the seeds' noise of it, on {regimes.agree} of {regimes.problems} problems; it recommends"
        " {regimes.check_mixture_main_job} for the mixture study's main job ({regimes.check_mixture_main_job_gain:.2f}x"
        " the round trips per gradient evaluation) and {regimes.check_digits} for digits and"
        " {regimes.check_diabetes} for diabetes, the two small",
    ),
    (
        "docs/benchmarks/regimes.md",
        "This run measured **{regimes.problems} problems with {regimes.seeds} chain seeds each**: {regimes.measured}."
        " The problems were",
    ),
    (
        "docs/benchmarks/regimes.md",
        "or within the seeds' noise of it, on **{regimes.agree} of {regimes.problems}** problems (exactly the"
        " closest on {regimes.exact_pick})",
    ),
    # the main job's time (`tf-vrre mixture`): one measured wall time, wherever a page gives it
    ("README.md", "[about {mixture.minutes:.0f} minutes on 2 CPU cores](docs/benchmarks/mixture.md)"),
    ("docs/getting-started.md", "(about {mixture.minutes:.0f} minutes on a 2-core CPU;"),
    (
        "docs/benchmarks/mixture.md",
        "about {mixture.minutes:.0f} minutes ({mixture.wall_min} min {mixture.wall_sec} s of wall time for the table below)",
    ),
    ("README.md", "reSGLD's cold chain changes mode {mixture.re_changes_min}-{mixture.re_changes_max} times per seed"),
    (
        "README.md",
        "VR-reSGLD's cold chain visits both modes, with left-mode weight {mixture.vr_left:.3f} +-"
        " {mixture.vr_se:.3f} across 3 seeds against the exact {mixture.exact_left:.3f}"
        " ({mixture.vr_z:.1f} standard errors)",
    ),
    (
        "README.md",
        "[{swap-bias.window_z:.0f} standard errors with the paper's rule, {swap-bias.batch_z:+.1f} with ours]",
    ),
    (
        "README.md",
        "a VR-reSGHMC step costs {step-cost-paper-ratio.vr_over_re:.2f}x a reSGHMC step at the paper's refresh ratio",
    ),
    ("README.md", "{step-cost-paper-ratio.vr_over_re_every4:.2f}x when swaps are attempted every 4th step"),
    (
        "README.md",
        "on the mixture, {mixture.sigma2_factor:.0f}x lower variance of the swap energies and"
        " {mixture.vr_changes:.0f} instead of {mixture.re_changes:.0f} mode changes per seed",
    ),
    (
        "README.md",
        "VR-reSGHMC ended {posterior-fidelity.gap_min:.0f}-{posterior-fidelity.gap_max:.0f}% farther from"
        " NUTS than reSGHMC on the same ladder",
    ),
    (
        "README.md",
        "closest to NUTS were {posterior-fidelity.closest_digits} on digits and"
        " {posterior-fidelity.closest_diabetes} on diabetes ({posterior-fidelity.closest_gain_min:.0f}-"
        "{posterior-fidelity.closest_gain_max:.0f}% closer than SGHMC), while cyclical SGHMC and a"
        " five-network deep ensemble ended {posterior-fidelity.baselines_min:.1f}-"
        "{posterior-fidelity.baselines_max:.1f}x as far as SGHMC",
    ),
    (
        "README.md",
        "A first CIFAR-10 run that learns needs about {small-run.cpu_minutes:.0f} minutes of CPU time,"
        " test accuracy {small-run.accuracy:.2f} against chance {small-run.chance:.2f}",
    ),
    (
        "docs/guides/image-workflow.md",
        "what the network predicts at the {small-run.inputs} held-out images (the running BMA's images, stored with"
        " every sample): over the run's {small-run.draws} samples, each half of the run against the other, the"
        " predictive's R-hat has a median of {small-run.rhat_median:.2f} and exceeds 1.1 at"
        " {small-run.above:.0f}% of the images, with an effective sample size of about {small-run.ess:.0f} draws",
    ),
    ("docs/guides/image-workflow.md", "the weight norm's R-hat ({small-run.weight_rhat:.2f}) is shown beside it"),
    (
        "docs/guides/image-workflow.md",
        "cold chain also runs at about {small-run.heat:.0f}x the temperature the config gives it"
        " ({small-run.temperature:.4f} at the end)",
    ),
    (
        "docs/index.md",
        "reSGLD's cold chain changes mode {mixture.re_changes_min}-{mixture.re_changes_max} times per seed",
    ),
    (
        "docs/index.md",
        "left-mode weight {mixture.vr_left:.3f} +- {mixture.vr_se:.3f} against the exact"
        " {mixture.exact_left:.3f} ({mixture.vr_z:.1f} standard errors)",
    ),
    *[
        (page, claim)
        for page in ("docs/index.md", "docs/algorithm.md")
        for claim in (
            "give {mixture.sigma2_factor:.0f}x lower variance of the swap energies",
            "VR-reSGHMC ended {posterior-fidelity.gap_min:.0f}-{posterior-fidelity.gap_max:.0f}% farther from NUTS than"
            " reSGHMC on the same ladder",
        )
    ],
    (
        "docs/algorithm.md",
        "the cold chain changes mode {mixture.vr_changes:.0f} instead of {mixture.re_changes:.0f} times per seed",
    ),
    (
        "docs/benchmarks/posterior-fidelity.md",
        "On digits the tuner measured Lambda = {posterior-fidelity-tuned.digits_re_barrier:.2f} +- {posterior-fidelity-tuned.digits_re_barrier_sd:.2f} (reSGHMC; VR"
        " {posterior-fidelity-tuned.digits_vr_barrier:.2f} +- {posterior-fidelity-tuned.digits_vr_barrier_sd:.2f}) over {posterior-fidelity-tuned.seeds} seeds, and it narrowed the"
        " ladder (hottest {posterior-fidelity-tuned.digits_re_hot_min:.3f}-{posterior-fidelity-tuned.digits_re_hot_max:.3f} instead of 1.061)",
    ),
    (
        "docs/benchmarks/posterior-fidelity.md",
        "brought reSGHMC {posterior-fidelity-tuned.digits_re_change:.0f}% closer to NUTS (TV {posterior-fidelity-tuned.digits_re_diff:.4f} +-"
        " {posterior-fidelity-tuned.digits_re_se:.4f} lower, paired over seeds; VR {posterior-fidelity-tuned.digits_vr_change:.0f}% closer,"
        " {posterior-fidelity-tuned.digits_vr_diff:.4f} +- {posterior-fidelity-tuned.digits_vr_se:.4f}, within noise)",
    ),
    (
        "docs/benchmarks/posterior-fidelity.md",
        "On diabetes it measured Lambda = {posterior-fidelity-tuned.diabetes_re_barrier:.2f} +- {posterior-fidelity-tuned.diabetes_re_barrier_sd:.2f} (VR"
        " {posterior-fidelity-tuned.diabetes_vr_barrier:.2f} +- {posterior-fidelity-tuned.diabetes_vr_barrier_sd:.2f}) and widened the ladder (hottest"
        " {posterior-fidelity-tuned.diabetes_re_hot_min:.3f}-{posterior-fidelity-tuned.diabetes_re_hot_max:.3f}; VR {posterior-fidelity-tuned.diabetes_vr_hot_min:.3f}-"
        "{posterior-fidelity-tuned.diabetes_vr_hot_max:.3f}",
    ),
    (
        "docs/benchmarks/posterior-fidelity.md",
        "left reSGHMC {posterior-fidelity-tuned.diabetes_re_change:.0f}% farther from NUTS (W1 {posterior-fidelity-tuned.diabetes_re_diff:.3f} +-"
        " {posterior-fidelity-tuned.diabetes_re_se:.3f} higher) and VR-reSGHMC {posterior-fidelity-tuned.diabetes_vr_change:.0f}% farther"
        " ({posterior-fidelity-tuned.diabetes_vr_diff:.3f} +- {posterior-fidelity-tuned.diabetes_vr_se:.3f})",
    ),
    (
        "docs/benchmarks/placement.md",
        "One chain per replica moves {placement.bytes_k2:,.0f}x (K = 2) and {placement.bytes_k4:,.0f}x (K = 4)"
        " fewer bytes per step",
    ),
    (
        "docs/benchmarks/placement.md",
        "step-time ratio was {placement.time_k2:.2f} (K = 2) and {placement.time_k4:.2f} (K = 4) in the run above",
    ),
    (
        "docs/guides/ladder.md",
        "run again with {ladder_tuning_mixture_k4_seeds.seeds} seeds: $\\Lambda$"
        " {ladder_tuning_mixture_k4_seeds.barrier:.2f}, rejection {ladder_tuning_mixture_k4_seeds.rejection},"
        " {ladder_tuning_mixture_k4_seeds.trips:.1f} round trips per 1,000 steps and a cold-chain error of"
        " {ladder_tuning_mixture_k4_seeds.error:+.3f} +- {ladder_tuning_mixture_k4_seeds.se:.3f}"
        " ({ladder_tuning_mixture_k4_seeds.z:+.1f} standard errors; per seed the weight ranges from"
        " {ladder_tuning_mixture_k4_seeds.weight_min:.2f} to {ladder_tuning_mixture_k4_seeds.weight_max:.2f})",
    ),
    ("docs/algorithm.md", "A VR-reSGHMC step costs {step-cost-paper-ratio.vr_over_re:.2f}x a reSGHMC step"),
    ("docs/algorithm.md", "(bias {swap-bias.window_z:.0f} standard errors on the held-out mixture)"),
    (
        "docs/benchmarks/mixture.md",
        "VR-reSGLD's cold chain changes mode {mixture.vr_changes_min}-{mixture.vr_changes_max} times per seed",
    ),
    (
        "docs/benchmarks/mixture.md",
        "its mean left weight, {mixture.vr_left:.3f} +- {mixture.vr_se:.3f}, is"
        " {mixture.vr_z:.1f} standard errors from the exact {mixture.exact_left:.3f}, and"
        " its seeds still spread from {mixture.vr_left_min:.2f} to"
        " {mixture.vr_left_max:.2f} after {mixture.steps:,} iterations",
    ),
    ("docs/benchmarks/mixture.md", "With m = 4 it is {mixture.sigma2_factor:.0f}x below reSGLD's"),
    (
        "docs/benchmarks/mixture.md",
        "whose swap energies are {mixture.sigma2_factor:.0f} times noisier, changes mode"
        " {mixture.re_changes_min}-{mixture.re_changes_max} times per seed",
    ),
    (
        "docs/benchmarks/mixture.md",
        "its mean, {mixture.re_left:.3f} +- {mixture.re_se:.3f}, is {mixture.re_z:.1f}"
        " standard errors from the exact weight",
    ),
    (
        "docs/benchmarks/mixture.md",
        "the information of about {mixture.vr_ess:.0f} independent ones (R-hat"
        " {mixture.vr_rhat:.2f}), reSGLD's about {mixture.re_ess:.0f} (R-hat"
        " {mixture.re_rhat:.2f}: the seeds disagree). SGLD's ESS {mixture.sgld_ess:.0f}"
        " and R-hat {mixture.sgld_rhat:.2f}",
    ),
    (
        "docs/guides/is-it-done.md",
        "The four runs stopped at {is-it-done.early_steps:,} steps each are not done (*not yet established*):"
        " the seeds still disagree about the held-out wines ({is-it-done.early_above:.0f}% of them above an R-hat of 1.01)",
    ),
    (
        "docs/guides/is-it-done.md",
        "The four full runs, {is-it-done.full_steps:,} steps each ({is-it-done.full_draws} samples kept per run"
        " after burn-in, about {is-it-done.cpu_minutes:.0f} CPU minutes a run), pass every threshold of the"
        " verdict: a 90th percentile of the predictive's R-hat of {is-it-done.full_rhat_q90:.3f} and an ESS of"
        " {is-it-done.full_ess_q10:.0f} at the tenth percentile. The weight norm's R-hat"
        " ({is-it-done.full_weight_rhat:.2f}), in the table as context, need not pass",
    ),
    (
        "docs/guides/is-it-done.md",
        "a batch of $N / 50$ ({is-it-done.wine_small_batch} wines) at the same step heats it"
        " {is-it-done.wine_heat_ratio:.0f}x more",
    ),
]


def _claim_regex(template, values):
    """The regex of a claim: its text literally (any whitespace run matching any other), a number
    for each numeric field, the shortest text up to the words that follow for a text field."""
    parts, pos = [], 0
    for m, value in zip(FIELD.finditer(template), values):
        parts.append(r"\s+".join(re.escape(w) for w in re.split(r"\s+", template[pos : m.start()])))
        parts.append(r"(.+?)" if isinstance(value, str) else NUMBER)
        pos = m.end()
    parts.append(r"\s+".join(re.escape(w) for w in re.split(r"\s+", template[pos:])))
    return re.compile("".join(parts), re.DOTALL)


def _problem(err):
    """One line of what an exception raised while reading a results file says."""
    if isinstance(err, KeyError):
        return f"no key {err.args[0]!r}" if err.args else "a missing key"
    if isinstance(err, StopIteration):
        return "a row it refers to is missing"
    return f"{type(err).__name__}: {err}"


def _field_value(m, cache):
    """The value of the claim field ``m`` (``{name.key:format}``); :class:`arguments.FileError`
    naming the results file if it cannot be computed or is not a finite number."""
    name, key = m["name"], m["key"]
    where = results.shown(results.path_of(name))
    if name not in cache:
        res = results.load(name)
        try:
            cache[name] = VALUES[name](res) if name in VALUES else res.get("values", {})
        except PROBLEMS as err:
            raise arguments.FileError(
                f"{where}: the quoted numbers cannot be computed from it ({_problem(err)})"
            ) from None
    if key not in cache[name]:
        raise arguments.FileError(f"{where}: no quoted number {key!r}")
    value = cache[name][key]
    if isinstance(value, float) and not math.isfinite(value):
        raise arguments.FileError(f"{where}: the quoted number {name}.{key} is {value}; it is not rendered")
    return value


def render_claims(text, path, cache, problems):
    for file, template in CLAIMS:
        if file != path:
            continue
        fields = list(FIELD.finditer(template))
        try:
            values = [_field_value(f, cache) for f in fields]
            shown = [format(v, f["fmt"] or "") for v, f in zip(values, fields)]
        except arguments.FileError as err:
            problems.append(f"{path}: {err}")
            continue
        except PROBLEMS as err:
            problems.append(f"{path}: the sentence {template!r}: a quoted number cannot be shown ({_problem(err)})")
            continue
        if fields and fields[0].start() == 0 and isinstance(values[0], str):
            problems.append(f"{path}: the sentence {template!r} starts with a text field; start it with words")
            continue
        found = list(_claim_regex(template, values).finditer(text))
        if len(found) != 1:
            problems.append(
                f"{path}: the sentence {template!r} occurs {len(found)} times (expected once); "
                "edit the page or the template in benchmarks/render_docs.py"
            )
            continue
        m = found[0]
        for i in reversed(range(len(values))):  # from the end: earlier offsets stay valid
            text = text[: m.start(i + 1)] + shown[i] + text[m.end(i + 1) :]
    return text


# ---------------------------------------------------------------------------------------------
# tables


def source_line(name, res):
    """Where the numbers of ``name`` come from."""
    commit = (res.get("git_commit") or "unknown")[:7]
    date = str(res["date"])[:10]
    where = f"`benchmarks/results/{name}.json`"
    if res.get("transcribed"):
        return f"The numbers above are in {where}: measured {date}, {res['transcribed']}; recorded at commit {commit}."
    return f"The numbers above are in {where}: `{res['command']}`, {date}, commit {commit}."


TUNED = "posterior-fidelity-tuned"
"""The tuned-ladder rows, measured by their own command; shown in the posterior-fidelity tables
right after the hand-ladder row they start from (unless the main results file has them itself)."""


def _posterior_fidelity_table(res, part):
    import posterior_fidelity_report

    rows = list(res["tables"][part])
    if results.path_of(TUNED).exists():
        for row in results.load(TUNED)["tables"][part]:
            if row["method"] != "nuts" and all(r["method"] != row["method"] for r in rows):  # a full run has them
                base = row["method"].removesuffix("-tuned")
                at = next(i for i, r in enumerate(rows) if r["method"] == base)
                rows.insert(at + 1, row)
    return posterior_fidelity_report.format_table(res["problems"][part]["kind"], rows, res["settings"]["budget"])


def _small_run_table(res, part):
    """``commands``: the commands of ``benchmarks/small_run.py`` as a bash block; else a table."""
    if part == "commands":
        return "```bash\n" + "\n".join(res["commands"].values()) + "\n```"
    return results.markdown(res["tables"][part])


TABLES = {"posterior-fidelity": _posterior_fidelity_table, "small-run": _small_run_table}


NBSP = "\u00a0"
LETTER = re.compile(r"[A-Za-z]")
EXPONENT = re.compile(r"(?<=\d)e(?=[-+]?\d)")


def whole_numbers(table):
    """``table`` (Markdown) with the spaces inside each cell of numbers made non-breaking, so a
    rendered page keeps ``0.022 +- 0.001`` or ``0.82 0.84 0.84`` on one line in a narrow column
    (the theme scrolls a wide table sideways); a cell with words wraps as usual."""

    def cell(text):
        body = text.strip()
        if not body or LETTER.search(EXPONENT.sub("", body)):
            return text
        return text.replace(body, body.replace(" ", NBSP))

    return "\n".join(
        "|".join(cell(c) for c in line.split("|")) if line.startswith("|") else line for line in table.split("\n")
    )


def render_region(name, part, cache_results):
    if name not in cache_results:
        cache_results[name] = results.load(name)
    res = cache_results[name]
    if part == "source":
        return source_line(name, res)
    if name in TABLES:
        body = TABLES[name](res, part)
        return body if body.startswith("```") else whole_numbers(body)
    return whole_numbers(results.markdown(res["tables"][part]))


def render(text, path):
    """``text`` of ``path`` (relative to the repository) with every region and claim rendered, and
    the problems found (a missing or damaged results file, table or sentence; one line each)."""
    problems, loaded, cache = [], {}, {}

    def region(m):
        try:
            body = render_region(m["name"], m["part"], loaded)
        except arguments.FileError as err:
            problems.append(f"{path}: {err}")
            return m[0]
        except PROBLEMS as err:
            where = results.shown(results.path_of(m["name"]))
            part = f"table {m['part']!r}" if m["part"] != "source" else "its source line"
            problems.append(f"{path}: {where}: {part} cannot be rendered ({_problem(err)})")
            return m[0]
        return f"{m[1]}\n{body}\n\n{m[5]}"

    text = REGION.sub(region, text)
    text = render_claims(text, path, cache, problems)
    return text, list(dict.fromkeys(problems))  # one line per problem, however many regions meet it


def main(argv=None):
    p = arguments.parser(__file__, __doc__.split("\n")[0])
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a page differs from its results")
    args = p.parse_args(argv)
    stale, problems, rendered = [], [], {}
    for rel in PAGES:
        path = ROOT / rel
        if not path.exists():
            continue
        old = path.read_text()
        new, found = render(old, rel)
        problems += found
        if new != old:
            stale.append(rel)
            rendered[path] = new
    for line in problems:
        print(line, file=sys.stderr)
    if args.check:
        for rel in stale:
            print(f"{rel}: differs from its results files; run `python benchmarks/render_docs.py`", file=sys.stderr)
        return 1 if stale or problems else 0
    if problems:
        print(
            f"rendered nothing: {len(problems)} problem(s) above; fix the results files and run again", file=sys.stderr
        )
        return 1
    for path, new in rendered.items():
        atomic.write_text(path, new)
    print(f"rendered {len(stale)} file(s): {', '.join(stale) or 'none changed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
