"""Client: the clickd.v1.Clickd service over one gRPC channel.

A thin layer over the generated stub that puts a deadline on every call,
retries Predict (and only Predict: it is idempotent, an Update is not) on
UNAVAILABLE with jittered exponential backoff inside the call's deadline,
raises ClickdError subclasses carrying the gRPC code and message, and sends
a bearer token and TLS credentials when given. It follows the C++ client
(client/clickd_client.h); docs/client_python.md shows how to use it.

Thread safety: a Client is safe for concurrent use by any number of
threads (gRPC channels and stubs are); its options are fixed at creation.
An UpdateStreamWriter or AckedUpdateStream belongs to one thread.
"""

import dataclasses
import math
import queue
import random
import threading
import time
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple

import grpc

from clickd import messages
from clickd.errors import ClickdError, UnavailableError, error_for, from_rpc_error
from clickd.v1 import clickd_pb2 as pb
from clickd.v1 import clickd_pb2_grpc as pb_grpc


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """How Predict retries UNAVAILABLE (seconds; the C++ client's RetryPolicy).

    Attempt k (k = 1, 2, ...) that fails is followed by a sleep of
    min(initial_backoff * multiplier^(k-1), max_backoff) times a uniform
    factor in [1 - jitter, 1 + jitter], unless that sleep would reach the
    call's deadline: then the last UNAVAILABLE is raised at once.
    """

    max_attempts: int = 3  # including the first; 1 disables retries
    initial_backoff: float = 0.05
    multiplier: float = 2.0
    max_backoff: float = 1.0
    jitter: float = 0.2

    def validate(self) -> None:
        """Raises ValueError for a policy the C++ client would refuse."""
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts is {self.max_attempts}; must be >= 1")
        if not 0 < self.initial_backoff <= self.max_backoff:
            raise ValueError("the retry policy needs 0 < initial_backoff <= max_backoff")
        if not (math.isfinite(self.multiplier) and self.multiplier >= 1):
            raise ValueError("multiplier must be finite and >= 1")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter must be in [0, 1]")

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """The sleep after failed attempt ``attempt`` (1-based), jitter included."""
        base = self.initial_backoff
        for _ in range(1, attempt):
            if base >= self.max_backoff:
                break
            base *= self.multiplier
        base = min(base, self.max_backoff)
        return base * rng.uniform(1 - self.jitter, 1 + self.jitter)


