"""ReplicaExchangeSampler(temperatures=ProposedLadder(...)): the ladder proposed from the chain's
number of weights, its config and saved files, the refusals, and a full ladder unchanged."""

import os

import keras
import numpy as np
import pytest
from _small_sampler import N, data, small_net

import tf_vrre
from tf_vrre.sgmcmc import proposal


def _sampler(temperatures, num_chains=4, **kwargs):
    return tf_vrre.ReplicaExchangeSampler(
        small_net, data_size=N, num_chains=num_chains, temperatures=temperatures, learning_rates=1e-3, seed=3, **kwargs
    )


def test_the_ladder_is_proposed_from_the_chains_weights():
    s = _sampler(tf_vrre.ProposedLadder(cold=0.5, target_rejection=0.3))
    D = 4 * 3 + 3  # small_net: Dense(3) on 4 inputs
    assert proposal.num_weights(s.chains[0]) == D
    expected = proposal.ProposedLadder(cold=0.5, target_rejection=0.3).temperatures(4, D)
    assert s.temperatures == expected and expected[0] == 0.5
    np.testing.assert_array_equal(s.state.ladder.temperature.numpy(), np.float32(expected))
    assert s.proposal == tf_vrre.ProposedLadder(cold=0.5, target_rejection=0.3)


def test_config_and_saved_file_round_trip(tmp_path):
    s = _sampler(tf_vrre.ProposedLadder(cold=1.0, target_rejection=0.4, bounds=(1.0, 20.0)))
    config = s.get_config()
    assert config["temperatures"]["class_name"] == "ProposedLadder"
    back = tf_vrre.ReplicaExchangeSampler.from_config(config)
    assert back.temperatures == s.temperatures and back.proposal == s.proposal and back.get_config() == config
    x, y = data()
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    s.set_temperatures([1.0, 1.5, 2.0, 3.0])  # a ladder moved by a tuner is the state, saved with it
    path = os.path.join(tmp_path, "s.keras")
    s.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.proposal == s.proposal and loaded.temperatures == s.temperatures
    np.testing.assert_array_equal(loaded.state.ladder.temperature.numpy(), np.float32([1.0, 1.5, 2.0, 3.0]))


def test_a_full_ladder_is_unchanged():
    s = _sampler([1.0, 2.0, 3.0, 4.0])
    assert s.proposal is None and s.temperatures == [1.0, 2.0, 3.0, 4.0]
    assert s.get_config()["temperatures"] == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"num_chains": 1}, r"^temperatures: a ProposedLadder is a ladder of chains that swap states .*num_chains=1"),
        ({"swap": None}, r"^temperatures: a ProposedLadder is a ladder of chains that swap states .*swap=None"),
    ],
)
def test_nothing_to_propose_refused_in_one_line(kwargs, match):
    with pytest.raises(ValueError, match=match) as err:
        _sampler(tf_vrre.ProposedLadder(), **kwargs)
    assert "\n" not in str(err.value)
