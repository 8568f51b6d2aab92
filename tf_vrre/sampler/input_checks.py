"""Host-side checks of the data (and models) given to a sampler, before any graph runs.

``set_reference_data``, ``make_dataset`` and ``fit`` (array inputs) call these; each error is a
``ValueError`` / ``TypeError`` that names the argument (``fit: y``, ``set_reference_data: data
x``) and what is allowed.  Checked: Python lists where arrays are needed, non-numeric dtypes,
different lengths of ``x``, ``y`` and sample weights, non-finite values, labels outside the
model's classes (for the Keras cross-entropy losses), sample weights that are not one finite
value ``>= 0`` per example, batch sizes that are not positive integers or exceed
``data_size``.  A training set whose length differs from ``data_size`` gets a warning (the
energy scales the mini-batch by ``data_size / n``).  Datasets (``tf.data``) are not iterated
here: a dataset of single examples (not batched) is refused from its element spec
(:func:`check_batched`); their values are checked inside the train step.  :func:`check_distinct_models`: every
chain has its own weights.
"""

import numbers

import keras
import numpy as np

import tf_vrre._user_warning as _user_warning


def check_batch_size(where, batch_size, data_size=None, allow_none=False):
    """``batch_size`` is a positive int (``None`` if allowed), at most ``data_size`` if given."""
    if batch_size is None and allow_none:
        return
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
        raise ValueError(f"{where}: batch_size must be a positive integer, got {batch_size!r}")
    if data_size is not None and batch_size > data_size:
        raise ValueError(
            f"{where}: batch_size ({batch_size}) must be <= data_size ({data_size}): with n > N "
            "the energy's N/n scaling and the swap correction's (1 - n/N) are wrong"
        )


def _is_array(value):
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, (list, tuple, dict))


def leaves(where, name, value):
    """``[(label, np.ndarray)]`` of an input structure: an array, or a list / tuple / dict of arrays.

    Raises:
      TypeError: a Python list / tuple of numbers (not arrays), or another type.
    """
    if value is None:
        return []
    if isinstance(value, dict):
        return [item for key, v in value.items() for item in leaves(where, f"{name}[{key!r}]", v)]
    if isinstance(value, (list, tuple)):
        if value and all(_is_array(v) for v in value):  # several inputs of a multi-input model
            return [(f"{name}[{i}]", np.asarray(v)) for i, v in enumerate(value)]
        raise TypeError(
            f"{where}: {name} is a Python {type(value).__name__} of "
            f"{type(value[0]).__name__ if value else 'nothing'}; pass a NumPy array "
            f"(e.g. np.asarray({name.split('[')[0]}, 'float32')) or a tf.data.Dataset"
        )
    if not _is_array(value):
        raise TypeError(f"{where}: {name} must be a NumPy array or tensor, got {type(value).__name__}")
    return [(name, np.asarray(value))]


def check_values(where, label, array):
    """Numeric dtype and finite values; ``ValueError`` naming ``label`` and the first bad example."""
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{where}: {label} has dtype {array.dtype}; expected numbers (float or int)")
    if array.ndim == 0:
        raise ValueError(f"{where}: {label} is a scalar; expected one row per example")
    if array.dtype.kind == "f":
        bad = ~np.isfinite(array.reshape(len(array), -1)).all(axis=1)
        if bad.any():
            raise ValueError(
                f"{where}: {label} holds non-finite values (NaN or inf), first at example "
                f"{int(np.flatnonzero(bad)[0])} of {len(array)}"
            )


def check_lengths(where, named):
    """All arrays of ``named`` (``[(label, array)]``) have the same number of examples."""
    if not named:
        return None
    n = len(named[0][1])
    for label, a in named[1:]:
        if len(a) != n:
            raise ValueError(f"{where}: {named[0][0]} has {n} examples but {label} has {len(a)}; they must match")
    return n