class Client:
    """A clickd client. See the module's doc for its contract.

    target            "host:port"
    timeout           every call's deadline in seconds, from its start (for
                      Predict it covers every attempt and backoff, for a
                      stream the whole stream); each method takes timeout=
                      to override it for one call
    retry             Predict's RetryPolicy
    token             bearer token: sends ``authorization: Bearer TOKEN``
                      metadata on every call (docs/security.md)
    tls               use TLS (implied by any of the three PEM arguments);
                      without root_certificates the system's roots are used
    root_certificates PEM bytes of the CA that signed the server's certificate
    private_key, certificate_chain  PEM bytes of a client certificate (mTLS)
    server_name       the name to verify the server's certificate against,
                      when it differs from the target's host
    channel           a grpc.Channel made by the caller (then the TLS
                      arguments and channel_options must be unset)
    channel_options   extra gRPC channel arguments
    sleep             sleeps between Predict attempts; tests replace it
    """

    def __init__(self, target: str = "", *, timeout: float = 5.0,
                 retry: Optional[RetryPolicy] = None, token: Optional[str] = None,
                 tls: bool = False, root_certificates: Optional[bytes] = None,
                 private_key: Optional[bytes] = None,
                 certificate_chain: Optional[bytes] = None, server_name: Optional[str] = None,
                 channel: Optional[grpc.Channel] = None,
                 channel_options: Sequence[Tuple[str, Any]] = (),
                 sleep: Callable[[float], None] = time.sleep):
        if not timeout > 0:
            raise ValueError(f"timeout is {timeout}; must be positive")
        self._retry = retry or RetryPolicy()
        self._retry.validate()
        self._timeout = timeout
        self._sleep = sleep
        self._rng = random.Random()
        self._lock = threading.Lock()
        self._watch_ended: Optional[float] = None  # guarded by _lock, as is _rng
        if token is not None and (not token or any(c.isspace() for c in token)):
            raise ValueError("token must be non-empty and have no spaces")
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        secure = tls or any(x is not None for x in (root_certificates, private_key,
                                                      certificate_chain))
        if channel is not None:
            if secure or server_name or channel_options:
                raise ValueError("with channel=, set TLS and channel options on that channel")
            self._channel = channel
        else:
            if not target:
                raise ValueError("target is empty; want host:port")
            self._channel = self._make_channel(target, secure, root_certificates, private_key,
                                               certificate_chain, server_name, channel_options)
        self._stub = pb_grpc.ClickdStub(self._channel)

    def _make_channel(self, target, secure, root_certificates, private_key, certificate_chain,
                      server_name, channel_options) -> grpc.Channel:
        # gRPC's own reconnect backoff (1 s, growing to 120 s) would leave
        # retries hitting a channel still backing off after the server is back.
        # (Not grpc.min_reconnect_backoff_ms: it is also the connect timeout,
        # and a short one fails every handshake on a busy machine.)
        def ms(seconds: float) -> int:
            return max(1, min(int(seconds * 1000), 1 << 30))

        options = [("grpc.initial_reconnect_backoff_ms", ms(self._retry.initial_backoff)),
                   ("grpc.max_reconnect_backoff_ms", ms(self._retry.max_backoff))]
        if server_name:
            options.append(("grpc.ssl_target_name_override", server_name))
        options.extend(channel_options)
        if not secure:
            if server_name:
                raise ValueError("server_name needs TLS")
            return grpc.insecure_channel(target, options=options)
        credentials = grpc.ssl_channel_credentials(root_certificates, private_key,
                                                   certificate_chain)
        return grpc.secure_channel(target, credentials, options=options)

    def close(self) -> None:
        """Closes the channel; calls under way are cancelled."""
        # gRPC's thread that watched the channel during Predict's backoffs
        # ends at its next 0.2 s poll; closing the channel under it makes it
        # raise "Channel closed!". Wait for it (only clients that retried).
        with self._lock:
            ended = self._watch_ended
        if ended is not None:
            time.sleep(max(0.0, ended + _WATCH_POLL_SECONDS - time.monotonic()))
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- calls ----------------------------------------------------------

    def _call_timeout(self, timeout: Optional[float]) -> float:
        if timeout is None:
            return self._timeout
        if not timeout > 0:
            raise ValueError(f"timeout is {timeout}; must be positive")
        return timeout

    def _unary(self, method, request, timeout: Optional[float], wait_for_ready: bool):
        try:
            return method(request, timeout=self._call_timeout(timeout), metadata=self._metadata,
                          wait_for_ready=wait_for_ready)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None

    def predict(self, model, candidates: Iterable[Any] = (), context: Any = None, *,
                min_model_version: int = 0, request_id: str = "",
                wire: str = "features", seed: Optional[int] = None,
                timeout: Optional[float] = None,
                wait_for_ready: bool = False) -> pb.PredictResponse:
        """Scores candidates that share a context; retried on UNAVAILABLE.

        ``model`` is the model's name, or a whole PredictRequest (then the
        other request arguments must be unset). Candidates and the context
        are Example messages or the shorthands of clickd.messages, written
        in the wire form ``wire`` ("features", "packed", or "keys" with the
        model's hashing ``seed``; clickd.messages). Returns the
        PredictResponse: one Prediction per candidate, in order.
        """
        if isinstance(model, pb.PredictRequest):
            if candidates or context is not None or min_model_version or request_id:
                raise TypeError("pass either a PredictRequest or its fields, not both")
            request = model
        else:
            request = messages.predict_request(model, candidates, context,
                                               min_model_version=min_model_version,
                                               request_id=request_id, wire=wire, seed=seed)
        deadline = time.monotonic() + self._call_timeout(timeout)
        watching = False
        try:
            for attempt in range(1, self._retry.max_attempts + 1):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise error_for(grpc.StatusCode.DEADLINE_EXCEEDED,
                                    "the deadline passed between Predict attempts")
                try:
                    return self._stub.Predict(request, timeout=remaining,
                                              metadata=self._metadata,
                                              wait_for_ready=wait_for_ready)
                except grpc.RpcError as e:
                    error = from_rpc_error(e)
                if (error.code != grpc.StatusCode.UNAVAILABLE or
                        attempt >= self._retry.max_attempts):
                    raise error
                with self._lock:
                    backoff = self._retry.backoff(attempt, self._rng)
                if time.monotonic() + backoff >= deadline:
                    raise error
                if not watching:
                    # gRPC Python moves a channel's bytes only while some
                    # thread polls it: between calls a reconnection would
                    # wait for the core's 5 s backup poller. Watching the
                    # channel's state polls it while we back off.
                    self._channel.subscribe(_ignore_state, try_to_connect=True)
                    watching = True
                self._sleep(backoff)
        finally:
            if watching:
                self._channel.unsubscribe(_ignore_state)
                with self._lock:
                    self._watch_ended = time.monotonic()
        raise AssertionError("unreachable")  # the loop raises or returns

    def update(self, model, examples: Iterable[Any] = (), impressions: Iterable[Any] = (), *,
               return_margins: bool = False, idempotency_key: str = "", request_id: str = "",
               wire: str = "features", seed: Optional[int] = None,
               timeout: Optional[float] = None,
               wait_for_ready: bool = False) -> pb.UpdateResponse:
        """Learns labeled examples, then impressions. Never retried.

        An Update whose reply was lost may have been applied: retrying it
        would teach the model twice, unless the server deduplicates by
        ``idempotency_key`` (with --replication=jetstream; docs/api.md).
        ``model`` may instead be a whole UpdateRequest.
        """
        if isinstance(model, pb.UpdateRequest):
            if examples or impressions or return_margins or idempotency_key or request_id:
                raise TypeError("pass either an UpdateRequest or its fields, not both")
            request = model
        else:
            request = messages.update_request(model, examples, impressions,
                                              return_margins=return_margins,
                                              idempotency_key=idempotency_key,
                                              request_id=request_id, wire=wire, seed=seed)
        return self._unary(self._stub.Update, request, timeout, wait_for_ready)

    def update_stream(self, requests: Iterable[pb.UpdateRequest], *,
                      timeout: Optional[float] = None) -> pb.UpdateStreamResponse:
        """Sends every request on one UpdateStream and returns the server's summary.

        The deadline bounds the whole stream. A rejected message ends it
        with an error naming its index and the examples applied before it.
        """
        try:
            return self._stub.UpdateStream(iter(requests), timeout=self._call_timeout(timeout),
                                           metadata=self._metadata)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None

    def open_update_stream(self, *, timeout: Optional[float] = None) -> "UpdateStreamWriter":
        """Opens an UpdateStream to write message by message (its deadline bounds it)."""
        return UpdateStreamWriter(self._stub.UpdateStream, self._call_timeout(timeout),
                                  self._metadata)

    def open_acked_update_stream(self, *,
                                 timeout: Optional[float] = None) -> "AckedUpdateStream":
        """Opens an UpdateStreamAcked: each send returns its message's UpdateAck."""
        return AckedUpdateStream(self._stub.UpdateStreamAcked, self._call_timeout(timeout),
                                 self._metadata)

    # --- models ---------------------------------------------------------

    def create_model(self, config, *, timeout: Optional[float] = None,
                     wait_for_ready: bool = False) -> pb.ModelInfo:
        """Creates a model from a ModelConfig, its JSON dict or a name; returns its ModelInfo."""
        request = pb.CreateModelRequest(config=messages.model_config(config))
        return self._unary(self._stub.CreateModel, request, timeout, wait_for_ready).model

    def get_model(self, name: str, *, state_digest: bool = False,
                  timeout: Optional[float] = None,
                  wait_for_ready: bool = False) -> pb.ModelInfo:
        """Returns a model's ModelInfo (with state_digest: also its digest, O(model))."""
        request = pb.GetModelRequest(model=name, state_digest=state_digest)
        return self._unary(self._stub.GetModel, request, timeout, wait_for_ready).model

    def list_models(self, *, timeout: Optional[float] = None,
                    wait_for_ready: bool = False) -> List[pb.ModelInfo]:
        """Returns every model's ModelInfo, ordered by name."""
        return list(self._unary(self._stub.ListModels, pb.ListModelsRequest(), timeout,
                                wait_for_ready).models)

    def delete_model(self, name: str, *, timeout: Optional[float] = None,
                     wait_for_ready: bool = False) -> None:
        """Stops serving a model (with --data_dir, removes what it learned)."""
        self._unary(self._stub.DeleteModel, pb.DeleteModelRequest(model=name), timeout,
                    wait_for_ready)

    def snapshot_model(self, name: str, *, timeout: Optional[float] = None,
                       wait_for_ready: bool = False) -> pb.SnapshotModelResponse:
        """Writes a snapshot of the model now (the server needs --data_dir)."""
        return self._unary(self._stub.SnapshotModel, pb.SnapshotModelRequest(model=name),
                           timeout, wait_for_ready)

    def state_digest(self, name: str, *, timeout: Optional[float] = None,
                     wait_for_ready: bool = False) -> str:
        """The model's state digest: 16 hex digits, equal digests meaning equal models."""
        return self.get_model(name, state_digest=True, timeout=timeout,
                              wait_for_ready=wait_for_ready).state_digest


