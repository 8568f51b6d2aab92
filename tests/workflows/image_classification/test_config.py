"""Method configs: the six shipped files as frozen dataclasses, schema errors naming the key and the
file, overrides, the stretched schedule, and the numbers the sampler computes with (float32)."""

import dataclasses
import json
import os

import pytest
from _paths import FIXTURES

from tf_vrre.workflows.image_classification import config, config_schedule, config_values, sampler_numbers

SHIPPED = config.METHODS + ("vr-resghmc-ladder",)  # one config per method, and the K-chain tuned ladder


def test_shipped_configs_resolve_with_the_papers_numbers():
    assert set(config.available()) == set(SHIPPED)
    assert sorted(os.listdir(config.CONFIG_DIR)) == sorted(f"{m}.toml" for m in SHIPPED)
    for method in config.METHODS:
        cfg = config.resolve(config.load(method))
        assert cfg.ladder is None and "ladder" not in cfg.to_dict()  # the paper's two chains, recorded as before
        assert cfg.num_chains == (2 if method in config.REPLICA else 1)
        assert cfg.method == method and cfg.data.batch_size == 256
        v = config_schedule.schedule_values(cfg, data_size=50000, steps_per_epoch=195)
        expect_eta = 1e-5 if method in config.CYCLICAL else 2e-6  # paper: eta = 2e-6; cyclical eta_0 = 1e-5
        assert v["eta"] == pytest.approx(expect_eta, rel=1e-12)
        assert v["weight_decay"] == pytest.approx(25.0)  # the paper's prior precision at N = 50,000
        assert (cfg.swap is not None) == (method in config.REPLICA) == ("swap" in cfg.to_dict())
        assert (cfg.variance_reduction is not None) == (method in config.VARIANCE_REDUCED)
    vr = config.resolve(config.load("vr-resghmc"))
    assert vr.training.epochs == 500 and vr.variance_reduction.period == 392
    assert vr.swap.correction == 1.5e5 and vr.sampler.hot_temperature_multiplier == 5.0
    v = config_schedule.schedule_values(vr, 50000, 196)
    assert v["lr_constant_epochs"] == 200 and v["burn_in_epochs"] == 300 and v["lr_decay"] == pytest.approx(0.984)
    assert config.resolve(config.load("cycsghmc")).training.epochs == 1000
    assert config.resolve(config.load("cycsghmc")).sampler.cycles == 5
    assert config.resolve(config.load(os.path.join(config.CONFIG_DIR, "msgd.toml"))).method == "msgd"  # by path


def test_epochs_stretch_the_schedule():
    cfg = config.resolve(config.apply_overrides(config.load("vr-resghmc"), {"training.epochs": 50}))
    v = config_schedule.schedule_values(cfg, data_size=5000, steps_per_epoch=19)
    assert v["scale"] == 0.1 and v["lr_constant_epochs"] == 20 and v["burn_in_epochs"] == 30
    assert v["lr_decay"] == pytest.approx(0.984**10) and v["temperature_annealing"] == pytest.approx(1.02**10)
    # the same total decay / annealing over the run as the 500-epoch recipe
    assert v["lr_decay"] ** (50 - 20) == pytest.approx(0.984**300, rel=1e-9)
    assert v["eta"] == pytest.approx(0.1 / 5000) and v["sample_burn_in_steps"] == 30 * 19


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"data.bogus": 1}, "config key data.bogus is unknown; allowed in [data]: dataset, batch_size"),
        (
            {"sampler.cycles": 2},
            "config key sampler.cycles does not apply to method 'vr-resghmc' (it applies to cycsghmc, cvr-resghmc)",
        ),
        (
            {"model.name": "vgg"},
            "config key model.name must be one of cnn, resnet8, resnet20, resnet32, resnet56, got 'vgg' (override)",
        ),
        ({"data.dataset": "mnist"}, "config key data.dataset must be one of cifar10, cifar100, svhn_cropped, svhn"),
        ({"sampler.momentum": 1.0}, "config key sampler.momentum must be a number in [0, 1), got 1.0"),
        ({"variance_reduction.coefficient": "auto"}, 'must be a finite number (the paper: -1) or "adaptive"'),
        ({"training.epochs": 0}, "config key training.epochs must be an integer in [1, 2147483647], got 0"),
        (
            {"data.holdout": 1.5},
            "config key data.holdout must be an integer count in [0, 2147483647] or a fraction in [0, 1)",
        ),
        ({"method": "sgd"}, "config key method must be one of msgd, sghmc"),
        (
            {"swap.correction": "1e5x"},
            "config key swap.correction must be a number in [1.18e-38, 3.4e+38] (float32), got '1e5x'",
        ),
    ],
)
def test_bad_keys_and_values_are_named(overrides, message):
    with pytest.raises(config.ConfigError) as err:
        config.resolve(config.apply_overrides(config.load("vr-resghmc"), overrides))
    assert message in str(err.value)