def check_sample_weight(where, label, w, n):
    """One finite weight ``>= 0`` per example (shape ``[n]`` or ``[n, 1]``)."""
    if w.shape not in ((n,), (n, 1)):
        raise ValueError(f"{where}: {label} must have shape ({n},): one weight per example, got {w.shape}")
    if w.dtype.kind in "biuf" and np.any(w < 0):
        raise ValueError(f"{where}: {label} must be >= 0, got {float(w.min())} at example {int(np.argmin(w))}")


def label_kind(loss):
    """``"sparse"``, ``"onehot"``, ``"binary"`` or ``None`` for a Keras loss identifier."""
    if loss is None:
        return None
    try:
        fn = keras.losses.get(loss)
    except (ValueError, TypeError):
        return None
    L = keras.losses
    if isinstance(fn, L.SparseCategoricalCrossentropy) or fn is L.sparse_categorical_crossentropy:
        return "sparse"
    if isinstance(fn, L.CategoricalCrossentropy) or fn is L.categorical_crossentropy:
        return "onehot"
    if isinstance(fn, L.BinaryCrossentropy) or fn is L.binary_crossentropy:
        return "binary"
    return None


def num_classes(model):
    """The size of a single-output model's last output axis, or ``None`` if unknown."""
    outputs = getattr(model, "outputs", None)
    if not outputs or len(outputs) != 1 or outputs[0].shape[-1] is None:
        return None
    return int(outputs[0].shape[-1])


def check_labels(where, label, y, kind, classes):
    """Labels fit the loss: sparse -> integers in ``[0, classes)``; one-hot / binary -> in ``[0, 1]``."""
    if kind == "sparse":
        if y.ndim > 1 and not (y.ndim == 2 and y.shape[1] == 1):
            raise ValueError(
                f"{where}: {label} must hold one integer class per example for "
                f"SparseCategoricalCrossentropy, got shape {y.shape}"
            )
        if y.dtype.kind == "f" and np.any(y != np.round(y)):
            raise ValueError(
                f"{where}: {label} must be integer classes for SparseCategoricalCrossentropy, "
                f"got {float(y[y != np.round(y)][0])}"
            )
        if classes is not None and y.size and (y.min() < 0 or y.max() >= classes):
            bad = y.min() if y.min() < 0 else y.max()
            raise ValueError(
                f"{where}: {label} holds class {bad:g} but the model has {classes} outputs (classes 0..{classes - 1})"
            )
    elif kind in ("onehot", "binary"):
        if y.size and (y.min() < 0 or y.max() > 1):
            raise ValueError(
                f"{where}: {label} must be in [0, 1] for {'Categorical' if kind == 'onehot' else 'Binary'}"
                f"Crossentropy, got values in [{y.min():g}, {y.max():g}]"
            )
        if kind == "onehot" and classes is not None and (y.ndim < 2 or y.shape[-1] != classes):
            raise ValueError(
                f"{where}: {label} must be one-hot with {classes} columns (the model's outputs) for "
                f"CategoricalCrossentropy, got shape {y.shape}"
            )


def check_arrays(where, x, y=None, sample_weight=None, loss=None, classes=None, names=("x", "y", "sample_weight")):
    """All checks of one ``(x, y, sample_weight)`` triple of arrays; returns the number of examples."""
    xs = leaves(where, names[0], x)
    ys = leaves(where, names[1], y)
    ws = leaves(where, names[2], sample_weight)
    n = check_lengths(where, xs + ys + ws)
    for label, a in xs + ys + ws:
        check_values(where, label, a)
    for label, w in ws:
        check_sample_weight(where, label, w, n)
    kind = label_kind(loss)
    for label, a in ys:
        check_labels(where, label, a, kind, classes)
    return n


def check_input_shape(where, label, x, model):
    """``x``'s per-example shape against the model's input shape (before Keras sees it), for a model
    with one recorded input; the batch axis and ``None`` axes are free."""
    if not _is_array(x):
        return
    try:
        inputs = model.inputs
    except (AttributeError, ValueError):  # a subclassed model records no inputs
        return
    if not inputs or len(inputs) != 1:
        return
    want = tuple(inputs[0].shape)[1:]
    got = tuple(np.shape(x))[1:]
    if len(want) != len(got) or any(w is not None and w != g for w, g in zip(want, got)):
        dims = ", ".join("any" if w is None else str(w) for w in want)
        raise ValueError(
            f"{where}: {label} has shape {tuple(np.shape(x))}, the model's input needs shape "
            f"(n, {dims}) (its input shape without the batch axis: ({dims}))"
        )


