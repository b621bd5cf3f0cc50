"""The client against the real clickd: round trips, errors, deadlines,
retries, streams, model management."""

import math
import re
import socket
import threading
import time

import grpc
import pytest

import clickd
from server import Server

USER = {"user": ["country=FR", ("age", 0.3)]}
ADS = [{"ad": [7, "brand=x"]}, {"ad": [8]}]


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


def test_predict_round_trip(client, model):
    scores = client.predict(model, ADS, USER, request_id="r-1")
    assert scores.request_id == "r-1"
    assert len(scores.predictions) == 2
    assert scores.model_version == 0
    for p in scores.predictions:
        assert p.prediction == pytest.approx(sigmoid(p.margin))
    # A whole request works too.
    request = clickd.predict_request(model, ADS, USER)
    assert client.predict(request).predictions == scores.predictions


def test_update_round_trip_and_read_your_writes(client, model):
    response = client.update(model, examples=[({"ad": [7]}, 1), ({"ad": [8]}, 0, 2.0)],
                             impressions=[(USER, [(ADS[0], 1), (ADS[1], 0)])],
                             request_id="u-1", idempotency_key="impression-1")
    assert response.request_id == "u-1"
    assert response.applied == 4
    assert response.model_version == 4
    assert len(response.margins) == 0
    scores = client.predict(model, ADS, USER, min_model_version=response.model_version)
    assert scores.model_version == 4
    assert scores.predictions[0].prediction > scores.predictions[1].prediction
    # Without replication a version the model has not reached fails at once.
    with pytest.raises(clickd.FailedPreconditionError) as e:
        client.predict(model, ADS, USER, min_model_version=1000)
    assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert "1000" in e.value.message
    assert client.get_model(model).updates == 4


def test_margins_are_the_pre_update_scores(client, model):
    client.update(model, [({"ad": [7]}, 1)] * 3)
    before = client.predict(model, ADS, USER)
    response = client.update(model, impressions=[(USER, [(ADS[0], 0), (ADS[1], 1)])],
                             return_margins=True)
    assert len(response.margins) == 2
    # The first candidate is learned before the second, so only its margin
    # is the scored one exactly (to single precision).
    assert response.margins[0] == pytest.approx(before.predictions[0].margin, rel=1e-6)
    after = client.predict(model, ADS, USER)
    assert after.predictions[0].margin < before.predictions[0].margin


def test_bad_requests_name_the_field(client, model):
    with pytest.raises(clickd.InvalidArgumentError) as e:
        client.predict(model, [{"ad": [("x", float("nan"))]}])
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.message == "candidates[0].namespaces[0].features[0].value is nan; must be finite"
    assert str(e.value).startswith("INVALID_ARGUMENT: candidates[0]")
    with pytest.raises(clickd.InvalidArgumentError, match=r"examples\[1\]\.label is 0\.5"):
        client.update(model, [({"ad": [1]}, 1), ({"ad": [2]}, 0.5)])
    with pytest.raises(clickd.InvalidArgumentError, match="candidates is empty"):
        client.predict(model, [])
    with pytest.raises(clickd.NotFoundError, match='model "no-such-model" not found'):
        client.predict("no-such-model", ADS)
    # A rejected update applied nothing.
    assert client.get_model(model).updates == 0
    assert isinstance(e.value, clickd.ClickdError)


class DeadlineRecorder(grpc.UnaryUnaryClientInterceptor, grpc.StreamUnaryClientInterceptor,
                       grpc.StreamStreamClientInterceptor):
    """Records each call's method and timeout."""

    def __init__(self):
        self.timeouts = []

    def _record(self, details):
        self.timeouts.append((details.method.rsplit("/", 1)[-1], details.timeout))

    def intercept_unary_unary(self, continuation, details, request):
        self._record(details)
        return continuation(details, request)

    def intercept_stream_unary(self, continuation, details, requests):
        self._record(details)
        return continuation(details, requests)

    def intercept_stream_stream(self, continuation, details, requests):
        self._record(details)
        return continuation(details, requests)


def test_every_call_has_a_deadline(server, model):
    recorder = DeadlineRecorder()
    channel = grpc.intercept_channel(grpc.insecure_channel(server.address), recorder)
    with clickd.Client(channel=channel, timeout=3) as c:
        c.predict(model, ADS)
        c.update(model, [({"ad": [1]}, 1)])
        c.update_stream([clickd.update_request(model, [({"ad": [1]}, 1)])])
        with c.open_acked_update_stream() as stream:
            stream.send(clickd.update_request(model, [({"ad": [1]}, 1)]))
            stream.finish()
        c.get_model(model)
        c.list_models()
        c.state_digest(model)
        c.snapshot_model(model)
        c.create_model({"name": "deadline-check", "feedback": {"ttl_seconds": 60}})
        shown = c.predict("deadline-check", ADS, log_impressions=True).predictions
        c.feedback("deadline-check", [(shown[0].impression_id, 1)], idempotency_key="d-1")
        with c.open_feedback_stream() as stream:
            stream.send(clickd.feedback_request("deadline-check", [(shown[1].impression_id, 0)]))
            stream.finish()
        c.delete_model("deadline-check")
        c.predict(model, ADS, timeout=0.75)
    methods = {m for m, _ in recorder.timeouts}
    assert methods == {"Predict", "Update", "UpdateStream", "UpdateStreamAcked", "GetModel",
                       "ListModels", "SnapshotModel", "CreateModel", "DeleteModel", "Feedback",
                       "FeedbackStream"}
    for method, timeout in recorder.timeouts[:-1]:
        assert timeout is not None and 0 < timeout <= 3, method
    assert 0 < recorder.timeouts[-1][1] <= 0.75
    with pytest.raises(ValueError):
        clickd.Client(server.address, timeout=0)


