"""The devices TensorFlow's worker service at an address serves, asked without TensorFlow and in
bounded time: the second question :func:`tf_vrre.workflows.image_classification.strategies.tpu_reachable`
asks an address that accepts TCP.

A child process (this module run with ``python -m``) calls the service's ``GetStatus`` with a
deadline of :data:`TPU_STATUS_SECONDS` through grpcio, and reads the answer with a two-field copy
of TensorFlow's message (:func:`status_response_class`, protobuf only); the parent kills it after
:data:`STATUS_PROCESS_SECONDS` whatever the network does.  No TensorFlow is loaded or connected
in either process (TensorFlow's own connection has no deadline).
"""

import json
import os
import subprocess
import sys

TPU_STATUS_SECONDS = 5.0
"""Deadline of the second question :func:`tf_vrre.workflows.image_classification.strategies.tpu_reachable`
asks an address that accepts TCP: which devices TensorFlow's worker service there serves (its
``GetStatus`` call, answered in milliseconds by a TPU node)."""
STATUS_PROCESS_SECONDS = 60.0
"""The child process that asks ``GetStatus`` is killed after this many seconds (its interpreter
start-up included), whatever the network does."""
_MODULE = "tf_vrre.workflows.image_classification.worker_status"  # run as the child process of _device_types

__all__ = ["TPU_STATUS_SECONDS", "STATUS_PROCESS_SECONDS", "no_tpu_devices", "status_response_class"]


def no_tpu_devices(target):
    """``None`` if TensorFlow's worker service at ``target`` lists a TPU device, else why not (asked
    by a child process, :func:`_device_types`, killed after :data:`STATUS_PROCESS_SECONDS`)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(sys.modules["tf_vrre"].__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", _MODULE, target, repr(TPU_STATUS_SECONDS)],
            capture_output=True,
            text=True,
            timeout=STATUS_PROCESS_SECONDS,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"accepts TCP, but asking its devices did not end within {STATUS_PROCESS_SECONDS:g} s"
    lines = proc.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1])
    except (IndexError, ValueError):
        err = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return f"accepts TCP, but its devices could not be asked: {err[:200]}"
    if "error" in answer:
        return (
            f"accepts TCP, but no TensorFlow server answered within {TPU_STATUS_SECONDS:g} s ({answer['error'][:200]})"
        )
    if not any(kind.startswith("TPU") for kind in answer["devices"]):
        return f"a TensorFlow server without a TPU device (devices: {', '.join(answer['devices']) or 'none'})"
    return None


def _device_types(target, seconds):
    """The device types (``"CPU"``, ``"TPU"``, ...) TensorFlow's worker service at ``target``
    (``host:port``) serves: its ``GetStatus`` call, with a deadline of ``seconds``; a
    ``grpc.RpcError`` if it does not answer.  Uses grpcio and protobuf (TensorFlow's own
    dependencies), not TensorFlow."""
    import grpc

    with grpc.insecure_channel(target) as channel:  # an empty GetStatusRequest is b""
        reply = channel.unary_unary("/tensorflow.WorkerService/GetStatus")(b"", timeout=seconds)
    return sorted({d.device_type for d in status_response_class().FromString(reply).device_attributes})


def status_response_class():
    """TensorFlow's ``GetStatusResponse`` message, with the two fields tf_vrre reads (other fields
    are skipped when parsed): ``worker.proto``'s ``repeated DeviceAttributes device_attributes = 1``
    and ``device_attributes.proto``'s ``string name = 1``, ``string device_type = 2``.  Built with
    protobuf's descriptor pool, so that no TensorFlow is imported to read a worker's answer."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="tf_vrre_worker_status.proto", package="tf_vrre_worker_status")
    device = proto.message_type.add(name="DeviceAttributes")
    device.field.add(name="name", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    device.field.add(name="device_type", number=2, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    status = proto.message_type.add(name="GetStatusResponse")
    status.field.add(
        name="device_attributes",
        number=1,
        type=field.TYPE_MESSAGE,
        label=field.LABEL_REPEATED,
        type_name=".tf_vrre_worker_status.DeviceAttributes",
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    descriptor = pool.FindMessageTypeByName("tf_vrre_worker_status.GetStatusResponse")
    if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.22 (GetPrototype is gone in 5.x)
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


def _ask_devices(argv):
    """The child process of :func:`no_tpu_devices`: prints ``{"devices": [...]}`` or ``{"error": "..."}``."""
    import grpc

    target, seconds = argv
    try:
        answer = {"devices": _device_types(target, float(seconds))}
    except grpc.RpcError as err:
        answer = {"error": f"{err.code().name}: {err.details()}"}
    print(json.dumps(answer), flush=True)


if __name__ == "__main__":  # the child process of no_tpu_devices (no TensorFlow)
    _ask_devices(sys.argv[1:])
