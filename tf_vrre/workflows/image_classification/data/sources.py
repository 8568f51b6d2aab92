"""Where images come from: tensorflow-datasets or a local directory of ``.npz`` files.

Both sources return the same thing, ``(x, y)`` numpy arrays with ``x`` uint8 ``[n, H, W, C]``
(RGB) and ``y`` int64 ``[n]``, so everything after loading is the same code.

- ``"tfds"``: ``tfds.load(name, split=..., data_dir=..., download=...)`` (the default for users
  with internet; ``download=False`` reads data prepared earlier, offline).
- ``"npz"``: ``DATA_DIR/<dataset>/<dataset>_<split>.npz`` or several parts
  ``DATA_DIR/<dataset>/<dataset>_<split>_part<k>of<n>.npz``, each with arrays ``x`` (uint8
  NHWC) and ``y`` (integer labels), e.g. ``cifar10/cifar10_train_part1of2.npz``.  Parts must be
  exactly ``part1ofN`` .. ``partNofN`` (concatenated in that order); a missing part, a part of
  another count or a stray ``_part`` file is an error naming the files.
- ``"auto"``: ``"npz"`` when ``data_dir`` holds the split's ``.npz`` files, else ``"tfds"``.

Without a connection, tensorflow-datasets would retry its download for minutes: before it
downloads, :func:`tf_vrre.workflows.image_classification.data.tfds_source.check_download` probes
the download host for a few seconds and raises one line naming the offline options (prepared
data with ``download=False`` / ``--no-download``, or the npz source).

An ``.npz`` member is checked against the size its ``.npy`` header declares before it is read (a
header may claim 10^12 labels: one line naming the file, not a memory error).
"""

import numbers
import os
import re
import zipfile

import numpy as np

import tf_vrre.workflows.image_classification.data.tfds_source as tfds_source

DATASETS = {
    # name: (number of classes, image shape, splits)
    "cifar10": (10, (32, 32, 3), ("train", "test")),
    "cifar100": (100, (32, 32, 3), ("train", "test")),
    "svhn_cropped": (10, (32, 32, 3), ("train", "test", "extra")),
}
ALIASES = {"svhn": "svhn_cropped"}
SOURCES = ("auto", "npz", "tfds")

__all__ = [
    "DATASETS",
    "ALIASES",
    "SOURCES",
    "check_dataset",
    "num_classes",
    "image_shape",
    "npz_files",
    "resolve_source",
    "check_available",
    "example_count",
    "npz_split_size",
    "load_split",
]


def check_dataset(name):
    """The canonical data set name (``svhn`` -> ``svhn_cropped``); ``ValueError`` listing the
    valid names otherwise."""
    name = ALIASES.get(name, name)
    if name not in DATASETS:
        valid = ", ".join(list(DATASETS) + [f"{a} (= {b})" for a, b in ALIASES.items()])
        raise ValueError(f"dataset must be one of {valid}; got {name!r}")
    return name


def num_classes(name):
    """Number of classes of data set ``name``."""
    return DATASETS[check_dataset(name)][0]


def image_shape(name):
    """Shape ``(H, W, C)`` of one image of data set ``name``."""
    return DATASETS[check_dataset(name)][1]


def _check_split(name, split):
    splits = DATASETS[name][2]
    if split not in splits:
        raise ValueError(f"split of {name} must be one of {', '.join(splits)}; got {split!r}")


def _folder_entries(folder):
    """File names in ``folder`` (``[]`` if it does not exist); ``PermissionError`` naming an unreadable one."""
    try:
        with os.scandir(folder) as it:
            return [e.name for e in it]
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        raise FileNotFoundError(f"{folder!r} is not a directory") from None
    except PermissionError:
        raise PermissionError(f"data folder {folder!r} is not readable (permission denied)") from None


