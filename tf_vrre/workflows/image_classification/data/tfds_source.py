"""The tensorflow-datasets source: prepared-data check, a bounded download probe, loading.

tensorflow-datasets downloads a missing data set on first use and, without a connection,
retries for minutes before it fails.  Here a missing data set is only handed to it for
download after its download host answered an HTTP request within :data:`PROBE_SECONDS` in total
(through the ``https_proxy`` / ``http_proxy`` of the environment when one is set: a proxy that
accepts the connection but never answers counts as no connection); otherwise
:class:`OfflineError` says in one line how to work offline.  Only :func:`load` imports
tensorflow-datasets (and so TensorFlow): the command line runs the other checks before.

    >>> prepared("cifar10", "~/tensorflow_datasets")       # data_dir/cifar10/<version>/dataset_info.json
    False
    >>> check_download("cifar10", None, download=False)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    OfflineError: tensorflow-datasets cifar10 is not prepared in ... and downloads are off

Without ``download=False``, a missing data set on a machine with no connection gives an
:class:`OfflineError` within seconds (:data:`PROBE_SECONDS`), naming ``--no-download`` and
``--source npz``.
"""

import os
import threading
import urllib.error
import urllib.parse
import urllib.request

from tf_vrre import errors

# Where tensorflow-datasets 4.9 downloads each data set from (tests/workflows/image_classification/test_tfds_source.py checks
# these against the installed builders).
DOWNLOAD_URLS = {
    "cifar10": "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz",
    "cifar100": "https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz",
    "svhn_cropped": "http://ufldl.stanford.edu/housenumbers/train_32x32.mat",
}
PROBE_SECONDS = 5.0

__all__ = ["OfflineError", "DOWNLOAD_URLS", "PROBE_SECONDS", "data_root", "prepared", "probe", "check_download", "load"]


class OfflineError(errors.TfVrreError, FileNotFoundError):
    """tfds data are neither prepared nor downloadable (no connection, or downloads disabled)."""


def data_root(data_dir):
    """tensorflow-datasets' data directory: ``data_dir``, else ``$TFDS_DATA_DIR``, else ``~/tensorflow_datasets``."""
    if data_dir is not None:
        return os.path.expanduser(str(data_dir))
    return os.environ.get("TFDS_DATA_DIR", os.path.join(os.path.expanduser("~"), "tensorflow_datasets"))


def prepared(name, data_dir):
    """Whether ``data_dir`` holds a prepared version of ``name`` (``<name>/<version>/dataset_info.json``;
    the layout tensorflow-datasets writes), without importing it."""
    folder = os.path.join(data_root(data_dir), name)
    try:
        versions = [v for v in os.listdir(folder) if not v.startswith("incomplete.")]
    except OSError:
        return False
    return any(os.path.isfile(os.path.join(folder, v, "dataset_info.json")) for v in versions)


def _endpoint(url):
    """``(host, port)`` a download of ``url`` connects to first: the proxy of the environment, if any."""
    parts = urllib.parse.urlsplit(url)
    proxy = None if urllib.request.proxy_bypass(parts.hostname) else urllib.request.getproxies().get(parts.scheme)
    if proxy:
        p = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        return p.hostname, p.port or (443 if p.scheme == "https" else 80)
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def probe(url, seconds=PROBE_SECONDS):
    """``None`` if ``url``'s host (or the proxy of the environment) answers an HTTP ``HEAD`` request
    for it within ``seconds`` in total, else why not.

    An answer is required, not only an open TCP connection: a proxy or host that accepts the
    connection and then says nothing (where tensorflow-datasets would retry for minutes) is no
    connection.  A proxy's own refusal (HTTP 407, 502, 503, 504) is none either; any other HTTP
    status means the host answered.  The request runs in a daemon thread, so a hanging resolver or
    TLS handshake cannot block longer either.
    """
    host, port = _endpoint(url)
    outcome = {}

    def ask():
        try:
            urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=seconds).close()
        except urllib.error.HTTPError as err:
            if err.code in (407, 502, 503, 504):
                outcome["error"] = f"{host}:{port}: answered HTTP {err.code} ({err.reason})"
        except (OSError, ValueError) as err:  # URLError, timeouts, TLS errors
            reason = getattr(err, "reason", err)
            outcome["error"] = f"{host}:{port}: {reason or type(err).__name__}"

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    thread.join(seconds + 0.5)
    if thread.is_alive():
        return f"{host}:{port}: no answer within {seconds:g} s"
    return outcome.get("error")


def check_download(name, data_dir, download=True):
    """Raises :class:`OfflineError` unless data set ``name`` can be downloaded now (call it when
    the data are not prepared in ``data_dir``)."""
    where = data_root(data_dir)
    build = f"`tfds build {name} --data_dir {where}`"
    npz = "or use --source npz with a --data-dir of .npz files"
    if not download:
        raise OfflineError(
            f"tensorflow-datasets {name} is not prepared in {where!r} and downloads are off "
            f"(--no-download / download=False); prepare it once with internet access (without "
            f"--no-download, or {build}), give the --data-dir that holds it, {npz}"
        )
    offline = f"to work offline, prepare it once with internet access ({build}) and pass --no-download, {npz}"
    reason = probe(DOWNLOAD_URLS[name])
    if reason is not None:
        raise OfflineError(
            f"tensorflow-datasets {name} is not prepared in {where!r} and cannot be downloaded "
            f"(no connection: {reason}); {offline}"
        )


def load(name, split, data_dir, download):
    """``(x, y)`` numpy arrays of ``name:split`` through ``tfds.load`` (probing the download host
    first when the data are not prepared)."""
    import numpy as np
    import tensorflow_datasets as tfds

    try:
        if download and not tfds.builder(name, data_dir=data_dir).is_prepared():
            check_download(name, data_dir, download)
        ds = tfds.load(name, split=split, data_dir=data_dir, download=download, as_supervised=True)
        xs, ys = [], []
        for xb, yb in tfds.as_numpy(ds.batch(4096)):  # whole-split batch_size=-1 breaks under mocks
            xs.append(xb)
            ys.append(yb)
    except OfflineError:
        raise
    except Exception as err:  # noqa: BLE001  (tfds raises AssertionError / DatasetNotFoundError / OSError)
        hint = "" if download else " (download=False: prepare it first, or use the npz source)"
        raise FileNotFoundError(
            f"tensorflow-datasets could not load {name}:{split} from data_dir "
            f"{data_dir!r}{hint}: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
        ) from None
    if not xs:
        return np.zeros((0, 32, 32, 3), np.uint8), np.zeros(0, np.int64)
    return np.concatenate(xs), np.concatenate(ys)
