"""Distribution strategies of the image workflow (``tf-vrre train --strategy``, :func:`tf_vrre.train`).

Names (:data:`STRATEGIES`):

- ``"default"``: the current strategy (one device);
- ``"mirrored"``: ``MirroredStrategy`` over all local GPUs (or the CPU);
- ``"multiworker"``: ``MultiWorkerMirroredStrategy``; the cluster and this process's task come from
  ``$TF_CONFIG`` (checked here: JSON with ``cluster`` and ``task``); without ``TF_CONFIG`` it is one
  worker.  Create it before TensorFlow runs any op (collective ops are configured at start-up);
- ``"tpu"``: ``TPUClusterResolver(tpu=T)`` with ``T = "grpc://" + address`` for an address given
  (``tpu_address`` or ``$COLAB_TPU_ADDR``, a Colab TPU node), else ``"local"`` (a TPU VM), then
  ``experimental_connect_to_cluster``, ``initialize_tpu_system`` and ``TPUStrategy``.  An address
  is first asked, in bounded time, whether it is a TPU node (:func:`tpu_reachable`: a TCP
  connection within :data:`TPU_PROBE_SECONDS`, then TensorFlow's worker service there must list a
  TPU device within :data:`.worker_status.TPU_STATUS_SECONDS`, asked by a child process:
  :mod:`tf_vrre.workflows.image_classification.worker_status`).  TensorFlow's own
  connection has no deadline: to an address that accepts TCP but is no TPU it would wait for
  ever; here such an address is a ``ValueError`` within seconds;
- ``"auto"``: ``"tpu"`` when :func:`tpu_present` (or ``tpu_address`` answers as a TPU node), falling
  back, with a warning, to the rules below if the TPU cannot be initialized or the address
  (``tpu_address`` / ``$COLAB_TPU_ADDR``) is no TPU node; else ``"mirrored"`` with several GPUs,
  else ``"default"``.  A failed connection is undone first (TensorFlow's eager context would
  otherwise still point at the remote cluster), so the fallback trains.  ``"default"`` and
  ``"mirrored"`` never look for a TPU.

Under ``MultiWorkerMirroredStrategy`` every worker runs the same steps (and the same callbacks:
collecting a sample evaluates the model under the strategy, a collective op), but only the chief
(:func:`is_chief`) writes the run directory; the others write to a temporary directory (the
Keras multi-worker convention).  The TensorFlow-free helpers (:func:`tpu_present`,
:func:`tf_config`, :func:`check`) let the command line reject a bad choice before TensorFlow starts.

Example:
  >>> from tf_vrre.workflows.image_classification import strategies
  >>> strategies.check("multiworker")       # ValueError if $TF_CONFIG is malformed
  >>> strategy = strategies.make_strategy("auto")
"""

import glob
import json
import os
import socket

import tf_vrre._user_warning as _user_warning
import tf_vrre.workflows.image_classification.worker_status as worker_status

STRATEGIES = ("auto", "default", "mirrored", "multiworker", "tpu")
MAX_STEPS_PER_EXECUTION = 1024
"""Largest ``steps_per_execution`` the image workflow accepts: ``tf_vrre.sgmcmc.swap_record.CAPACITY``,
the per-step swap record ring buffer that ``SwapLogger`` drains after every execution."""
TASK_TYPES = ("chief", "worker")
TPU_PROBE_SECONDS = 3.0
"""Timeout of the TCP probe of a TPU node's address (:func:`tpu_reachable`)."""
GOOGLE_PCI_VENDOR = "0x1ae0"

__all__ = [
    "STRATEGIES",
    "MAX_STEPS_PER_EXECUTION",
    "TPU_PROBE_SECONDS",
    "tpu_present",
    "tpu_reachable",
    "tf_config",
    "check",
    "make_strategy",
    "split_cpu",
    "check_options",
    "is_tpu",
    "is_multi_worker",
    "is_chief",
    "name_of",
    "worker_name",
    "gather_ints",
]
_tpu_strategies = {}  # target -> TPUStrategy: a TPU system is initialized once per process