def _specs(structure):
    """The ``tf.TensorSpec`` leaves of a dataset's element (part) ``structure``."""
    return [leaf for leaf in keras.tree.flatten(structure) if hasattr(leaf, "shape") and hasattr(leaf, "dtype")]


def _rank(spec):
    rank = getattr(spec.shape, "rank", None)
    return None if rank is None else int(rank)


def check_batched(where, name, dataset, model):
    """A ``tf.data.Dataset`` given as ``name`` yields batches: ``ValueError`` (``"batch it:
    dataset.batch(n)"``) when its elements are single examples, read from its ``element_spec``
    (nothing is iterated): inputs with one axis fewer than the model's inputs (the batch axis), or,
    for a model without recorded inputs, a scalar input or label (a batch has a batch axis)."""
    spec = getattr(dataset, "element_spec", None)
    if spec is None:
        return
    x, y, _ = keras.utils.unpack_x_y_sample_weight(spec)
    xs, ys = _specs(x), _specs(y)
    try:
        inputs = list(model.inputs or [])
    except (AttributeError, ValueError):  # a subclassed model records no inputs
        inputs = []
    single = None
    if inputs and len(inputs) == len(xs) and (len(xs) == 1 or isinstance(x, (list, tuple))):  # inputs in order
        for s, inp in zip(xs, inputs):
            want = tuple(inp.shape)
            if _rank(s) is not None and _rank(s) == len(want) - 1:
                single = (s, want)
                break
    if single is None:
        single = next(((s, None) for s in xs + ys if _rank(s) == 0), None)
    if single is None:
        return
    s, want = single
    shape = tuple(s.shape)
    need = "" if want is None else f", the model's input takes batches of shape (n, {', '.join(map(str, want[1:]))})"
    raise ValueError(
        f"{where}: {name} is a tf.data.Dataset of single examples (an element of shape {shape}{need}); "
        f"batch it: dataset.batch(n)"
    )


def check_training_count(where, count, data_size):
    """Warns when the training arrays hold another number of examples than ``data_size``."""
    if count is not None and count != data_size:
        _user_warning.warn(
            f"{where}: the training arrays hold {count} examples but data_size={data_size}; the energy "
            f"scales each mini-batch by data_size / n, so the posterior is that of {data_size} examples "
            "(set data_size to the number of training examples unless this is intended)"
        )


def _loss_and_classes(sampler):
    loss = None if sampler.nll is not None else (getattr(sampler, "_compile_args", None) or {}).get("loss")
    return loss, num_classes(sampler.cold_model)


def check_reference(sampler, data):
    """``set_reference_data``'s in-memory ``data``: ``(x, y[, w])`` or ``x``; returns it as a tuple or array."""
    where = "set_reference_data"
    if (
        isinstance(data, (tuple, list))
        and 1 <= len(data) <= 3
        and all(_is_array(d) or isinstance(d, dict) for d in data)
    ):
        parts = tuple(data)
    elif isinstance(data, (tuple, list)) and 1 <= len(data) <= 3 and isinstance(data[0], (list, tuple)):
        parts = tuple(data)  # a list where an array belongs: named by leaves()
    elif _is_array(data) or isinstance(data, dict):
        parts = (data,)
    else:
        raise TypeError(
            f"{where}: data must be (x, y), (x, y, sample_weight), x, or a tf.data.Dataset, got {type(data).__name__}"
        )
    loss, classes = _loss_and_classes(sampler)
    check_input_shape(where, "data x", parts[0], sampler.cold_model)
    check_arrays(where, *parts, loss=loss, classes=classes, names=("data x", "data y", "data sample_weight"))
    return parts if isinstance(data, (tuple, list)) else data


