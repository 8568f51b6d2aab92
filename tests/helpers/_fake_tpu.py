"""Addresses for the TPU-detection tests: a port that only accepts TCP, and a stand-in for a TPU
node's TensorFlow worker service that answers ``GetStatus`` with given device types and nothing
else (every other call, e.g. ``EagerService/CreateContext``, is UNIMPLEMENTED: a connection that
fails fast after the address looked like a TPU)."""

import contextlib
import socket
from concurrent import futures

from tf_vrre.workflows.image_classification import worker_status


@contextlib.contextmanager
def tcp_only():
    """``host:port`` of a socket that accepts TCP connections (the kernel completes them) but never
    answers: what a proxy or another service on a TPU's port looks like to TensorFlow."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        yield f"127.0.0.1:{server.getsockname()[1]}"


@contextlib.contextmanager
def worker_service(device_types=("CPU", "TPU", "TPU_SYSTEM")):
    """``host:port`` of a gRPC server whose ``tensorflow.WorkerService/GetStatus`` lists
    ``device_types`` (a TPU node's answer by default); nothing else is implemented."""
    import grpc

    response = worker_status.status_response_class()()
    for i, kind in enumerate(device_types):
        device = response.device_attributes.add()
        device.name, device.device_type = f"/job:worker/replica:0/task:0/device:{kind}:{i}", kind
    reply = response.SerializeToString()
    handler = grpc.method_handlers_generic_handler(
        "tensorflow.WorkerService", {"GetStatus": grpc.unary_unary_rpc_method_handler(lambda request, context: reply)}
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None)