def tpu_present():
    """True if a TPU is detectable without TensorFlow and in bounded time: a TPU VM's devices
    ``/dev/accel*`` (v2-v4); ``/dev/vfio/<n>`` (v5e and later) together with a Google PCI device
    (vendor ``0x1ae0``: ``/dev/vfio`` alone is any passed-through PCI device); or ``$COLAB_TPU_ADDR``
    (a TPU node) that answers as a TPU node (:func:`tpu_reachable`, at most
    :data:`TPU_PROBE_SECONDS` + :data:`.worker_status.STATUS_PROCESS_SECONDS`).  A stale ``$COLAB_TPU_ADDR``, or
    one that accepts TCP but is no TPU, therefore does not count."""
    if glob.glob("/dev/accel*") or _vfio_tpu():
        return True
    address = os.environ.get("COLAB_TPU_ADDR")
    return bool(address) and tpu_reachable(address) is None


def tpu_reachable(address, timeout=None):
    """``None`` if a TPU node answers at ``address`` (``host:port`` or ``grpc://host:port``), else
    the reason (a short string).  Two questions, each with a deadline:

    1. does it accept a TCP connection within ``timeout`` seconds (default :data:`TPU_PROBE_SECONDS`)?
    2. does TensorFlow's worker service there list a TPU device within :data:`TPU_STATUS_SECONDS`?
       (``tensorflow.WorkerService/GetStatus``, asked by a child process killed after
       :data:`tf_vrre.workflows.image_classification.worker_status.STATUS_PROCESS_SECONDS`: no
       TensorFlow is loaded or connected in this process; :mod:`.worker_status`.)

    TensorFlow's ``experimental_connect_to_cluster`` has no deadline: an address that accepts TCP
    but never answers it (a proxy, another service on the port) would block it for ever.
    """
    text = address[len("grpc://") :] if address.startswith("grpc://") else address
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return f"not host:port ({address!r})"
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout or TPU_PROBE_SECONDS).close()
    except OSError as err:
        return f"no TCP connection within {timeout or TPU_PROBE_SECONDS:g} s: {type(err).__name__}"
    return worker_status.no_tpu_devices(text)


def _vfio_tpu():
    """True if ``/dev/vfio/<n>`` exists and a Google PCI device (vendor 0x1ae0, a TPU chip) is present."""
    if not glob.glob("/dev/vfio/[0-9]*"):
        return False
    for path in glob.glob("/sys/bus/pci/devices/*/vendor"):
        try:
            with open(path) as f:
                if f.read().strip().lower() == GOOGLE_PCI_VENDOR:
                    return True
        except OSError:
            continue
    return False


def _tpu_probe(reason=None):
    """What the TPU detection found, for an error message (``reason``: :func:`tpu_reachable` of
    ``$COLAB_TPU_ADDR`` if already asked)."""
    address = os.environ.get("COLAB_TPU_ADDR")
    reason = address and (reason or tpu_reachable(address))
    colab = (
        f"$COLAB_TPU_ADDR = {address!r} ({'not reachable: ' + reason if reason else 'reachable'})"
        if address
        else "$COLAB_TPU_ADDR unset"
    )
    vfio = glob.glob("/dev/vfio/[0-9]*")
    return (
        f"{colab}, /dev/accel* {'found' if glob.glob('/dev/accel*') else 'absent'}"
        f", /dev/vfio/<n> {('found with a Google PCI device' if _vfio_tpu() else 'found, no Google PCI device') if vfio else 'absent'}"
    )