def test_file_errors(tmp_path):
    with pytest.raises(config.ConfigError, match="shipped configs are cvr-resghmc, cycsghmc, msgd, resghmc"):
        config.load("nope")
    bad = tmp_path / "bad.toml"
    bad.write_text('method = "msgd"\n[data]\nbatch_size = \n')
    with pytest.raises(config.ConfigError, match="TOML syntax error"):
        config.load(str(bad))
    bad.write_text('method = "msgd"\ndata = 3\n')
    with pytest.raises(config.ConfigError, match=r"data must be a table \[data\]"):
        config.resolve(config.load(str(bad)))
    bad.write_text("[data]\nbatch_size = 2\n")
    with pytest.raises(config.ConfigError, match="method is required"):
        config.resolve(config.load(str(bad)))
    bad.write_text('method = "msgd"\n[swap]\ncorrection = 2.0\n')
    with pytest.raises(config.ConfigError, match=r"swap.correction does not apply to method 'msgd'.*bad.toml"):
        config.resolve(config.load(str(bad)))
    with pytest.raises(config.ConfigError, match="unknown section 'optimizer'"):
        config.apply_overrides({}, {"optimizer.lr": 1})


def test_overrides_parse_toml_values_and_defaults_fill_in():
    raw = config.apply_overrides(
        config.parse('method = "cvr-resghmc"'),
        {
            "variance_reduction.coefficient": "-1.0",
            "data.augment": "false",
            "model.kwargs.width": "8",
            "samples.keep": "reservoir",
        },
    )
    cfg = config.resolve(raw)
    assert cfg.variance_reduction.coefficient == -1.0 and cfg.data.augment is False
    assert cfg.model.kwargs == {"width": 8} and cfg.samples.keep == "reservoir"
    assert cfg.swap.correction == 1.5e5  # the field's default
    assert cfg.sampler.lr_constant_epochs is None  # does not apply to the cyclical schedule ...
    assert "lr_constant_epochs" not in cfg.to_dict()["sampler"]  # ... nor is it recorded


def test_model_names_match_the_registry():
    """The config schema names the models without importing Keras; the registry is the truth."""
    from tf_vrre.workflows.image_classification import models

    assert models.names() == config_values.MODEL_NAMES


def test_configs_are_frozen_dataclasses_one_per_table():
    cfg = config.resolve(config.load("vr-resghmc-ladder"))
    assert [f.name for f in dataclasses.fields(cfg)][2:] == list(config.SECTIONS)
    for name, cls in config.SECTIONS.items():
        assert type(getattr(cfg, name)) is cls and dataclasses.is_dataclass(cls)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.training.epochs = 3
    with pytest.raises(TypeError):
        cfg.model.kwargs["width"] = 3  # a read-only mapping


def test_run_json_records_the_config_byte_for_byte_as_before():
    """The config recorded by a run directory written earlier resolves to the same JSON text, so a
    rerun compares equal and run directories written before keep working."""
    recorded = json.load(open(os.path.join(FIXTURES, "vr_resghmc_cnn_run", "run.json")))["config"]
    cfg = config.resolve(recorded)
    assert json.dumps(cfg.to_dict(), indent=2) == json.dumps(recorded, indent=2)
    assert list(cfg.to_dict()) == list(recorded) and list(cfg.to_dict()["sampler"]) == list(recorded["sampler"])


@pytest.mark.parametrize(
    "text,message",
    [
        (
            'method = "sghmc"\nsource = "elsewhere.toml"\n',
            "config: unknown key 'source'; allowed: method, description, data",
        ),
        ('method = "sghmc"\noverridden = 5\n', "config: unknown key 'overridden'; allowed: method, description, data"),
    ],
)
def test_internal_top_level_keys_are_unknown_keys(text, message, tmp_path):
    """The file's path and the overridden keys are kept beside the tables, not in them: a file's
    own ``source`` / ``overridden`` is an unknown key (it was accepted silently, or an
    ``AttributeError`` with an override)."""
    path = tmp_path / "my.toml"
    path.write_text(text)
    for raw in (config.load(str(path)), config.apply_overrides(config.load(str(path)), {"training.epochs": 3})):
        with pytest.raises(config.ConfigError) as err:
            config.resolve(raw)
        assert message in str(err.value) and str(path) in str(err.value)


