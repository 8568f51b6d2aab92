"""SGLD / SGHMC recover a conjugate Gaussian posterior (Bayesian linear regression).

The model holds R independent replicas of the regression weights (a Dense layer with R
outputs, the likelihood summed over them), so one chain yields R chains at once.  Expected
answers:

- the exact posterior ``N(A^-1 b, tau A^-1)``, ``A = X'X / s^2 + wd I``;
- the exact stationary covariance of the *discretised* chain with mini-batch gradients,
  from a discrete Lyapunov equation (linear dynamics + independent gradient noise of
  covariance ``C = (N^2 / n) Cov_i(grad l_i)``, batches drawn with replacement).

Tolerances: 4.5 standard errors from batch means over time of replica-averaged statistics
(this accounts for the noise all replicas share through common mini-batches), plus, for the
exact posterior, the O(eta) discretisation bias that the Lyapunov solution quantifies.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import tf_vrre

N, D, R, NOISE_SD, WD = 1000, 3, 96, 1.0, 1.0


def _data():
    rng = np.random.default_rng(42)
    x = rng.normal(size=(N, D)) * np.array([1.0, 0.8, 1.2])
    y = x @ np.array([1.0, -2.0, 0.5]) + NOISE_SD * rng.normal(size=N)
    return x.astype(np.float32), y.astype(np.float32)


@keras.saving.register_keras_serializable(package="tests")
def replicated_regression():
    inp = keras.Input((D,))
    out = keras.layers.Dense(R, use_bias=False, kernel_initializer="zeros")(inp)
    return keras.Model(inp, out)


@keras.saving.register_keras_serializable(package="tests")
def replicated_nll(x, y, y_pred):
    r = (tf.reshape(y, [-1, 1]) - y_pred) / NOISE_SD
    return tf.reduce_sum(0.5 * r * r, axis=1)


def _lyapunov(m, q):
    """Solves S = M S M' + Q."""
    k = m.shape[0]
    vec = np.linalg.solve(np.eye(k * k) - np.kron(m, m), q.reshape(-1))
    return vec.reshape(k, k)


def _stationary_cov(dynamics, lr, tau, a, c, momentum):
    eye = np.eye(D)
    if dynamics == "sgld":
        return _lyapunov(eye - lr * a, lr * lr * c + 2 * lr * tau * eye)
    alpha = 1 - momentum
    w = lr * lr * c + 2 * alpha * lr * tau * eye
    m = np.block([[eye - lr * a, (1 - alpha) * eye], [-lr * a, (1 - alpha) * eye]])
    q = np.block([[w, w], [w, w]])
    return _lyapunov(m, q)[:D, :D]


def _batch_means_se(series, batches=12):
    t = len(series) - len(series) % batches
    means = series[:t].reshape(batches, -1, *series.shape[1:]).mean(1)
    return means.mean(0), means.std(0, ddof=1) / np.sqrt(batches)


@pytest.mark.parametrize(
    "dynamics,lr,tau,batch,jit",
    [
        ("sgld", 2e-5, 1.0, 250, False),
        ("sghmc", 5e-6, 1.0, 500, False),
        ("sghmc", 5e-6, 4.0, 500, False),
        ("sghmc", 5e-6, 4.0, 500, True),  # the XLA-compiled step samples the same law
    ],
)
def test_conjugate_linear_regression(dynamics, lr, tau, batch, jit):
    x, y = _data()
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    a = xd.T @ xd / NOISE_SD**2 + WD * np.eye(D)
    mean = np.linalg.solve(a, xd.T @ yd / NOISE_SD**2)
    exact_cov = tau * np.linalg.inv(a)
    g = -xd * ((yd - xd @ mean) / NOISE_SD**2)[:, None]  # per-example gradients at the mean
    c = N * N / batch * np.cov(g.T, bias=True)
    pred_cov = _stationary_cov(dynamics, lr, tau, a, c, 0.9)

    burn, steps, thin = 1500, 9000, 10
    rng = np.random.default_rng(7)
    idx = rng.integers(0, N, size=(burn + steps, batch))  # mini-batches drawn with replacement
    ds = tf.data.Dataset.from_tensor_slices((x[idx], y[idx]))
    sampler = tf_vrre.ReplicaExchangeSampler(
        replicated_regression,
        data_size=N,
        num_chains=1,
        temperatures=tau,
        learning_rates=lr,
        dynamics=dynamics,
        momentum=0.9,
        weight_decay=WD,
        nll=replicated_nll,
        seed=11,
    )
    sampler.compile(steps_per_execution=thin, jit_compile=jit)
    assert sampler.jit_compile is jit
    kernel = sampler.cold_model.trainable_weights[0]
    samples = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            samples.append(kernel.numpy().T.copy())  # [R, D]

    sampler.fit(ds, epochs=1, verbose=0, callbacks=[Record()])
    s = np.asarray(samples, np.float64)[burn // thin :]  # [T, R, D]
    assert s.shape[0] >= 800

    est_mean, se_mean = _batch_means_se(s.mean(1))
    dev = s - mean
    est_cov, se_cov = _batch_means_se(np.einsum("tri,trj->tij", dev, dev) / R)

    sd = np.sqrt(np.diag(exact_cov))
    assert np.all(np.abs(est_mean - mean) <= 4.5 * se_mean + 1e-3 * sd), (est_mean, mean, se_mean)
    # The sampler matches the exact stationary law of its discretisation ...
    assert np.all(np.abs(est_cov - pred_cov) <= 4.5 * se_cov), (est_cov, pred_cov, se_cov)
    # ... whose distance to the exact (tempered) posterior is a small O(lr) bias.
    bias = pred_cov - exact_cov
    assert np.all(np.abs(np.diag(bias)) <= 0.08 * np.diag(exact_cov)), bias
    assert np.all(np.abs(est_cov - exact_cov) <= 4.5 * se_cov + np.abs(bias)), (est_cov, exact_cov)
