"""Client: the clickd.v1.Clickd service over one gRPC channel.

A thin layer over the generated stub that puts a deadline on every call,
retries the calls that are safe to send twice with jittered exponential
backoff, raises ClickdError subclasses carrying the gRPC code and message,
and sends a bearer token and TLS credentials when given. It follows the C++
client (client/clickd_client.h), retries included:

  Predict                  UNAVAILABLE, one deadline for every attempt;
                           never with log_impressions (a lost reply's ids
                           could never be labelled)
  Feedback                 UNAVAILABLE (the server joins one label per
                           impression); with an idempotency key also
                           DEADLINE_EXCEEDED, each attempt with a deadline
                           of its own
  Update with a key        UNAVAILABLE and DEADLINE_EXCEEDED, each attempt
                           with a deadline of its own
  Update without a key,    never
  streams, model calls

docs/client_python.md shows how to use it.

Thread safety: a Client is safe for concurrent use by any number of
threads (gRPC channels and stubs are); its options are fixed at creation.
An UpdateStreamWriter, AckedUpdateStream or FeedbackStream belongs to one
thread.
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
    """How retried calls back off (seconds; the C++ client's RetryPolicy).

    Attempt k (k = 1, 2, ...) that fails is followed by a sleep of
    min(initial_backoff * multiplier^(k-1), max_backoff) times a uniform
    factor in [1 - jitter, 1 + jitter]. A call without an idempotency key
    has one deadline for all its attempts: a sleep that would reach it is
    not slept, and the last UNAVAILABLE is raised at once. A keyed call
    gives each attempt a deadline of its own, so it may take up to
    max_attempts timeouts plus the backoffs.
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
                      Predict and an unkeyed Feedback it covers every attempt
                      and backoff, for a keyed Update or Feedback it is each
                      attempt's, for a stream the whole stream); each method
                      takes timeout= to override it for one call
    retry             the RetryPolicy of the retried calls
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
    sleep             sleeps between attempts; tests replace it
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

    def _retried(self, method, request, timeout: Optional[float], wait_for_ready: bool,
                 keyed: bool = False):
        """Runs a unary call, retrying UNAVAILABLE per the RetryPolicy.

        Without ``keyed`` one deadline covers every attempt and backoff. A
        keyed call (an Update or Feedback with an idempotency key) is also
        retried on DEADLINE_EXCEEDED, each attempt with a deadline of its
        own: the server may have applied an attempt whose deadline passed,
        and the key makes sending it again safe.
        """
        timeout = self._call_timeout(timeout)
        deadline = time.monotonic() + timeout
        watching = False
        try:
            for attempt in range(1, self._retry.max_attempts + 1):
                if keyed and attempt > 1:
                    deadline = time.monotonic() + timeout
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise error_for(grpc.StatusCode.DEADLINE_EXCEEDED,
                                    "the deadline passed between attempts")
                try:
                    return method(request, timeout=remaining, metadata=self._metadata,
                                  wait_for_ready=wait_for_ready)
                except grpc.RpcError as e:
                    error = from_rpc_error(e)
                retriable = (error.code == grpc.StatusCode.UNAVAILABLE or
                             (keyed and error.code == grpc.StatusCode.DEADLINE_EXCEEDED))
                if not retriable or attempt >= self._retry.max_attempts:
                    raise error
                with self._lock:
                    backoff = self._retry.backoff(attempt, self._rng)
                if not keyed and time.monotonic() + backoff >= deadline:
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

    def predict(self, model, candidates: Iterable[Any] = (), context: Any = None, *,
                min_model_version: int = 0, request_id: str = "",
                wire: str = "features", seed: Optional[int] = None,
                log_impressions: bool = False, uncertainty: bool = False,
                explain_top_k: int = 0, timeout: Optional[float] = None,
                wait_for_ready: bool = False) -> pb.PredictResponse:
        """Scores candidates that share a context; retried on UNAVAILABLE.

        ``model`` is the model's name, or a whole PredictRequest (then the
        other request arguments must be unset). Candidates and the context
        are Example messages or the shorthands of clickd.messages, written
        in the wire form ``wire`` ("features", "packed", or "keys" with the
        model's hashing ``seed``; clickd.messages). Returns the
        PredictResponse: one Prediction per candidate, in order.

        With ``log_impressions`` (a model with feedback.ttl_seconds > 0) the
        server remembers each candidate and returns its
        Prediction.impression_id, for feedback() to label. Such a Predict is
        never retried: an attempt whose reply was lost may have logged its
        impressions, and their ids, lost with it, could never be labelled
        (under wait_negative each would be learned as a negative at its
        TTL); a retry would log every candidate a second time under new ids.
        ``uncertainty`` and ``explain_top_k`` add Prediction.uncertainty and
        Prediction.explanation; a model with calibration always sets
        Prediction.calibrated_prediction.
        """
        if isinstance(model, pb.PredictRequest):
            if (candidates or context is not None or min_model_version or request_id or
                    log_impressions or uncertainty or explain_top_k):
                raise TypeError("pass either a PredictRequest or its fields, not both")
            request = model
        else:
            request = messages.predict_request(model, candidates, context,
                                               min_model_version=min_model_version,
                                               request_id=request_id, wire=wire, seed=seed,
                                               log_impressions=log_impressions,
                                               uncertainty=uncertainty,
                                               explain_top_k=explain_top_k)
        if request.log_impressions:
            return self._unary(self._stub.Predict, request, timeout, wait_for_ready)
        return self._retried(self._stub.Predict, request, timeout, wait_for_ready)

    def update(self, model, examples: Iterable[Any] = (), impressions: Iterable[Any] = (), *,
               return_margins: bool = False, idempotency_key: Optional[str] = "",
               request_id: str = "", wire: str = "features", seed: Optional[int] = None,
               timeout: Optional[float] = None,
               wait_for_ready: bool = False) -> pb.UpdateResponse:
        """Learns labeled examples, then impressions; retried only with a key.

        An Update whose reply was lost may have been applied: sending it
        again without a key would teach the model twice, so it is never
        retried. With ``idempotency_key`` the server learns a key once
        within its window (docs/api.md#idempotency) and answers a repeat
        with duplicate set, so it is retried on UNAVAILABLE and
        DEADLINE_EXCEEDED, each attempt with the full timeout. ``model``
        may instead be a whole UpdateRequest.
        """
        if isinstance(model, pb.UpdateRequest):
            if examples or impressions or return_margins or idempotency_key or request_id:
                raise TypeError("pass either an UpdateRequest or its fields, not both")
            request = model
        else:
            request = messages.update_request(model, examples, impressions,
                                              return_margins=return_margins,
                                              idempotency_key=idempotency_key or "",
                                              request_id=request_id, wire=wire, seed=seed)
        if not request.idempotency_key:
            return self._unary(self._stub.Update, request, timeout, wait_for_ready)
        return self._retried(self._stub.Update, request, timeout, wait_for_ready, keyed=True)

    def feedback(self, model, items: Iterable[Any] = (), *,
                 idempotency_key: Optional[str] = "", request_id: str = "",
                 timeout: Optional[float] = None,
                 wait_for_ready: bool = False) -> pb.FeedbackResponse:
        """Labels impressions that predict(..., log_impressions=True) logged.

        ``items`` are FeedbackItem messages or (impression_id, label[,
        importance[, event_time]]) tuples (clickd.messages); ``model`` may
        instead be a whole FeedbackRequest. Returns the FeedbackResponse:
        one FeedbackStatus per item in ``statuses`` (FEEDBACK_JOINED,
        _UNKNOWN, _EXPIRED, _ALREADY_LABELLED, _OTHER_MODEL), ``joined``,
        ``model_version``, and ``duplicate`` (the key was applied before;
        ``statuses`` is then empty).

        Retried on UNAVAILABLE: the server joins one label per impression,
        so an item a lost attempt joined comes back ALREADY_LABELLED and is
        not learned again. With ``idempotency_key`` also on
        DEADLINE_EXCEEDED, each attempt with the full timeout; a repeat of
        an applied key is answered duplicate.
        """
        if isinstance(model, pb.FeedbackRequest):
            if items or idempotency_key or request_id:
                raise TypeError("pass either a FeedbackRequest or its fields, not both")
            request = model
        else:
            request = messages.feedback_request(model, items,
                                                idempotency_key=idempotency_key or "",
                                                request_id=request_id)
        return self._retried(self._stub.Feedback, request, timeout, wait_for_ready,
                             keyed=bool(request.idempotency_key))

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

    def open_feedback_stream(self, *, timeout: Optional[float] = None) -> "FeedbackStream":
        """Opens a FeedbackStream: each send returns its message's FeedbackResponse.

        Never retried (a stream is not); its deadline bounds the whole stream.
        """
        return FeedbackStream(self._stub.FeedbackStream, self._call_timeout(timeout),
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


class _AnsweredStream:
    """A bidirectional call that answers each request: UpdateStreamAcked, FeedbackStream.

    Each send writes a message and waits for its answer, so after a failure
    the caller knows exactly which messages the server acknowledged: those
    whose send returned an answer. Leaving a ``with`` block without finish
    cancels the stream.
    """

    _WHAT = "message"  # what an answer acknowledges, for errors

    def __init__(self, method, timeout: float, metadata):
        self._deadline = time.monotonic() + timeout
        self._requests = _RequestQueue()
        self._responses = method(iter(self._requests), timeout=timeout, metadata=metadata)
        self._responses.add_done_callback(lambda _: self._requests.call_done.set())
        self._finished = False

    def send(self, request):
        """Sends one message and returns its answer, or raises the stream's error.

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
                f"the server ended the stream without answering the {self._WHAT}") from None

    def finish(self) -> None:
        """Closes the stream; raises its error if it did not end OK. Call once."""
        if self._finished:
            raise _finished_error()
        self._finished = True
        self._requests.put(_END, self._deadline)
        try:
            for answer in self._responses:
                raise error_for(grpc.StatusCode.INTERNAL,
                                f"an answer nobody waited for: {answer.request_id!r}")
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None

    def cancel(self) -> None:
        """Cancels the stream."""
        self._finished = True
        self._responses.cancel()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if not self._finished:
            self.cancel()


class AckedUpdateStream(_AnsweredStream):
    """One UpdateStreamAcked call: send(UpdateRequest) returns its UpdateAck.

    An ack comes once its message is applied and durable. A rejected
    message ends the stream with its error ("message K (N examples applied
    before it): ..."); the messages before it stay learned.
    """

    _WHAT = "update"

    def send(self, request: pb.UpdateRequest) -> pb.UpdateAck:
        """Sends one UpdateRequest and returns its ack, or raises the stream's error."""
        return super().send(request)


class FeedbackStream(_AnsweredStream):
    """One FeedbackStream call: send(FeedbackRequest) returns its FeedbackResponse.

    Each message is applied as a unary Feedback would be and answered once
    applied and durable, in order. A rejected message ends the stream with
    its error ("message K: ..."); the messages before it stay applied.
    """

    _WHAT = "feedback"

    def send(self, request: pb.FeedbackRequest) -> pb.FeedbackResponse:
        """Sends one FeedbackRequest and returns its response, or raises the stream's error."""
        return super().send(request)