def test_deadlines_expire(server, model):
    with clickd.Client(server.address, timeout=10) as c:
        # A stream's deadline bounds the whole stream, not one message.
        writer = c.open_update_stream(timeout=0.5)
        assert writer.write(clickd.update_request(model, [({"ad": [1]}, 1)]))
        time.sleep(1.0)
        with pytest.raises(clickd.DeadlineExceededError) as e:
            writer.finish()
        assert e.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
        stream = c.open_acked_update_stream(timeout=0.5)
        time.sleep(1.0)
        with pytest.raises(clickd.DeadlineExceededError):
            stream.send(clickd.update_request(model, [({"ad": [1]}, 1)]))
    # With wait_for_ready, a Predict to a port where nothing listens (a
    # socket we bound but never listen on) waits until its deadline.
    with socket.socket() as hold:
        hold.bind(("127.0.0.1", 0))
        address = "127.0.0.1:%d" % hold.getsockname()[1]
        with clickd.Client(address, timeout=0.3) as c:
            start = time.monotonic()
            with pytest.raises(clickd.ClickdError) as e:
                c.predict("default", ADS, wait_for_ready=True)
            assert e.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
            assert time.monotonic() - start < 5


class CountingInterceptor(grpc.UnaryUnaryClientInterceptor):
    """Counts attempts per method."""

    def __init__(self):
        self.calls = {}

    def intercept_unary_unary(self, continuation, details, request):
        method = details.method.rsplit("/", 1)[-1]
        self.calls[method] = self.calls.get(method, 0) + 1
        return continuation(details, request)


def test_predict_retries_unavailable_with_backoff_and_update_does_not():
    stopped = Server().start()
    address = stopped.address
    stopped.close()  # nothing listens there now
    counter = CountingInterceptor()
    sleeps = []
    retry = clickd.RetryPolicy(max_attempts=4, initial_backoff=0.05, multiplier=2,
                               max_backoff=0.15, jitter=0.2)
    channel = grpc.intercept_channel(grpc.insecure_channel(address), counter)
    with clickd.Client(channel=channel, retry=retry, timeout=5, sleep=sleeps.append) as c:
        with pytest.raises(clickd.UnavailableError) as e:
            c.predict("default", ADS)
        assert e.value.code == grpc.StatusCode.UNAVAILABLE
        assert counter.calls["Predict"] == 4
        assert len(sleeps) == 3
        for got, base in zip(sleeps, [0.05, 0.1, 0.15]):
            assert base * 0.8 <= got <= base * 1.2
        with pytest.raises(clickd.UnavailableError):
            c.update("default", [({"ad": [1]}, 1)])
        assert counter.calls["Update"] == 1
    # A backoff that would reach the deadline is not slept: the last
    # UNAVAILABLE is raised at once.
    counter.calls.clear()
    sleeps.clear()
    slow = clickd.RetryPolicy(max_attempts=5, initial_backoff=2, max_backoff=2)
    channel = grpc.intercept_channel(grpc.insecure_channel(address), counter)
    with clickd.Client(channel=channel, retry=slow, timeout=1, sleep=sleeps.append) as c:
        start = time.monotonic()
        with pytest.raises(clickd.UnavailableError):
            c.predict("default", ADS)
        assert time.monotonic() - start < 1
        assert counter.calls["Predict"] == 1 and sleeps == []


def test_predict_retries_reach_a_server_that_comes_back():
    server = Server().start()
    address = server.address
    server.stop()
    restarted = []

    def sleep_and_restart(seconds):
        if not restarted:
            restarted.append(Server(port=server.port).start())
        time.sleep(seconds)

    retry = clickd.RetryPolicy(max_attempts=10, initial_backoff=0.05, max_backoff=0.2)
    try:
        with clickd.Client(address, retry=retry, timeout=20, sleep=sleep_and_restart) as c:
            scores = c.predict("default", ADS, USER)
        assert len(scores.predictions) == 2 and restarted
    finally:
        server.close()
        for s in restarted:
            s.close()