# A bound on how long gRPC's channel-watching thread takes to notice that
# nobody watches any more (it polls in 0.2 s steps).
_WATCH_POLL_SECONDS = 0.3


def _ignore_state(state: grpc.ChannelConnectivity) -> None:
    """A channel subscription that only keeps the channel polled."""


# The end of a stream's requests.
_END = object()
# How often a stream's request iterator checks whether the call ended.
_POLL_SECONDS = 0.05


class _RequestQueue:
    """The request iterator of a streaming call, fed by the writing thread.

    gRPC consumes it on a thread of its own; it ends at _END or once the
    call has ended, so that thread never waits forever on a broken call.
    The queue is bounded: a writer faster than the stream waits.
    """

    def __init__(self, maxsize: int = 16):
        self._queue: "queue.Queue[Any]" = queue.Queue(maxsize=maxsize)
        self.call_done = threading.Event()

    def __iter__(self):
        while not self.call_done.is_set():
            try:
                item = self._queue.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                continue
            if item is _END:
                return
            yield item

    def put(self, item, deadline: float) -> bool:
        """Queues an item; False if the call ended or the deadline passed first."""
        while not self.call_done.is_set() and time.monotonic() < deadline:
            try:
                self._queue.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False


def _finished_error() -> ClickdError:
    return error_for(grpc.StatusCode.FAILED_PRECONDITION, "the stream is already finished")


