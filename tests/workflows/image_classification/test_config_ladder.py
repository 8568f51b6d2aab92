"""The ``[ladder]`` table: K chains, their ladder, DEO pairs and the tuned ladder in a method config,
checked before TensorFlow starts (each error names the key); one chain per replica checked against
the config and the strategy's name."""

import pytest

from tf_vrre.workflows.image_classification import config, config_ladder, config_schedule, placement_checks, planning


def resolve(name, **overrides):
    return config.resolve(
        config.apply_overrides(config.load(name), {k.replace("__", "."): v for k, v in overrides.items()})
    )


def test_without_a_ladder_table_the_papers_two_chains():
    cfg = resolve("vr-resghmc")
    assert cfg.ladder is None and cfg.num_chains == 2 and "ladder" not in cfg.to_dict()
    assert config_ladder.rungs(cfg) == ((1.0, 5.0), (1.0, 1.5))
    assert config_ladder.rungs(resolve("msgd")) == ((1.0,), (1.0,)) and resolve("msgd").num_chains == 1


def test_chains_alone_give_a_geometric_ladder_between_the_two_multipliers():
    cfg = resolve("vr-resghmc", ladder__chains=4)
    t, lr = config_ladder.rungs(cfg)
    assert cfg.num_chains == 4 and t[0] == 1.0 and t[-1] == 5.0 and lr[0] == 1.0 and lr[-1] == 1.5
    assert t == pytest.approx([5 ** (k / 3) for k in range(4)], rel=1e-15)
    assert lr == pytest.approx([1.5 ** (k / 3) for k in range(4)], rel=1e-15)
    two = resolve("vr-resghmc", ladder__chains=2)  # K = 2: the multipliers' two chains
    assert config_ladder.rungs(two) == config_ladder.rungs(resolve("vr-resghmc"))
    recorded = cfg.to_dict()["ladder"]
    assert recorded["temperatures"] == list(t) and recorded["pairs"] == "random" and "tune_bounds" not in recorded
    assert config.resolve(cfg.to_dict()) == cfg  # run.json's config resolves to the same config


def test_lists_set_k_and_the_hottest_multiples():
    cfg = resolve("vr-resghmc", ladder__temperatures=[1, 2, 4, 8], ladder__learning_rates=[1, 1, 1.2, 1.1])
    assert cfg.num_chains == 4 and cfg.sampler.hot_temperature_multiplier == 8.0
    assert cfg.sampler.hot_lr_multiplier == 1.1 and config_ladder.rungs(cfg)[1] == (1.0, 1.0, 1.2, 1.1)
    assert config.resolve(cfg.to_dict()) == cfg


def test_the_shipped_k_chain_config_and_more_chains():
    cfg = resolve("vr-resghmc-ladder")
    assert cfg.method == "vr-resghmc" and cfg.num_chains == 4 and config_ladder.tuned(cfg)
    assert cfg.ladder.pairs == "deo" and cfg.ladder.tune_bounds is None and cfg.sampler.temperature_annealing == 1.0
    eight = resolve("vr-resghmc-ladder", ladder__chains=8, training__epochs=10)  # the TPU v2-8 command, short
    v = config_schedule.schedule_values(eight, data_size=20000, steps_per_epoch=78)
    assert eight.num_chains == 8 and v["tune_epochs"] == 2 and v["tune_steps"] == 156  # 100 of 500 epochs, stretched
    assert planning.check_numbers(eight, 20000)[1] > 0
    kept = config.resolve(
        config_schedule.keep_rates(config.apply_overrides(config.load("vr-resghmc-ladder"), {"training.epochs": 10}))
    )
    assert kept.ladder.tune_epochs == 2 and kept.samples.burn_in_epochs == 6


