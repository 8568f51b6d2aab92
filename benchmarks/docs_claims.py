"""The sentences of the README and the docs that quote benchmark numbers: ``CLAIMS``, a list of
``(page, template)``, each template a sentence with ``{name.key:format}`` fields whose values
``benchmarks/docs_values.py`` computes from ``benchmarks/results/<name>.json``.
``benchmarks/render_docs.py`` finds each sentence in its page (line breaks may fall anywhere)
and rewrites its numbers; rewording a sentence on a page means editing its template here.
"""

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
        "The pilot's mini-batch cold-pair penalty there, {regimes.mixture_N1e5_tau10_penalty_naive:.3g} nats, is a mean",
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
    (
        "docs/benchmarks/regimes.md",
        "recommended one chain, which missed the second mode (error {regimes.mixture_N1e5_tau10_sghmc:.3f} against"
        " reSGHMC's {regimes.mixture_N1e5_tau10_resghmc:.3f})",
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
        " ladder (hottest {posterior-fidelity-tuned.digits_re_hot_min:.3f}-{posterior-fidelity-tuned.digits_re_hot_max:.3f} instead of 1.061,",
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
