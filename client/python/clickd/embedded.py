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

import array
import ctypes
import ctypes.util
import os
import threading
from typing import Any, Iterable, Optional

import grpc

from clickd import messages
from clickd.errors import error_for
from clickd.v1 import clickd_pb2 as pb

__all__ = ["EmbeddedReplica", "KeysRequest"]

_CODES = {code.value[0]: code for code in grpc.StatusCode}


class _CKeysRequest(ctypes.Structure):
    """clickd_embedded_keys_request (embedded/clickd_embedded.h)."""
    _fields_ = [("model", ctypes.c_char_p), ("variant", ctypes.c_char_p),
                ("namespaces", ctypes.c_void_p), ("num_namespaces", ctypes.c_size_t),
                ("context_keys", ctypes.c_void_p), ("context_namespaces", ctypes.c_void_p),
                ("context_values", ctypes.c_void_p), ("context_count", ctypes.c_size_t),
                ("candidate_keys", ctypes.c_void_p), ("candidate_namespaces", ctypes.c_void_p),
                ("candidate_values", ctypes.c_void_p), ("candidate_ends", ctypes.c_void_p),
                ("num_candidates", ctypes.c_size_t), ("predictions", ctypes.c_void_p),
                ("margins", ctypes.c_void_p), ("model_version", ctypes.c_uint64)]


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
    ptr = ctypes.c_void_p  # arrays are passed as their buffers' addresses
    lib.clickd_embedded_predict_keys.argtypes = [
        handle, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
        ptr, ptr, ptr, ctypes.c_size_t, ptr, ptr, ptr, ptr, ctypes.c_size_t, ptr, ptr,
        ctypes.POINTER(ctypes.c_uint64), err]
    lib.clickd_embedded_predict_keys.restype = ctypes.c_int
    lib.clickd_embedded_predict_keys_request.argtypes = [handle, ctypes.POINTER(_CKeysRequest),
                                                         err]
    lib.clickd_embedded_predict_keys_request.restype = ctypes.c_int
    return lib



def _address(values: "array.array") -> int:
    """The address of an array's buffer (0 for an empty one)."""
    return values.buffer_info()[0] if len(values) else 0


class KeysRequest:
    """A Predict in the keys wire form, as flat arrays (EmbeddedReplica.predict_keys).

    ``namespaces`` names the namespaces keys belong to; ``context`` and each
    of ``candidates`` map a namespace (one of them) to its keys, hashed by
    the caller as the keys wire form defines them (clickd.hashing:
    ``named_key(namespace_hash(ns, seed), name)``; docs/hashing.md), or to
    ``(keys, values)``. Build it once and reuse it: ``set_candidate_keys``
    replaces the candidates' keys in place when only the ads change, so a
    call costs no Python-side rebuilding. Its arrays may be changed in
    place, element by element, but not resized (they are pinned: resizing
    raises BufferError).
    """

    def __init__(self, model: str, namespaces: Iterable[str], candidates: Iterable[dict],
                 context: Optional[dict] = None, *, variant: str = ""):
        self.model = model.encode()
        self.variant = variant.encode()
        names = list(namespaces)
        index = {name: i for i, name in enumerate(names)}
        self._names = (ctypes.c_char_p * len(names))(*[n.encode() for n in names])
        self._count_names = len(names)

        def flatten(example, keys, spaces, values):
            for ns, given in (example or {}).items():
                if ns not in index:
                    raise ValueError(f"namespace {ns!r} is not in namespaces {names}")
                ks, vs = given if isinstance(given, tuple) else (given, None)
                keys.extend(int(k) for k in ks)
                spaces.extend([index[ns]] * len(ks))
                values.extend(vs if vs is not None else [1.0] * len(ks))

        self.context_keys, self.context_namespaces = array.array("Q"), array.array("I")
        self.context_values = array.array("f")
        flatten(context, self.context_keys, self.context_namespaces, self.context_values)
        self.candidate_keys, self.candidate_namespaces = array.array("Q"), array.array("I")
        self.candidate_values = array.array("f")
        self.candidate_ends = array.array("Q" if ctypes.sizeof(ctypes.c_size_t) == 8 else "I")
        for candidate in candidates:
            flatten(candidate, self.candidate_keys, self.candidate_namespaces,
                    self.candidate_values)
            self.candidate_ends.append(len(self.candidate_keys))
        self.predictions = array.array("d", [0.0] * len(self.candidate_ends))
        self.margins = array.array("d", [0.0] * len(self.candidate_ends))
        self.model_version = 0
        # The C struct the library reads, filled once: one argument per call
        # instead of 18 (ctypes converts each). A memoryview of each array
        # keeps it from being resized (BufferError) while the struct holds
        # its address; elements may change in place.
        self._c = _CKeysRequest(self.model, self.variant, ctypes.cast(self._names, ctypes.c_void_p),
                                self._count_names)
        self._views = {}
        for name in ("context_keys", "context_namespaces", "context_values", "candidate_keys",
                     "candidate_namespaces", "candidate_values", "candidate_ends",
                     "predictions", "margins"):
            self._pin(name)
        self._c.context_count = len(self.context_keys)
        self._c.num_candidates = len(self.candidate_ends)
        self._ref = ctypes.byref(self._c)
        self._error = ctypes.c_char_p()
        self._error_ref = ctypes.byref(self._error)

    def _pin(self, name: str) -> None:
        values = getattr(self, name)
        self._views[name] = memoryview(values)
        setattr(self._c, name, _address(values) or None)

    def set_candidate_keys(self, keys: Iterable[int]) -> None:
        """Replaces every candidate key, in order (the same count and namespaces)."""
        new = array.array("Q", keys)
        if len(new) != len(self.candidate_keys):
            raise ValueError(f"{len(new)} keys for {len(self.candidate_keys)}")
        self._views.pop("candidate_keys").release()
        self.candidate_keys = new
        self._pin("candidate_keys")


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
        self._predict_keys = self._lib.clickd_embedded_predict_keys_request
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

    def predict_keys(self, request: KeysRequest) -> "array.array":
        """Scores a KeysRequest without protobuf; returns its predictions.

        The same answer, bit for bit, as predict() of the same request in
        the keys wire form (the C ABI's clickd_embedded_predict_keys): a
        caller that already holds hashed keys skips building and parsing
        messages, most of predict()'s cost (docs/embedded.md).
        ``request.predictions`` and ``request.margins`` hold the answer
        (overwritten by the next call with the same request) and
        ``request.model_version`` the version that scored it.
        """
        # The request's own error slot: the library writes it only on a
        # failure, which _raise frees and clears.
        code = self._predict_keys(self._handle or self._open_handle(), request._ref,
                                  request._error_ref)
        if code != 0:
            error, request._error = request._error, ctypes.c_char_p()
            request._error_ref = ctypes.byref(request._error)
            self._raise(code, error)
        request.model_version = request._c.model_version
        return request.predictions

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