@pytest.mark.parametrize(
    "name, overrides, message",
    [
        (
            "vr-resghmc",
            {"ladder.chains": 1},
            "config key ladder.chains must be an integer in [2, 1024], got 1 (override)",
        ),
        (
            "vr-resghmc",
            {"ladder.temperatures": [1, 2, 2]},
            "config key ladder.temperatures must be a list of at least 2 numbers > 0 (float32), the first 1, strictly "
            "increasing, got [1, 2, 2] (override)",
        ),
        ("vr-resghmc", {"ladder.temperatures": [2, 4]}, "config key ladder.temperatures must be a list of at least 2"),
        (
            "vr-resghmc",
            {"ladder.temperatures": [1, 1.00000001]},
            "config key ladder.temperatures: the chains' temperatures (sampler.temperature times ladder.temperatures) "
            "must be strictly increasing in float32",
        ),
        (
            "vr-resghmc",
            {"ladder.chains": 3, "ladder.temperatures": [1, 2, 4, 8]},
            "config key ladder.chains must be 4, the number of entries of ladder.temperatures (one per chain), got 3",
        ),
        (
            "vr-resghmc",
            {"ladder.learning_rates": [1.2, 1.3]},
            "config key ladder.learning_rates must be a list of at least 2 numbers > 0 (float32), the first 1, got",
        ),
        (
            "vr-resghmc",
            {"ladder.temperatures": [1, 2, 4, 8], "ladder.learning_rates": [1, 1.2, 1.3]},
            "config key ladder.learning_rates must have ladder.chains = 4 entries (one per chain), got 3",
        ),
        (
            "vr-resghmc",
            {"ladder.chains": 4, "ladder.deo_window": 0},
            "config key ladder.deo_window must be an integer in [1,",
        ),
        (
            "vr-resghmc",
            {"ladder.chains": 4, "ladder.deo_window": 4},
            'config key ladder.deo_window must be 1 with ladder.pairs = "random"',
        ),
        ("vr-resghmc-ladder", {"ladder.chains": 2}, "config key ladder.chains must be >= 3 to tune the ladder"),
        (
            "vr-resghmc",
            {"ladder.tune_epochs": 100},
            "config key ladder.tune_epochs must be 0 with ladder.chains = 2: tuning places the inner temperatures",
        ),
        (
            "vr-resghmc",
            {"ladder.chains": 4, "ladder.tune_epochs": 100},
            "config key sampler.temperature_annealing must be 1 (a fixed temperature) when the ladder is tuned",
        ),
        (
            "vr-resghmc",
            {"ladder.chains": 4, "ladder.tune_bounds": [1, 20]},
            "config key ladder.tune_bounds applies only when the ladder is tuned (ladder.tune_epochs > 0, here 0)",
        ),
        (
            "vr-resghmc-ladder",
            {"ladder.tune_bounds": [2, 20]},
            "config key ladder.tune_bounds must be [low, high] with 0 < low <= 1 < high",
        ),
        (
            "vr-resghmc",
            {"sampler.hot_temperature_multiplier": 5.0, "ladder.temperatures": [1, 2, 4, 8]},
            "config key sampler.hot_temperature_multiplier must equal the last entry of ladder.temperatures (8.0",
        ),
        (
            "vr-resghmc-ladder",
            {"training.epochs": 2},
            "config key ladder.tune_epochs (100 of the 500-epoch schedule) is no epoch of this 2-epoch run: raise it "
            "to at least 125",
        ),
        (
            "vr-resghmc-ladder",
            {"ladder.tune_epochs": 400},
            "config key ladder.tune_epochs (400 of the 500-epoch schedule, 400 of this run) must be <= "
            "samples.burn_in_epochs (300, 300 of this run)",
        ),
        ("msgd", {"ladder.chains": 4}, "config key ladder.chains does not apply to method 'msgd'"),
    ],
)
def test_bad_ladders_are_refused_naming_the_key(name, overrides, message):
    with pytest.raises(config.ConfigError) as err:
        config.resolve(config.apply_overrides(config.load(name), overrides))
    assert message in str(err.value), str(err.value)


def test_tuning_is_checked_against_the_runs_steps():
    """The tuning phase in steps: its first round fits in it, and it ends before the first sample
    (a cyclical schedule samples in the sampling phase of its first cycle)."""
    cfg = resolve("vr-resghmc-ladder", training__epochs=10, ladder__tune_first_round=500)
    with pytest.raises(ValueError, match=r"ladder.tune_first_round \(500\) must be <= the tuning phase's 156 steps"):
        planning.check_numbers(cfg, 20000)
    cyclical = resolve(
        "cvr-resghmc", ladder__chains=4, ladder__tune_epochs=400, training__epochs=10, samples__thinning=16
    )
    with pytest.raises(
        ValueError,
        match=r"ladder.tune_epochs \(400: 624 steps of this run\) must end before the "
        r"first sample, at step 288 \(samples.thinning 16, cycle position > samples.cycle_threshold 0.7",
    ):
        planning.check_numbers(cyclical, 20000)
    values, count = planning.check_numbers(
        resolve("cvr-resghmc", ladder__chains=4, ladder__tune_epochs=100, training__epochs=10), 20000
    )
    assert values["tune_steps"] == 156 and count > 0


@pytest.mark.parametrize(
    "method, overrides, strategy, cpu, message",
    [
        ("sghmc", {}, "mirrored", None, "chain-per-replica runs one chain per device; method 'sghmc' has one chain"),
        (
            "vr-resghmc",
            {"model.kwargs.synchronized_bn": True},
            "mirrored",
            None,
            "model.kwargs.synchronized_bn = true would average BatchNorm statistics across replicas",
        ),
        ("vr-resghmc", {}, "default", None, "--strategy default is one device; name a strategy with 2 replicas"),
        ("vr-resghmc", {}, "auto", None, "--strategy auto may pick one device"),
        (
            "vr-resghmc-ladder",
            {},
            "mirrored",
            2,
            "--chains 4 needs 4 devices, --cpu-devices gives 2; use --cpu-devices 4",
        ),
    ],
)
def test_one_chain_per_replica_is_checked_without_tensorflow(method, overrides, strategy, cpu, message):
    cfg = resolve(method, **{k.replace(".", "__"): v for k, v in overrides.items()})
    with pytest.raises(ValueError) as err:
        placement_checks.check_placement(cfg, "chain_per_replica", strategy, cpu, flags=True)
    assert message in str(err.value), str(err.value)
    placement_checks.check_placement(cfg, "replicated", strategy, cpu, flags=True)  # data parallel: anything goes


def test_replica_counts_in_the_words_of_each_interface():
    cfg = resolve("vr-resghmc-ladder")
    assert placement_checks.replica_mismatch(cfg, 4, "mirrored") is None
    assert placement_checks.replica_mismatch(cfg, 8, "tpu", flags=True) == (
        "chain-per-replica runs one chain per replica: --chains 4 needs 4 replicas, --strategy tpu has 8; use "
        "--chains 8 or a strategy over 4 devices"
    )
    assert placement_checks.replica_mismatch(cfg, 1, "mirrored", "CPU:0") == (
        "placement='chain_per_replica' runs one chain per replica: ladder.chains 4 needs 4 replicas, "
        "strategy='mirrored' has 1 (CPU:0); use a strategy over 4 devices (logical CPU devices 4 to try it on a CPU)"
    )


def test_placement_names_agree_with_the_sampler():
    from tf_vrre.sampler import placements

    assert placement_checks.PLACEMENTS == placements.PLACEMENTS