def npz_files(data_dir, name, split):
    """The ``.npz`` files of ``name``/``split`` under ``data_dir`` in part order (may be empty).

    Raises ``ValueError`` naming the files when the parts are not exactly ``part1ofN`` ..
    ``partNofN``, ``PermissionError`` for an unreadable folder.
    """
    name = check_dataset(name)
    folder = os.path.join(str(data_dir), name)
    entries = _folder_entries(folder)
    single = f"{name}_{split}.npz"
    if single in entries:
        return [os.path.join(folder, single)]
    prefix = f"{name}_{split}_part"
    names = sorted(e for e in entries if e.startswith(prefix) and e.endswith(".npz"))
    if not names:
        return []
    found = {}
    for entry in names:
        m = re.fullmatch(re.escape(prefix) + r"(\d+)of(\d+)\.npz", entry)
        if m is None:
            raise ValueError(f"{os.path.join(folder, entry)}: part files must be named {prefix}<k>of<n>.npz")
        found[entry] = (int(m.group(1)), int(m.group(2)))
    totals = sorted({n for _, n in found.values()})
    n = totals[0]
    expected = [f"{prefix}{k}of{n}.npz" for k in range(1, n + 1)]
    if len(totals) > 1 or sorted(found) != sorted(expected):
        missing = [e for e in expected if e not in found]
        what = (
            f"parts of different counts ({', '.join(f'of{t}' for t in totals)})"
            if len(totals) > 1
            else f"missing {', '.join(missing)}"
            if missing
            else "parts out of range"
        )
        raise ValueError(
            f"{name} {split} parts in {folder!r} are not exactly part1of{n} .. part{n}of{n}: "
            f"found {', '.join(names)}; {what}"
        )
    return [os.path.join(folder, e) for e in expected]


def resolve_source(source, name, split, data_dir):
    """``"npz"`` or ``"tfds"`` for ``source`` in :data:`SOURCES` (``"auto"``: npz if present)."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}; got {source!r}")
    if source == "npz" and data_dir is None:
        raise ValueError(
            "data_dir: the npz source needs a directory (--data-dir DIR, holding DIR/<dataset>/<dataset>_<split>.npz)"
        )
    if source == "auto":
        return "npz" if data_dir is not None and npz_files(data_dir, name, split) else "tfds"
    return source


def _check_arrays(x, y, name, where):
    classes, shape, _ = DATASETS[name]
    if x.dtype != np.uint8 or x.ndim != 4 or tuple(x.shape[1:]) != shape:
        raise ValueError(
            f"{where}: x must be uint8 images of shape [n, {', '.join(map(str, shape))}], got {x.dtype} {x.shape}"
        )
    y = np.asarray(y).reshape(-1)
    if not len(x):
        raise ValueError(
            f"{where}: the archive is empty (0 images)"
            if where.endswith(".npz")
            else f"{where}: the split is empty (0 images)"
        )
    if len(y) != len(x):
        raise ValueError(f"{where}: {len(x)} images but {len(y)} labels")
    if not np.issubdtype(y.dtype, np.integer) or (len(y) and (y.min() < 0 or y.max() >= classes)):
        raise ValueError(f"{where}: labels must be integers in [0, {classes - 1}]")
    return x, y.astype(np.int64)


def _existing_npz_files(data_dir, name, split):
    if not os.path.isdir(str(data_dir)):
        raise FileNotFoundError(f"data_dir {str(data_dir)!r} does not exist")
    _folder_entries(str(data_dir))  # an unreadable data_dir is named as such, not as missing
    files = npz_files(data_dir, name, split)
    if not files:
        folder = os.path.join(str(data_dir), name)
        raise FileNotFoundError(
            f"no {name} {split} data in {str(data_dir)!r}: expected "
            f"{os.path.join(folder, f'{name}_{split}.npz')} or "
            f"{os.path.join(folder, f'{name}_{split}_part1of2.npz')}, ..."
        )
    return files


def check_available(name, split, source="tfds", data_dir=None, download=None):
    """The source :func:`load_split` would use, after the checks it can make without reading data.

    Rule: the data set, split and source names are valid; for the npz source, ``data_dir``
    exists, is readable and holds the split's files (parts 1..N of N).  For the tfds source
    with ``download`` given: data not prepared in ``data_dir`` must be downloadable
    (``download=True`` and the download host answers within seconds), else the error names
    the offline options.  No TensorFlow: the command line calls this before TensorFlow starts.

    Raises:
      ValueError: an unknown data set, split or source (as :func:`load_split`).
      FileNotFoundError: missing files, naming the expected paths; also
        :class:`~tf_vrre.workflows.image_classification.data.tfds_source.OfflineError`.
      PermissionError: an unreadable data directory or file.

    Example:
      >>> os.makedirs("data/cifar10")
      >>> np.savez("data/cifar10/cifar10_train.npz", x=np.zeros((4, 32, 32, 3), np.uint8), y=np.arange(4))
      >>> check_available("cifar10", "train", "npz", "data")
      'npz'
    """
    name = check_dataset(name)
    _check_split(name, split)
    used = resolve_source(source, name, split, data_dir)
    if used == "npz":
        _existing_npz_files(data_dir, name, split)
    elif download is not None and not tfds_source.prepared(name, data_dir):
        tfds_source.check_download(name, data_dir, download)
    return used


def example_count(value, total, name):
    """An example count from an integer (>= 0) or a fraction in [0, 1) of ``total`` (``None``: 0)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value < 0:
        raise ValueError(f"{name} must be a count >= 0 or a fraction in [0, 1), got {value!r}")
    if isinstance(value, numbers.Integral):
        return int(value)
    if value >= 1:
        raise ValueError(f"{name} as a fraction must be < 1, got {value!r}")
    return int(round(value * total))


