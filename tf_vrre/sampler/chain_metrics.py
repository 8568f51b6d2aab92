"""Loss and compiled metrics of every chain (and the cold chain's ``evaluate`` / ``predict``
steps), for :class:`tf_vrre.ReplicaExchangeSampler`.

The cold chain (slot 0) reports under Keras' plain names (``loss``, ``accuracy``); chain ``h``
under ``loss_h``, ``accuracy_h``.  ``loss`` is the mean per-example NLL of the batch.
"""

import tensorflow as tf

import tf_vrre.sampler.batch as batch
from tf_vrre import _keras_compat


class ChainMetrics:
    """Mixin of ``keras.Model`` subclasses that own ``chains``, ``_chain_loss`` (``keras.metrics.Mean``
    per non-cold chain), ``_per_example_nll`` and ``_check_batch``."""

    def _compile_chain_metrics(self, metrics, weighted_metrics):
        """One ``CompileMetrics`` per non-cold chain (a re-compile replaces and untracks them)."""
        for old in getattr(self, "_chain_metrics", []):
            if old in _keras_compat.tracked_metrics(self):
                _keras_compat.tracked_metrics(self).remove(old)
        self._chain_metrics = []
        if metrics is not None or weighted_metrics is not None:
            self._chain_metrics = [
                _keras_compat.compile_metrics(metrics, weighted_metrics, f"chain_{h}_metrics")
                for h in range(1, len(self.chains))
            ]

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        if isinstance(sample_weight, dict):
            sample_weight = sample_weight.get("sample_weight")
        for m in self._chain_metrics:
            if not m.built:
                m.build(y, y_pred)
        return super().compute_metrics(x, y, y_pred, sample_weight)

    def _update_metrics(self, minibatch, forward):
        """Adds one step (``forward``: per-chain NLLs and predictions) to every chain's metrics."""
        nlls, preds, y, swt = forward.nlls, forward.preds, minibatch.y, minibatch.sample_weight
        _keras_compat.loss_tracker(self).update_state(
            tf.reduce_mean(nlls[0]), sample_weight=tf.cast(tf.size(nlls[0]), tf.float32)
        )
        for tracker, nll in zip(self._chain_loss, nlls[1:]):
            tracker.update_state(tf.reduce_mean(nll), sample_weight=tf.cast(tf.size(nll), tf.float32))
        if _keras_compat.compiled_metrics(self) is not None and y is not None:
            _keras_compat.compiled_metrics(self).update_state(y, preds[0], swt)
            for m, p in zip(self._chain_metrics, preds[1:]):
                m.update_state(y, p, swt)

    def _update_rung_metrics(self, minibatch, forward, rung):
        """Chain-per-replica placement: adds this replica's chain (``forward``: its NLLs and
        predictions) to the metrics of the ``rung`` it holds; each rung's metrics get exactly one
        chain per step, and their cross-replica sums (Keras metric variables are ``ON_READ``, summed
        when read outside the step) are that chain's."""
        nll, pred, y, swt = forward.nlls[0], forward.preds[0], minibatch.y, minibatch.sample_weight
        compiled = _keras_compat.compiled_metrics(self)

        def branch(k):
            def update():
                tracker = _keras_compat.loss_tracker(self) if k == 0 else self._chain_loss[k - 1]
                tracker.update_state(tf.reduce_mean(nll), sample_weight=tf.cast(tf.size(nll), tf.float32))
                metrics = compiled if k == 0 else (self._chain_metrics[k - 1] if self._chain_metrics else None)
                if compiled is not None and metrics is not None and y is not None:
                    metrics.update_state(y, pred, swt)
                return tf.constant(True)

            return update

        tf.switch_case(tf.cast(rung, tf.int32), [branch(k) for k in range(len(self.chains))])

    def _metric_logs(self):
        """``loss``, ``loss_h``, ``excess_temperature_h`` (the heat of gradient noise) and the
        compiled metrics of every chain."""
        logs = {"loss": _keras_compat.loss_tracker(self).result()}
        for h, tracker in enumerate(self._chain_loss, 1):
            logs[f"loss_{h}"] = tracker.result()
        for metric in getattr(self, "_excess_temperature", []):  # excess_temperature_h, every chain
            logs[metric.name] = metric.result()
        if _keras_compat.compiled_metrics(self) is not None:
            logs.update(_keras_compat.compiled_metrics(self).result())
            for h, m in enumerate(self._chain_metrics, 1):
                if m.built:
                    logs.update({f"{k}_{h}": v for k, v in m.result().items()})
        return logs

    def test_step(self, data):
        """Loss and metrics of the cold chain in inference mode (``evaluate``)."""
        x, y, sample_weight, _ = batch.unpack(data)
        self._check_batch(x, y)
        y_pred = self.chains[0](x, training=False)
        nll = self._per_example_nll(x, y, y_pred, sample_weight)
        _keras_compat.loss_tracker(self).update_state(
            tf.reduce_mean(nll), sample_weight=tf.cast(tf.size(nll), tf.float32)
        )
        logs = {"loss": _keras_compat.loss_tracker(self).result()}
        if _keras_compat.compiled_metrics(self) is not None and y is not None:
            _keras_compat.compiled_metrics(self).update_state(y, y_pred, sample_weight)
            logs.update(_keras_compat.compiled_metrics(self).result())
        return logs

    def example_nlls(self, model, x, y=None, sample_weight=None):
        """Per-example negative log-likelihoods ``[n]`` of ``model`` (a chain, or a model of the
        same architecture holding other weights) on ``(x, y)``, exactly as the swap energies and
        the control variates' full pass compute them (the sampler's NLL and energy mode)."""
        return self._energy_fn(model, x, y, sample_weight)

    def predict_step(self, data):
        """The cold chain's output in inference mode (``predict``)."""
        x, _, _, _ = batch.unpack(data)
        return self.chains[0](x, training=False)

    def _step_logs(self, lrs, temps, with_metrics=True):
        """The step's logs: metrics (unless not ``with_metrics``), per-chain temperature and lr,
        swap counters, VR coefficients."""
        logs = self._metric_logs() if with_metrics else {}
        for h in range(self.num_chains):
            logs[f"temperature_{h}"] = temps[h]
            logs[f"lr_{h}"] = lrs[h]
        if self.swap_rule is not None:
            logs.update(self.state.swap.logs())
        if self.variance_reduction is not None:
            for h in range(self.num_chains):
                logs[f"c_{h}"] = self.state.control_variates.coefficient[h]
        return logs