@pytest.mark.parametrize(
    "value", ["[" * 50000 + "]" * 50000, "[" * 300 + "1" + "]" * 300, "{a = " * 3000 + "1" + "}" * 3000]
)
def test_deeply_nested_values_are_one_config_error(value, tmp_path):
    """A TOML value nested 50,000 deep raised ``RecursionError``; any value deeper than a config's
    deepest key (``model.kwargs.<name>``) is refused, naming the file or the override."""
    path = tmp_path / "deep.toml"
    path.write_text(f'method = "sghmc"\n[sampler]\nlr = {value}\n')
    with pytest.raises(config.ConfigError, match="nested") as err:
        config.resolve(config.load(str(path)))
    assert str(path) in str(err.value)
    with pytest.raises(config.ConfigError, match="nested") as err:
        config.resolve(config.apply_overrides(config.load("sghmc"), {"sampler.lr": value}))
    assert "override" in str(err.value)


def test_crop_padding_is_bounded_by_the_image():
    """``data.crop_padding = 100000`` ran out of memory padding the images; a padding must leave
    every crop part of the image."""
    assert (
        config.resolve(config.apply_overrides(config.load("sghmc"), {"data.crop_padding": 31})).data.crop_padding == 31
    )
    with pytest.raises(
        config.ConfigError,
        match=r"config key data.crop_padding must be an integer in \[0, 31\] \(less "
        r"than the 32-pixel side of cifar10 images.*got 100000 \(override\)",
    ):
        config.resolve(config.apply_overrides(config.load("sghmc"), {"data.crop_padding": 100000}))


TINY = {"training.epochs": 2, "data.batch_size": 32, "samples.thinning": 2, "samples.burn_in_epochs": 0}


@pytest.mark.parametrize(
    "override,message",
    [
        (
            {"sampler.lr": 3e38},
            r"config key sampler.lr must be in \[1.18e-38, 5.06e\+03\) \(the prior's own step "
            r"lr \* hot_lr_multiplier \* weight_decay must be < 2 \(1 \+ momentum\) = 3.8.*got 3e\+38 "
            r"\(override\)",
        ),
        (
            {"sampler.weight_decay": 3e38},
            r"config key sampler.weight_decay must be in \[0, 25.3\) \(the prior's own step",
        ),
        (
            {"sampler.momentum": 0.99999999},
            r"config key sampler.momentum must be a number in \[0, 0.99999994\] \(below "
            r"1 in float32",
        ),
        (
            {"sampler.temperature": 3e38},
            r"config key sampler.temperature must be in \[1.18e-38, 6.8e\+37\] \(the hot "
            r"chain's temperature",
        ),
        (
            {"swap.correction": 3e38},
            r"config key swap.correction must be in \[2.66e-33, 2.4e\+36\] \(F grows x141 "
            r"over the burn-in",
        ),
        ({"swap.correction": 1.2e-38}, r"config key swap.correction must be in \[2.66e-33, 2.4e\+36\].*swap penalty"),
        (
            {"training.schedule_epochs": 10**6, "training.epochs": 1},
            r"config key sampler.lr_decay must be in "
            r"\[0.99992, 1\] \(its per-epoch factor",
        ),
    ],
)
def test_the_samplers_numbers_are_checked_in_float32_without_the_data_size(override, message):
    """Each key is fine alone; what the sampler computes from them is not (inf, 0 or a diverging
    step once TensorFlow runs): refused by ``resolve``, naming the key and its interval."""
    with pytest.raises(config.ConfigError, match=message):
        config.resolve(config.apply_overrides(config.load("vr-resghmc"), {**TINY, **override}))


def test_the_samplers_numbers_for_the_data_size():
    """``lr / N`` (1.875e-40 for ``--lr 1.2e-38`` on 64 images: 0 in float32) is checked once ``N`` is
    known, naming the interval for that ``N``."""
    cfg = config.resolve(config.apply_overrides(config.load("vr-resghmc"), {**TINY, "sampler.lr": 1.2e-38}))
    with pytest.raises(
        sampler_numbers.BoundError,
        match=r"config key sampler.lr must be in \[7.53e-37, 3.4e\+38\] "
        r"for the 64 training examples .*got 1.2e-38",
    ):
        sampler_numbers.check_data_size(cfg, 64)
    sampler_numbers.check_data_size(cfg, 1)


def test_the_shipped_configs_pass_the_samplers_checks_at_every_scale():
    for method in SHIPPED:
        for epochs in (5, 10, 500, 5000):  # cycsghmc has 5 cycles: at least 5 epochs
            cfg = config.resolve(config.apply_overrides(config.load(method), {"training.epochs": epochs}))
            for n in (64, 50000, 10**7):
                sampler_numbers.check_data_size(cfg, n)


def test_applies_names_the_keys_of_a_method():
    assert config.applies("swap.correction", "resghmc") and not config.applies("swap.correction", "msgd")
    assert config.applies("sampler.cycles", "cycsghmc") and not config.applies("sampler.cycles", "sghmc")
    assert config.applies("data.batch_size", "msgd") and config.applies(
        "bogus.key", "msgd"
    )  # unknown: resolve names it