def check_fit(sampler, args):
    """``fit``'s arguments (``args``: name -> value, Keras' signature) before any graph runs;
    returns what the reference data's labels are now checked against (:func:`recheck_reference`)."""
    where = "fit"
    check_batch_size(where, args["batch_size"], sampler.data_size, allow_none=True)
    for name in ("epochs", "initial_epoch"):
        v = args[name]
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
            raise ValueError(f"{where}: {name} must be an integer >= 0, got {v!r}")
    if args["steps_per_epoch"] is not None:
        v = args["steps_per_epoch"]
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise ValueError(f"{where}: steps_per_epoch must be a positive integer or None, got {v!r}")
    if sampler.variance_reduction is not None and sampler._reference is None:
        raise ValueError(
            "fit: variance_reduction needs the full training data: call "
            "sampler.set_reference_data((x_train, y_train)) before fit"
        )
    checked = recheck_reference(sampler)
    x = args["x"]
    check_batched(where, "x", x, sampler.cold_model)
    check_batched(where, "validation_data", args["validation_data"], sampler.cold_model)
    if x is None or not (_is_array(x) or isinstance(x, (list, tuple, dict))):
        return checked  # a tf.data.Dataset, generator or PyDataset: its values are checked inside the train step
    loss, classes = _loss_and_classes(sampler)
    if loss is not None and args["y"] is None:
        raise ValueError(
            f"{where}: y is required: the compiled loss needs labels (or build the sampler with "
            "nll=callable(x, y, y_pred))"
        )
    check_input_shape(where, "x", x, sampler.cold_model)
    n = check_arrays(where, x, args["y"], args["sample_weight"], loss=loss, classes=classes)
    split = args["validation_split"]
    if not isinstance(split, numbers.Real) or not 0 <= split < 1:
        raise ValueError(f"{where}: validation_split must be in [0, 1), got {split!r}")
    train = int(np.floor(n * (1.0 - split))) if args["validation_data"] is None else n
    if args["batch_size"] is not None and train and args["batch_size"] > sampler.data_size:
        raise ValueError(f"{where}: batch_size ({args['batch_size']}) must be <= data_size ({sampler.data_size})")
    check_training_count(where, train, sampler.data_size)
    vd = args["validation_data"]
    if isinstance(vd, (tuple, list)) and vd and all(_is_array(v) or v is None for v in vd):
        check_arrays(
            where,
            *vd,
            loss=loss,
            classes=classes,
            names=("validation_data x", "validation_data y", "validation_data sample_weight"),
        )
    return checked


def loss_key(sampler):
    """What the reference data's labels were last checked against (the compiled loss)."""
    return repr((getattr(sampler, "_compile_args", None) or {}).get("loss"))


def recheck_reference(sampler):
    """Checks the in-memory reference data's labels against the loss compiled since it was set;
    returns the :func:`loss_key` they are now checked against (the sampler keeps it)."""
    ref = sampler._reference
    checked = getattr(sampler, "_reference_checked", None)
    if ref is None or not isinstance(ref.source, (tuple, list)) and not _is_array(ref.source):
        return checked
    if checked == loss_key(sampler):
        return checked
    source = ref.source
    arrays = (
        tuple(keras.ops.convert_to_numpy(t) for t in source)
        if isinstance(source, (tuple, list))
        else keras.ops.convert_to_numpy(source)
    )
    check_reference(sampler, arrays)
    return loss_key(sampler)


def check_distinct_models(models):
    """``ValueError`` if two calls of ``model_fn`` returned the same model or models sharing weights."""
    owner = {}
    for i, model in enumerate(models):
        for v in model.weights:
            j = owner.setdefault(id(v), i)
            if j != i:
                what = "the same model object" if models[j] is model else "models that share weights"
                raise ValueError(
                    f"model_fn returned {what} on calls {j + 1} and {i + 1} (variable {v.name!r}); "
                    "every chain needs its own weights: build new layers inside model_fn on every "
                    "call, e.g. def model_fn(): inp = keras.Input((d,)); return keras.Model(inp, "
                    "keras.layers.Dense(k)(inp))"
                )