def _declared(z, key):
    """The shape an archive member ``key`` declares in its ``.npy`` header, checked against the
    member's size (read without reading the array: a header may claim 10^12 entries)."""
    name = f"{key}.npy"
    if name not in z.zip.namelist():
        raise KeyError(key)
    info = z.zip.getinfo(name)
    with z.zip.open(name) as f:
        version = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read(f)
        header = f.tell()
    if dtype.hasobject:
        raise ValueError(f"array {key!r} holds Python objects")
    size = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if header + size != info.file_size:
        raise ValueError(
            f"array {key!r} declares shape {shape} ({size} bytes) but its member holds {info.file_size - header} bytes"
        )
    return shape


def _read_npz(path, keys):
    """The arrays ``keys`` of archive ``path``, each checked against its header first; one-line errors
    naming the file."""
    try:
        z = np.load(path, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError("a single .npy array, not an .npz archive")
        with z:
            for k in keys:
                _declared(z, k)
            return [np.asarray(z[k]) for k in keys]
    except PermissionError:
        raise PermissionError(f"{path}: not readable (permission denied)") from None
    except KeyError as err:
        raise ValueError(f"{path}: not an image archive with arrays 'x' and 'y' (missing {err})") from None
    except (zipfile.BadZipFile, EOFError, ValueError, OSError, UnicodeDecodeError) as err:
        detail = "not a zip file" if "pickled" in str(err) else str(err).splitlines()[0] if str(err) else ""
        raise ValueError(
            f"{path}: not a readable .npz image archive with arrays 'x' and 'y' "
            f"({type(err).__name__}{': ' + detail if detail else ''}; truncated or another format?)"
        ) from None


def npz_split_size(data_dir, name, split):
    """Number of examples of an npz split, from its label arrays alone (no images are read).

    Raises ``ValueError`` naming an archive without examples.
    """
    total = 0
    for path in _existing_npz_files(data_dir, name, split):
        (y,) = _read_npz(path, ("y",))
        if not y.size:
            raise ValueError(f"{path}: the archive is empty (0 examples)")
        total += len(y.reshape(-1))
    return total


def _load_npz(data_dir, name, split):
    files = _existing_npz_files(data_dir, name, split)
    xs, ys = [], []
    for path in files:
        x, y = _check_arrays(*_read_npz(path, ("x", "y")), name, path)
        xs.append(x)
        ys.append(y)
    return np.concatenate(xs), np.concatenate(ys)


def _load_tfds(data_dir, name, split, download):
    return _check_arrays(*tfds_source.load(name, split, data_dir, download), name, f"tfds {name}:{split}")


def load_split(name, split, source="tfds", data_dir=None, download=True):
    """Loads one split as numpy arrays.

    Args:
      name: ``cifar10``, ``cifar100`` or ``svhn_cropped`` (alias ``svhn``).
      split: ``train`` or ``test`` (``extra`` for SVHN).
      source: ``"tfds"``, ``"npz"`` or ``"auto"`` (see the module docstring).
      data_dir: tfds data directory, or the npz root (``None``: tfds' default).
      download: let tfds download and prepare missing data (needs internet).

    Returns:
      ``(x, y, source)``: uint8 images ``[n, H, W, C]``, int64 labels ``[n]`` and the source
      actually used (``"npz"`` or ``"tfds"``).

    Raises:
      ValueError: unknown data set, split or source (naming the valid ones), malformed files.
      FileNotFoundError: missing directory or files (naming the expected paths); tfds data
        neither prepared nor downloadable
        (:class:`tf_vrre.workflows.image_classification.data.tfds_source.OfflineError`).
      PermissionError: an unreadable folder or file (naming it).

    Example:
      >>> os.makedirs("data/cifar10")
      >>> np.savez("data/cifar10/cifar10_test.npz", x=np.zeros((5, 32, 32, 3), np.uint8), y=np.arange(5))
      >>> x, y, src = load_split("cifar10", "test", source="npz", data_dir="data")
      >>> x.shape, src
      ((5, 32, 32, 3), 'npz')
    """
    name = check_dataset(name)
    _check_split(name, split)
    used = resolve_source(source, name, split, data_dir)
    if used == "npz":
        x, y = _load_npz(data_dir, name, split)
    else:
        x, y = _load_tfds(data_dir, name, split, download)
    return x, y, used
