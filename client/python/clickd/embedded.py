"""The embedded replica from Python: Predict in this process, no RPC (docs/embedded.md).

    import clickd
    replica = clickd.EmbeddedReplica("nats://10.0.0.1:4222")
    response = replica.predict("ctr", candidates=[{"ad": [7]}], context={"user": ["u1"]})
    replica.close()

It loads libclickd_embedded.so (the C ABI of embedded/clickd_embedded.h):
from ``library``, else $CLICKD_EMBEDDED_LIB, else the system's search path.
Requests are built and responses parsed with the same messages as
``Client.predict``, so switching between the two is a one-line change.
Errors raise the same exception classes (clickd.errors).
"""

import ctypes
import ctypes.util
import os
import threading
from typing import Any, Iterable, Optional

import grpc

from clickd import messages
from clickd.errors import error_for
from clickd.v1 import clickd_pb2 as pb

__all__ = ["EmbeddedReplica"]

_CODES = {code.value[0]: code for code in grpc.StatusCode}


def _load(library: Optional[str]) -> ctypes.CDLL:
    path = library or os.environ.get("CLICKD_EMBEDDED_LIB") or \
        ctypes.util.find_library("clickd_embedded")
    if not path:
        raise OSError("libclickd_embedded.so not found: pass library=..., or set "
                      "CLICKD_EMBEDDED_LIB (the CMake target clickd_embedded_shared builds it)")
    lib = ctypes.CDLL(path)
    handle = ctypes.c_void_p
    err = ctypes.POINTER(ctypes.c_char_p)
    lib.clickd_embedded_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                         ctypes.c_int64, ctypes.POINTER(handle), err]
    lib.clickd_embedded_open.restype = ctypes.c_int
    lib.clickd_embedded_predict.argtypes = [handle, ctypes.c_char_p, ctypes.c_size_t,
                                            ctypes.POINTER(ctypes.c_void_p),
                                            ctypes.POINTER(ctypes.c_size_t), err]
    lib.clickd_embedded_predict.restype = ctypes.c_int
    lib.clickd_embedded_state_digest.argtypes = [handle, ctypes.c_char_p, ctypes.c_char_p, err]
    lib.clickd_embedded_state_digest.restype = ctypes.c_int
    lib.clickd_embedded_applied_version.argtypes = [handle]
    lib.clickd_embedded_applied_version.restype = ctypes.c_uint64
    lib.clickd_embedded_wait_for_version.argtypes = [handle, ctypes.c_uint64, ctypes.c_int64, err]
    lib.clickd_embedded_wait_for_version.restype = ctypes.c_int
    lib.clickd_embedded_stats_json.argtypes = [handle]
    lib.clickd_embedded_stats_json.restype = ctypes.c_void_p
    lib.clickd_embedded_close.argtypes = [handle]
    lib.clickd_embedded_close.restype = None
    lib.clickd_embedded_free.argtypes = [ctypes.c_void_p]
    lib.clickd_embedded_free.restype = None
    lib.clickd_embedded_metrics_text.argtypes = [handle]
    lib.clickd_embedded_metrics_text.restype = ctypes.c_void_p
    return lib


