"""Serving: :func:`tf_vrre.serving.export.export_ensemble` writes the samples' Bayesian model
average as a TF Serving SavedModel."""
