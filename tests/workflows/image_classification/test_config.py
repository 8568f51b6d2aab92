"""Method configs: the six shipped files, schema errors, overrides, the stretched schedule."""

import os

import pytest

from tf_vrre.workflows.image_classification import config as C


def test_shipped_configs_resolve_with_the_papers_numbers():
    assert set(C.available()) == set(C.METHODS)
    assert sorted(os.listdir(C.CONFIG_DIR)) == sorted(f"{m}.toml" for m in C.METHODS)
    for method in C.METHODS:
        cfg = C.resolve(C.load(method))
        assert cfg["method"] == method and cfg["data"]["batch_size"] == 256
        v = C.schedule_values(cfg, data_size=50000, steps_per_epoch=195)
        expect_eta = 1e-5 if method in C.CYCLICAL else 2e-6  # paper: eta = 2e-6; cyclical eta_0 = 1e-5
        assert v["eta"] == pytest.approx(expect_eta, rel=1e-12)
        assert v["weight_decay"] == pytest.approx(25.0)      # the paper's prior precision at N = 50,000
        assert ("swap" in cfg) == (method in C.REPLICA)
        assert ("variance_reduction" in cfg) == (method in C.VARIANCE_REDUCED)
    vr = C.resolve(C.load("vr-resghmc"))
    assert vr["training"]["epochs"] == 500 and vr["variance_reduction"]["period"] == 392
    assert vr["swap"]["correction"] == 1.5e5 and vr["sampler"]["hot_temperature_multiplier"] == 5.0
    v = C.schedule_values(vr, 50000, 196)
    assert v["lr_constant_epochs"] == 200 and v["burn_in_epochs"] == 300 and v["lr_decay"] == pytest.approx(0.984)
    assert C.resolve(C.load("cycsghmc"))["training"]["epochs"] == 1000
    assert C.resolve(C.load("cycsghmc"))["sampler"]["cycles"] == 5
    assert C.resolve(C.load(os.path.join(C.CONFIG_DIR, "msgd.toml")))["method"] == "msgd"  # by path


def test_epochs_stretch_the_schedule():
    cfg = C.resolve(C.apply_overrides(C.load("vr-resghmc"), {"training.epochs": 50}))
    v = C.schedule_values(cfg, data_size=5000, steps_per_epoch=19)
    assert v["scale"] == 0.1 and v["lr_constant_epochs"] == 20 and v["burn_in_epochs"] == 30
    assert v["lr_decay"] == pytest.approx(0.984 ** 10) and v["temperature_annealing"] == pytest.approx(1.02 ** 10)
    # the same total decay / annealing over the run as the 500-epoch recipe
    assert v["lr_decay"] ** (50 - 20) == pytest.approx(0.984 ** 300, rel=1e-9)
    assert v["eta"] == pytest.approx(0.1 / 5000) and v["sample_burn_in_steps"] == 30 * 19


@pytest.mark.parametrize("overrides,message", [
    ({"data.bogus": 1}, "config key data.bogus is unknown; allowed in [data]: dataset, batch_size"),
    ({"sampler.cycles": 2}, "config key sampler.cycles does not apply to method 'vr-resghmc' (it applies to "
                            "cycsghmc, cvr-resghmc)"),
    ({"model.name": "vgg"}, "config key model.name must be one of cnn, resnet8, resnet20, resnet32, resnet56, "
                            "got 'vgg' (override)"),
    ({"data.dataset": "mnist"}, "config key data.dataset must be one of cifar10, cifar100, svhn_cropped, svhn"),
    ({"sampler.momentum": 1.0}, "config key sampler.momentum must be a number in [0, 1), got 1.0"),
    ({"variance_reduction.coefficient": "auto"}, "must be a finite number (the paper: -1) or \"adaptive\""),
    ({"training.epochs": 0}, "config key training.epochs must be an integer >= 1, got 0"),
    ({"data.holdout": 1.5}, "config key data.holdout must be an integer count >= 0 or a fraction in [0, 1)"),
    ({"method": "sgd"}, "config key method must be one of msgd, sghmc"),
    ({"swap.correction": "1e5x"}, "config key swap.correction must be a number > 0, got '1e5x'"),
])
def test_bad_keys_and_values_are_named(overrides, message):
    with pytest.raises(C.ConfigError) as err:
        C.resolve(C.apply_overrides(C.load("vr-resghmc"), overrides))
    assert message in str(err.value)


def test_file_errors(tmp_path):
    with pytest.raises(C.ConfigError, match="shipped configs are cvr-resghmc, cycsghmc, msgd, resghmc"):
        C.load("nope")
    bad = tmp_path / "bad.toml"
    bad.write_text('method = "msgd"\n[data]\nbatch_size = \n')
    with pytest.raises(C.ConfigError, match="TOML syntax error"):
        C.load(str(bad))
    bad.write_text('method = "msgd"\ndata = 3\n')
    with pytest.raises(C.ConfigError, match=r"data must be a table \[data\]"):
        C.resolve(C.load(str(bad)))
    bad.write_text('[data]\nbatch_size = 2\n')
    with pytest.raises(C.ConfigError, match="method is required"):
        C.resolve(C.load(str(bad)))
    bad.write_text('method = "msgd"\n[swap]\ncorrection = 2.0\n')
    with pytest.raises(C.ConfigError, match=r"swap.correction does not apply to method 'msgd'.*bad.toml"):
        C.resolve(C.load(str(bad)))
    with pytest.raises(C.ConfigError, match="unknown section 'optimizer'"):
        C.apply_overrides({}, {"optimizer.lr": 1})


def test_overrides_parse_toml_values_and_defaults_fill_in():
    raw = C.apply_overrides(C.parse('method = "cvr-resghmc"'), {
        "variance_reduction.coefficient": "-1.0", "data.augment": "false", "model.kwargs.width": "8",
        "samples.keep": "reservoir"})
    cfg = C.resolve(raw)
    assert cfg["variance_reduction"]["coefficient"] == -1.0 and cfg["data"]["augment"] is False
    assert cfg["model"]["kwargs"] == {"width": 8} and cfg["samples"]["keep"] == "reservoir"
    assert cfg["swap"]["correction"] == 1.5e5  # schema default
    assert "lr_constant_epochs" not in cfg["sampler"]  # does not apply to the cyclical schedule


def test_model_names_match_the_registry():
    """The config schema names the models without importing Keras; the registry is the truth."""
    from tf_vrre.workflows.image_classification import models

    assert C.MODEL_NAMES == models.names()