def tf_config(environ=None):
    """The parsed ``$TF_CONFIG`` (``None`` when unset or empty), its structure checked.

    Rule: a JSON object with ``"cluster"`` (job name -> non-empty list of ``"host:port"``) and
    ``"task"`` (``{"type": "worker"|"chief", "index": i}`` with ``i`` a position in that job).

    Raises:
      ValueError: naming ``TF_CONFIG`` and what is wrong.
    """
    text = (os.environ if environ is None else environ).get("TF_CONFIG", "")
    if not text.strip():
        return None
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"TF_CONFIG is not valid JSON ({err}): {text[:80]!r}") from None
    example = '{"cluster": {"worker": ["host0:port", "host1:port"]}, "task": {"type": "worker", "index": 0}}'
    if not isinstance(cfg, dict) or not isinstance(cfg.get("cluster"), dict) or not cfg["cluster"]:
        raise ValueError(f"TF_CONFIG needs a 'cluster' object (job -> list of host:port), e.g. {example}")
    for job, tasks in cfg["cluster"].items():
        if (
            not isinstance(tasks, list)
            or not tasks
            or not all(isinstance(t, str) and t.rpartition(":")[2].isdigit() for t in tasks)
        ):
            raise ValueError(
                f"TF_CONFIG cluster job {job!r} must be a non-empty list of 'host:port' strings, got {tasks!r}"
            )
    task = cfg.get("task")
    if not isinstance(task, dict) or "type" not in task or "index" not in task:
        raise ValueError(f"TF_CONFIG needs a 'task' object with 'type' and 'index', e.g. {example}")
    kind, index = task["type"], task["index"]
    if kind not in TASK_TYPES or kind not in cfg["cluster"]:
        raise ValueError(
            f"TF_CONFIG task type {kind!r} must be one of {', '.join(TASK_TYPES)} and a job of the "
            f"cluster ({', '.join(cfg['cluster'])})"
        )
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(cfg["cluster"][kind]):
        raise ValueError(
            f"TF_CONFIG task index {index!r} must be an integer in [0, {len(cfg['cluster'][kind])}) "
            f"(the {kind} job has {len(cfg['cluster'][kind])} task(s))"
        )
    unsupported = sorted(set(cfg["cluster"]) - set(TASK_TYPES))
    if unsupported:
        raise ValueError(
            f"TF_CONFIG cluster jobs {unsupported} are not used by MultiWorkerMirroredStrategy "
            f"(only {', '.join(TASK_TYPES)})"
        )
    return cfg


def check(name, tpu_address=None, detect_tpu=True):
    """Checks a strategy choice without TensorFlow (``ValueError`` naming the problem).

    ``name`` must be in :data:`STRATEGIES`; ``"multiworker"`` needs a well-formed ``$TF_CONFIG``
    if one is set; ``"tpu"`` (with ``detect_tpu``) needs an address or a detectable TPU
    (:func:`tpu_present`).
    """
    if name not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {name!r}")
    if name == "multiworker":
        tf_config()
    if name == "tpu" and detect_tpu and not tpu_address and not (glob.glob("/dev/accel*") or _vfio_tpu()):
        address = os.environ.get("COLAB_TPU_ADDR")
        reason = tpu_reachable(address) if address else "unset"
        if reason:  # tpu_present() is False: one probe, reported as found
            raise ValueError(
                f"strategy 'tpu': no TPU detected ({_tpu_probe(reason)}); on Colab choose a TPU runtime, "
                "elsewhere set COLAB_TPU_ADDR=host:port of the TPU"
            )