class EmbeddedReplica:
    """A read-only replica of a clickd deployment inside this process.

    ``nats_url``: the deployment's NATS servers (comma-separated);
    ``stream_prefix``: its --nats_stream. Opening restores every model from
    the newest published snapshot and applies the log (up to
    ``catch_up_timeout`` seconds). Safe to use from several threads; the
    GIL is released while it scores.
    """

    def __init__(self, nats_url: str, stream_prefix: str = "CLICKD", *, nats_creds: str = "",
                 catch_up_timeout: float = 60.0, library: Optional[str] = None):
        self._lib = _load(library)
        self._predict = self._lib.clickd_embedded_predict
        self._lock = threading.Lock()  # guards _handle against close
        handle = ctypes.c_void_p()
        self._call(self._lib.clickd_embedded_open, nats_url.encode(), stream_prefix.encode(),
                   nats_creds.encode(), int(catch_up_timeout * 1000), ctypes.byref(handle))
        self._handle = handle

    def _call(self, function, *args) -> None:
        error = ctypes.c_char_p()
        code = function(*args, ctypes.byref(error))
        if code != 0:
            self._raise(code, error)

    def _raise(self, code: int, error: ctypes.c_char_p) -> None:
        """Raises the library's failure (code != 0), freeing its message."""
        message = error.value.decode(errors="replace") if error.value else ""
        if error:
            self._lib.clickd_embedded_free(ctypes.cast(error, ctypes.c_void_p))
        raise error_for(_CODES.get(code, grpc.StatusCode.UNKNOWN), message)

    def _open_handle(self) -> ctypes.c_void_p:
        if self._handle is None:
            raise ValueError("the embedded replica is closed")
        return self._handle

    def predict(self, model, candidates: Iterable[Any] = (), context: Any = None, *,
                min_model_version: int = 0, request_id: str = "", wire: str = "features",
                seed: Optional[int] = None, log_impressions: bool = False,
                uncertainty: bool = False, explain_top_k: int = 0,
                timeout: Optional[float] = None,
                wait_for_ready: bool = False) -> pb.PredictResponse:
        """Scores candidates as Client.predict does; returns the same PredictResponse.

        Takes Client.predict's arguments, so that switching is a one-line
        change. ``model`` may also be a whole PredictRequest, or one already
        serialized (bytes): a caller that sends the same request shape
        again skips Python's protobuf serialization, most of this call's
        cost (docs/embedded.md). In this process the only wait is for
        ``min_model_version``: ``timeout`` bounds it (DeadlineExceededError,
        as over gRPC; without it, the library's own 1 s bound), and
        ``wait_for_ready`` has nothing to wait for (the replica is ready once
        made).
        """
        del wait_for_ready  # nothing to connect to: the model is in this process
        if timeout is not None:
            wanted = (model.min_model_version if isinstance(model, pb.PredictRequest)
                      else min_model_version)
            if wanted > 0 and wanted > self.applied_version():
                self.wait_for_version(wanted, timeout)
        # SerializePartialToString: proto3 has no required fields, so the
        # IsInitialized walk SerializeToString adds (a quarter of its time
        # with Debian's protobuf) can only say yes.
        if isinstance(model, (bytes, bytearray)):
            data = bytes(model)
        elif isinstance(model, pb.PredictRequest):
            data = model.SerializePartialToString()
        else:
            data = messages.predict_request(
                model, candidates, context, min_model_version=min_model_version,
                request_id=request_id, wire=wire, seed=seed, log_impressions=log_impressions,
                uncertainty=uncertainty, explain_top_k=explain_top_k).SerializePartialToString()
        out = ctypes.c_void_p()
        size = ctypes.c_size_t()
        error = ctypes.c_char_p()
        code = self._predict(self._open_handle(), data, len(data), ctypes.byref(out),
                             ctypes.byref(size), ctypes.byref(error))
        if code != 0:
            self._raise(code, error)
        try:
            return pb.PredictResponse.FromString(ctypes.string_at(out, size.value))
        finally:
            self._lib.clickd_embedded_free(out)

    def state_digest(self, model: str) -> str:
        """The model's state digest: the same 16 hex digits as Client.state_digest."""
        digest = ctypes.create_string_buffer(17)
        self._call(self._lib.clickd_embedded_state_digest, self._open_handle(), model.encode(),
                   digest)
        return digest.value.decode()

    def applied_version(self) -> int:
        """The stream sequence applied: every Predict answered now reflects it."""
        return int(self._lib.clickd_embedded_applied_version(self._open_handle()))

    def wait_for_version(self, version: int, timeout: float) -> None:
        """Waits until applied_version() >= version; DeadlineExceededError if not in time."""
        self._call(self._lib.clickd_embedded_wait_for_version, self._open_handle(), int(version),
                   int(timeout * 1000))

    def stats(self) -> dict:
        """Applied and newest sequence, lag, NATS connected, models, bootstraps, broken."""
        import json
        raw = self._lib.clickd_embedded_stats_json(self._open_handle())
        if not raw:
            raise MemoryError("clickd_embedded_stats_json")
        try:
            return json.loads(ctypes.string_at(raw).decode())
        finally:
            self._lib.clickd_embedded_free(raw)

    def metrics_text(self) -> str:
        """The replica's metrics (clickd_embedded_*) in Prometheus' text format 0.0.4.

        For the host's own /metrics endpoint: serve it as
        ``text/plain; version=0.0.4`` (docs/embedded.md#metrics)."""
        raw = self._lib.clickd_embedded_metrics_text(self._open_handle())
        if not raw:
            raise MemoryError("clickd_embedded_metrics_text")
        try:
            return ctypes.string_at(raw).decode()
        finally:
            self._lib.clickd_embedded_free(raw)

    def close(self) -> None:
        """Stops applying and disconnects; later calls raise ValueError."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            self._lib.clickd_embedded_close(handle)

    def __enter__(self) -> "EmbeddedReplica":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
