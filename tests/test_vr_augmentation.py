"""VR energies under augmentation stay unbiased: the control variate sees the clean views.

Batches carry ``{"energy_inputs": x_clean}`` next to the augmented ``x``; the sampler computes
the swap energies (current and snapshot) on ``x_clean``, the distribution of the full-data
pass ``U_hat``.  Then ``U~_k = (N/n) sum_B [l(x|beta_k) - l(x|beta_hat)] + U_hat + prior`` has
mean ``U(beta_k)``, the exact energy on the clean training set.  We record both at every step
of a small augmented run on real images and test that their difference has mean zero within
its Monte Carlo error.  Power: on this run the augmented views' energy exceeds the clean one by
15-25 nats (measured), so a swap energy computed on the augmented batch would be off by
several standard errors.

The model is a linear softmax classifier (no BatchNorm): with BatchNorm in inference mode the
step's training forward moves the moving statistics before the energies are evaluated, which
is a different question than the one tested here.
"""

import keras
import numpy as np
import tensorflow as tf

import tf_vrre
from tf_vrre.data import Augmentation, load_training_data

N, BATCH, M, EPOCHS = 128, 16, 8, 20


class ExactEnergies(keras.callbacks.Callback):
    """Exact clean full-data energies of every slot before each step, and the sampler's U~."""

    def __init__(self, x, y):
        super().__init__()
        self.x, self.y = x, y
        self.exact, self.estimate, self.steps = [], [], []
        self._energies = None

    def _compile(self, s):
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

        @tf.function
        def energies():  # U(beta) = sum_i l(x_i | beta) + wd/2 ||beta||^2 of every slot, float64
            out = []
            for chain in s.chains:
                nll = tf.reduce_sum(tf.cast(loss(self.y, chain(self.x, training=False)), tf.float64))
                prior = tf.add_n([tf.reduce_sum(tf.square(tf.cast(w, tf.float64))) for w in chain.trainable_weights])
                out.append(nll + 0.5 * s.weight_decay * prior)
            return tf.stack(out)
        return energies

    def on_train_batch_begin(self, batch, logs=None):
        s = self.model  # the state in each slot before the step: the one whose U~ the step computes
        self._energies = self._energies or self._compile(s)
        self.exact.append(self._energies().numpy())
        self.steps.append(int(s.step_counter.numpy()))

    def on_train_batch_end(self, batch, logs=None):
        self.estimate.append(self.model.last_energy.numpy().copy())


def linear():
    inp = keras.Input((32, 32, 3))
    return keras.Model(inp, keras.layers.Dense(10)(keras.layers.Flatten()(inp)))


def test_vr_energy_is_unbiased_on_an_augmented_run(image_data_dir):
    data, _, _ = load_training_data("cifar10", "npz", image_data_dir, subset=N, holdout=0)
    lr = 0.002  # on the mean loss
    s = tf_vrre.ReplicaExchangeSampler(
        linear, data_size=N, num_chains=2, temperatures=[1e-3, 5e-3], learning_rates=[lr / N, 1.5 * lr / N],
        weight_decay=1.0, swap=tf_vrre.CorrectedSwap(correction=1e6, period=1),
        variance_reduction=tf_vrre.ControlVariates(period=M, batch_size=N), seed=0)
    s.set_reference_data(data.reference)
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    record = ExactEnergies(*data.reference)
    aug = Augmentation(crop_padding=4, flip=True, erasing=1.0)
    s.fit(data.dataset(BATCH, seed=0, counter=s.step_counter, augmentation=aug), epochs=EPOCHS, verbose=0,
          shuffle=False, callbacks=[record])
    steps = np.array(record.steps)
    err = (np.array(record.estimate) - np.array(record.exact))[steps % M != 0]  # refresh steps are exact
    assert err.shape[0] >= 130
    sd = err.std(axis=0, ddof=1)
    assert np.all(sd > 0.1)  # the estimator is noisy: the test has something to average
    se = sd / np.sqrt(len(err))
    z = err.mean(axis=0) / se
    assert np.all(np.abs(z) < 4), f"VR energy bias per chain: {err.mean(axis=0)} +- {se} (z = {z})"