def make_strategy(name="auto", tpu_address=None, cpu_devices=None):
    """The ``tf.distribute.Strategy`` called ``name`` (see the module docstring for the rules).

    Args:
      name: one of :data:`STRATEGIES`.
      tpu_address: ``"host:port"`` (or ``"grpc://host:port"``) of a TPU node; default
        ``$COLAB_TPU_ADDR``, else the local TPU.
      cpu_devices: with ``"mirrored"``: split the CPU into this many logical devices
        (:func:`split_cpu`) and mirror over them, e.g. to try one chain per replica without as many
        GPUs (the devices share the CPU's cores: no faster than one).

    Raises:
      ValueError: an unknown name; ``"tpu"`` with no reachable TPU (naming what was tried);
        ``"multiworker"`` with a malformed ``$TF_CONFIG`` or created after TensorFlow started;
        ``cpu_devices`` with another strategy, or once TensorFlow has initialized its devices.
    """
    import tensorflow as tf

    check(name, tpu_address, detect_tpu=False)  # a TPU is looked for below, and what was tried is reported
    if cpu_devices is not None:
        if name != "mirrored":
            raise ValueError(f"cpu_devices: logical CPU devices are mirrored over by strategy 'mirrored', got {name!r}")
        return tf.distribute.MirroredStrategy(split_cpu(cpu_devices))
    address = tpu_address or os.environ.get("COLAB_TPU_ADDR")
    where = "tpu_address" if tpu_address else "$COLAB_TPU_ADDR"
    found = local = False
    reason = None
    if name == "auto":
        local = found = not tpu_address and bool(glob.glob("/dev/accel*") or _vfio_tpu())
        if not found and address:
            reason = tpu_reachable(address)
            found = reason is None
    if name == "tpu" or found:
        try:
            return _tpu_strategy(tpu_address, asked=found and reason is None and not local)
        except ValueError as err:
            if name == "tpu":
                raise
            _user_warning.warn(f"strategy 'auto': {err}; using the GPUs / CPU")
    elif name == "auto" and address:
        _user_warning.warn(f"strategy 'auto': no TPU at {address!r} ({where}): {reason}; using the GPUs / CPU")
    if name == "multiworker":
        cfg = tf_config()
        try:
            return tf.distribute.MultiWorkerMirroredStrategy()
        except (RuntimeError, ValueError) as err:
            raise ValueError(
                f"strategy 'multiworker' (TF_CONFIG {'set' if cfg else 'unset: one worker'}) could not "
                f"start: {err}. Create it before TensorFlow runs anything else, e.g. "
                "strategy = tf_vrre.workflows.image_classification.strategies.make_strategy("
                "'multiworker') at the top of the script, then train(..., strategy=strategy)"
            ) from None
    if name == "mirrored" or (name == "auto" and len(tf.config.list_logical_devices("GPU")) > 1):
        return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()


def split_cpu(count):
    """Splits the host CPU into ``count`` logical devices (before TensorFlow initializes them);
    returns their names.

    Raises:
      ValueError: ``count`` not a positive integer, or the devices were initialized already with
        another split.
    """
    import tensorflow as tf

    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"cpu_devices must be a positive integer, got {count!r}")
    cpu = tf.config.list_physical_devices("CPU")[0]
    wanted = [tf.config.LogicalDeviceConfiguration()] * count
    try:
        tf.config.set_logical_device_configuration(cpu, wanted)
    except RuntimeError:  # initialized: fine if already split so
        if len(tf.config.list_logical_devices("CPU")) != count:
            raise ValueError(
                f"cpu_devices={count}: TensorFlow has initialized its devices already "
                f"({len(tf.config.list_logical_devices('CPU'))} CPU); split the CPU before anything else runs"
            ) from None
    return [f"/cpu:{i}" for i in range(count)]


def _tpu_strategy(tpu_address, asked=False):
    """``TPUStrategy`` of ``tpu_address`` / ``$COLAB_TPU_ADDR`` / the local TPU (``asked``: the
    address was just found to be a TPU node by :func:`tpu_reachable`)."""
    import tensorflow as tf

    address = tpu_address or os.environ.get("COLAB_TPU_ADDR")
    target = "local" if not address else (address if address.startswith("grpc://") else f"grpc://{address}")
    if target in _tpu_strategies:
        return _tpu_strategies[target]
    reason = address and not asked and tpu_reachable(address)
    if reason:  # connecting to an address that is no TPU node would block for ever: asked first, with deadlines
        raise ValueError(
            f"strategy 'tpu' (--strategy tpu / strategy=\"tpu\"): no TPU reachable at {target!r} "
            f"({'tpu_address' if tpu_address else '$COLAB_TPU_ADDR'}): {reason}. On Colab choose a TPU "
            "runtime; for a TPU node pass tpu_address='host:port' (or set COLAB_TPU_ADDR) of a running TPU"
        )
    from tensorflow.python.eager import context

    before = context.get_server_def()
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=target)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError) as err:
        _forget_cluster(before)
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise ValueError(
            f"strategy 'tpu' (--strategy tpu / strategy=\"tpu\"): no TPU reachable. Tried "
            f"TPUClusterResolver(tpu={target!r}), experimental_connect_to_cluster, initialize_tpu_system: "
            f"{type(err).__name__}: {first[:300]}. Detected: {_tpu_probe(reason)}. On Colab choose a TPU runtime; "
            "for a TPU node pass tpu_address='host:port' (or set COLAB_TPU_ADDR)"
        ) from None
    _tpu_strategies[target] = strategy
    return strategy