def test_update_stream(client, model):
    requests = [clickd.update_request(model, [({"ad": [i]}, i % 2)]) for i in range(5)]
    summary = client.update_stream(requests)
    assert (summary.requests, summary.applied) == (5, 5)
    assert summary.metrics.examples == 5
    with client.open_update_stream() as writer:
        for r in requests[:3]:
            assert writer.write(r)
        summary = writer.finish()
    assert (summary.requests, summary.applied, summary.model_version) == (3, 3, 8)
    # A rejected message ends the stream; the ones before it stay learned.
    bad = clickd.update_request(model, [({"ad": [1]}, 0.5)])
    with pytest.raises(clickd.InvalidArgumentError,
                       match=re.escape("message 2 (2 examples applied before it): "
                                       "examples[0].label is 0.5")):
        client.update_stream(requests[:2] + [bad] + requests[:1])
    assert client.get_model(model).updates == 10
    # A writer learns that the server ended the stream: write returns False
    # (bounded wait), and finish raises the error.
    writer = client.open_update_stream()
    assert writer.write(bad)
    for _ in range(200):
        if not writer.write(requests[0]):
            break
        time.sleep(0.05)
    else:
        pytest.fail("write kept returning True after the server ended the stream")
    with pytest.raises(clickd.InvalidArgumentError, match=r"message 0 \(0 examples"):
        writer.finish()
    with pytest.raises(clickd.FailedPreconditionError):
        writer.finish()


def test_bad_options_are_refused(server):
    for retry in [clickd.RetryPolicy(max_attempts=0), clickd.RetryPolicy(initial_backoff=0),
                  clickd.RetryPolicy(initial_backoff=2, max_backoff=1),
                  clickd.RetryPolicy(multiplier=0.5), clickd.RetryPolicy(jitter=1.5)]:
        with pytest.raises(ValueError):
            clickd.Client(server.address, retry=retry)
    with pytest.raises(ValueError, match="target is empty"):
        clickd.Client("")
    with pytest.raises(ValueError, match="server_name needs TLS"):
        clickd.Client(server.address, server_name="x")
    with pytest.raises(TypeError):
        clickd.example({"ad": [1.5]})
    with pytest.raises(TypeError):
        clickd.labeled({"ad": [1]})


def test_update_stream_acked(client, model):
    with client.open_acked_update_stream() as stream:
        acks = []
        for i in range(3):
            request = clickd.update_request(model, [({"ad": [i]}, 1), ({"ad": [i + 1]}, 0)],
                                            request_id=f"b{i}", return_margins=True)
            acks.append(stream.send(request))
        stream.finish()
    assert [a.request_id for a in acks] == ["b0", "b1", "b2"]
    assert [a.acknowledged for a in acks] == [2, 4, 6]
    assert [a.model_version for a in acks] == [2, 4, 6]
    assert all(len(a.margins) == 2 for a in acks)
    assert acks[0].margins[0] == 0.0  # an empty model's margin
    # A rejected message ends the stream with its error.
    stream = client.open_acked_update_stream()
    assert stream.send(clickd.update_request(model, [({"ad": [1]}, 1)])).applied == 1
    with pytest.raises(clickd.InvalidArgumentError, match=r"message 1 \(1 examples applied"):
        stream.send(clickd.update_request(model, [({"ad": [1]}, 7)]))
    with pytest.raises(clickd.FailedPreconditionError, match="already finished"):
        stream.send(clickd.update_request(model, [({"ad": [1]}, 1)]))
    assert client.get_model(model).updates == 7


def test_model_management(client):
    info = client.create_model({"name": "mgmt", "optimizer": "adagrad",
                                "hashing": {"bits": 18}})
    try:
        assert info.config.name == "mgmt" and info.config.optimizer == "adagrad"
        assert info.config.adagrad.eta == pytest.approx(0.1)  # defaults filled in
        with pytest.raises(clickd.AlreadyExistsError, match='model "mgmt" already exists'):
            client.create_model("mgmt")
        with pytest.raises(clickd.InvalidArgumentError, match="config.optimizer"):
            client.create_model({"name": "bad", "optimizer": "adam"})
        assert "mgmt" in [m.config.name for m in client.list_models()]
        client.update("mgmt", [({"ad": [1]}, 1)])
        got = client.get_model("mgmt")
        assert got.updates == 1 and got.coordinates == 2 and got.state_digest == ""
        digest = client.state_digest("mgmt")
        assert re.fullmatch(r"[0-9a-f]{16}", digest)
        assert client.get_model("mgmt", state_digest=True).state_digest == digest
        snapshot = client.snapshot_model("mgmt")
        assert snapshot.sequence >= 1 and snapshot.bytes > 0 and snapshot.coordinates == 2
    finally:
        client.delete_model("mgmt")
    with pytest.raises(clickd.NotFoundError):
        client.get_model("mgmt")
    with pytest.raises(clickd.NotFoundError):
        client.delete_model("mgmt")


def test_a_client_is_shared_by_threads(client, model):
    errors = []

    def score():
        try:
            for _ in range(20):
                assert len(client.predict(model, ADS, USER).predictions) == 2
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=score) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