class UpdateStreamWriter:
    """One UpdateStream call: write messages, then finish for the server's summary.

    Leaving a ``with`` block without finish cancels the stream (messages
    the server already received stay applied).
    """

    def __init__(self, method, timeout: float, metadata):
        self._deadline = time.monotonic() + timeout
        self._requests = _RequestQueue()
        self._future = method.future(iter(self._requests), timeout=timeout, metadata=metadata)
        self._future.add_done_callback(lambda _: self._requests.call_done.set())
        self._finished = False

    def write(self, request: pb.UpdateRequest) -> bool:
        """Queues one message; False once the stream is broken (finish says why)."""
        if self._finished or self._future.done():
            return False
        return self._requests.put(request, self._deadline)

    def finish(self) -> pb.UpdateStreamResponse:
        """Closes the stream; returns the summary or raises the stream's error. Call once."""
        if self._finished:
            raise _finished_error()
        self._finished = True
        self._requests.put(_END, self._deadline)
        try:
            return self._future.result()
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None
        except grpc.FutureCancelledError:
            raise error_for(grpc.StatusCode.CANCELLED, "the stream was cancelled") from None

    def cancel(self) -> None:
        """Cancels the stream."""
        self._finished = True
        self._future.cancel()

    def __enter__(self) -> "UpdateStreamWriter":
        return self

    def __exit__(self, *exc) -> None:
        if not self._finished:
            self.cancel()


class AckedUpdateStream:
    """One UpdateStreamAcked call: each send writes a message and waits for its ack.

    After a failure the caller knows exactly which messages the server
    acknowledged: those whose send returned an ack. Leaving a ``with``
    block without finish cancels the stream.
    """

    def __init__(self, method, timeout: float, metadata):
        self._deadline = time.monotonic() + timeout
        self._requests = _RequestQueue()
        self._responses = method(iter(self._requests), timeout=timeout, metadata=metadata)
        self._responses.add_done_callback(lambda _: self._requests.call_done.set())
        self._finished = False

    def send(self, request: pb.UpdateRequest) -> pb.UpdateAck:
        """Sends one message and returns its ack, or raises the stream's error.

        After an error the stream is finished.
        """
        if self._finished:
            raise _finished_error()
        self._requests.put(request, self._deadline)
        try:
            return next(self._responses)
        except grpc.RpcError as e:
            self._finished = True
            raise from_rpc_error(e) from None
        except StopIteration:
            self._finished = True
            raise UnavailableError(
                grpc.StatusCode.UNAVAILABLE,
                "the server ended the stream without acknowledging the message") from None

    def finish(self) -> None:
        """Closes the stream; raises its error if it did not end OK. Call once."""
        if self._finished:
            raise _finished_error()
        self._finished = True
        self._requests.put(_END, self._deadline)
        try:
            for ack in self._responses:
                raise error_for(grpc.StatusCode.INTERNAL,
                                f"an ack nobody waited for: {ack.request_id!r}")
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None

    def cancel(self) -> None:
        """Cancels the stream."""
        self._finished = True
        self._responses.cancel()

    def __enter__(self) -> "AckedUpdateStream":
        return self

    def __exit__(self, *exc) -> None:
        if not self._finished:
            self.cancel()