def _forget_cluster(before):
    """Undoes a failed ``experimental_connect_to_cluster``: TensorFlow's eager context keeps the
    remote cluster it was given (``before``: the server definition it held until then), and every
    later op then fails (``UnimplementedError``), the GPUs / CPU fallback of ``"auto"`` too.
    TensorFlow has no public call to disconnect; ``context._reset_context`` (what its own tests
    use) makes a new context.  Only done when the failed connection changed the context."""
    from tensorflow.python.eager import context

    if context.get_server_def() != before:
        context._reset_context()


def check_options(strategy, jit_compile=None, steps_per_execution=None):
    """The sampler's rule on the execution options under ``strategy`` (checked before training):
    :func:`tf_vrre.sampler.execution.check` (``steps_per_execution > 1`` with several replicas
    outside a TPU, XLA with several replicas on CPU devices), with ``None`` for 1 step.

    Raises:
      tf_vrre.sampler.execution.ExecutionError: naming the argument and the values allowed.
    """
    import tf_vrre.sampler.execution as execution

    execution.check(strategy, jit_compile, steps_per_execution or 1)


def is_tpu(strategy):
    """True for a ``TPUStrategy`` (any version)."""
    return "TPUStrategy" in type(strategy).__name__


def is_multi_worker(strategy):
    """True for a ``MultiWorkerMirroredStrategy`` whose cluster has more than one task."""
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return False
    spec = strategy.cluster_resolver.cluster_spec().as_dict()
    return sum(len(tasks) for job, tasks in spec.items() if job in TASK_TYPES) > 1


def is_chief(strategy):
    """True if this process writes the run's files: always, except on a non-chief worker of a
    multi-worker cluster (chief = task type ``chief``, or ``worker`` 0 when there is no chief:
    ``strategy.extended.should_checkpoint``)."""
    return not is_multi_worker(strategy) or bool(strategy.extended.should_checkpoint)


def name_of(strategy):
    """The :data:`STRATEGIES` name of a strategy object (its class name for other strategies)."""
    import tensorflow as tf

    if is_tpu(strategy):
        return "tpu"
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return "multiworker"
    if isinstance(strategy, tf.distribute.MirroredStrategy):
        return "mirrored"
    if strategy is tf.distribute.get_strategy() and not tf.distribute.has_strategy():
        return "default"
    return type(strategy).__name__


def worker_name(strategy):
    """``"worker 1"``-style name of this process in a multi-worker cluster (``"chief"`` / ``"single"``)."""
    if not is_multi_worker(strategy):
        return "single"
    r = strategy.cluster_resolver
    return f"{r.task_type} {r.task_id}"


def gather_ints(strategy, values):
    """``values`` (ints) of every worker, as a list of per-worker lists, exchanged through the
    strategy (a collective op: every worker must call it).  Used to check that the workers of a
    multi-worker run agree (same resume point) before training starts."""
    import tensorflow as tf

    local = tf.constant([list(values)], tf.int64)
    per_replica = strategy.experimental_distribute_values_from_function(lambda ctx: local)
    rows = strategy.gather(per_replica, axis=0).numpy()  # one row per replica, worker by worker
    return [row.tolist() for row in rows[:: strategy.num_replicas_in_sync // _num_workers(strategy)]]


def _num_workers(strategy):
    if not is_multi_worker(strategy):
        return 1
    spec = strategy.cluster_resolver.cluster_spec().as_dict()
    return sum(len(tasks) for job, tasks in spec.items() if job in TASK_TYPES)
