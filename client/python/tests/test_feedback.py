"""The impression-to-click loop through the client, against the real clickd:
Predict that logs impressions, Feedback unary and streamed, per-candidate
extras, idempotency keys, bad input, and which calls are retried."""

import datetime
import math
import tempfile
import time
import uuid

import grpc
import pytest

import clickd
from clickd import pb
from server import Server

USER = {"user": ["country=FR", ("age", 0.3)]}
ADS = [{"ad": [7, "brand=x"]}, {"ad": [8]}, {"ad": [9]}]
JOINED, UNKNOWN, ALREADY = pb.FEEDBACK_JOINED, pb.FEEDBACK_UNKNOWN, pb.FEEDBACK_ALREADY_LABELLED


def loop_config(name, policy="wait_negative", **extra):
    """A model with the impression-to-click loop: an hour's TTL, a small buffer."""
    return {"name": name, "ftrl": {"alpha": 0.1},
            "feedback": {"ttl_seconds": 3600, "max_buffer_bytes": 1 << 20, "policy": policy},
            **extra}


@pytest.fixture
def loop_model(client):
    """A fresh model with the loop (wait_negative), deleted afterwards."""
    name = "fb-" + uuid.uuid4().hex[:12]
    client.create_model(loop_config(name))
    yield name
    try:
        client.delete_model(name)
    except clickd.NotFoundError:
        pass


def test_logged_impressions_are_joined_once(client, loop_model):
    scores = client.predict(loop_model, ADS, USER, log_impressions=True, request_id="p-1")
    ids = [p.impression_id for p in scores.predictions]
    assert scores.request_id == "p-1" and len(ids) == 3
    # The candidates of one request get consecutive ids, in request order.
    assert ids[0] != 0 and ids == [ids[0], ids[0] + 1, ids[0] + 2]
    # Without log_impressions no id is issued.
    assert all(p.impression_id == 0 for p in client.predict(loop_model, ADS, USER).predictions)

    first = client.feedback(loop_model, [(ids[0], 1), (ids[1], 0, 2.0)], request_id="f-1")
    assert first.request_id == "f-1"
    assert list(first.statuses) == [JOINED, JOINED]
    assert first.joined == 2 and not first.duplicate
    assert first.model_version == 2 == client.get_model(loop_model).updates

    # A label again (a repeated click), and an id this model never issued.
    again = client.feedback(loop_model, [(ids[0], 1), (ids[2] + 1000, 1), (ids[2], 1)])
    assert list(again.statuses) == [ALREADY, UNKNOWN, JOINED]
    assert again.joined == 1 and again.model_version == 3


def test_a_joined_label_is_learned_as_an_update_would_be(client, loop_model):
    twin = "fb-twin-" + uuid.uuid4().hex[:8]
    client.create_model(loop_config(twin))
    try:
        ids = [p.impression_id
               for p in client.predict(loop_model, ADS, USER, log_impressions=True).predictions]
        client.feedback(loop_model, [(ids[0], 1, 1.5), (ids[2], 0)])
        client.update(twin, impressions=[(USER, [(ADS[0], 1, 1.5), (ADS[2], 0)])])
        assert client.state_digest(loop_model) == client.state_digest(twin)
        # An id of another model is refused per item, by that model's tag.
        other = client.feedback(twin, [(ids[1], 1)])
        assert list(other.statuses) == [pb.FEEDBACK_OTHER_MODEL] and other.joined == 0
    finally:
        client.delete_model(twin)


def test_a_keyed_feedback_is_applied_once(client, loop_model):
    ids = [p.impression_id
           for p in client.predict(loop_model, ADS, USER, log_impressions=True).predictions]
    request = clickd.feedback_request(loop_model, [(ids[0], 1), (ids[1], 0)],
                                      idempotency_key=f"click-{ids[0]}")
    first = client.feedback(request)
    assert list(first.statuses) == [JOINED, JOINED] and not first.duplicate
    second = client.feedback(loop_model, [(ids[0], 1), (ids[1], 0)],
                             idempotency_key=f"click-{ids[0]}")
    assert second.duplicate and list(second.statuses) == [] and second.joined == 0
    assert client.get_model(loop_model).updates == 2
    # Update keys are a set apart from Feedback's (issue 33, N15): the same
    # key on an Update is learned, and only its own retry is a duplicate.
    assert not client.update(loop_model, [({"ad": [1]}, 1)], idempotency_key=f"click-{ids[0]}"
                             ).duplicate
    assert client.update(loop_model, [({"ad": [1]}, 1)], idempotency_key=f"click-{ids[0]}"
                         ).duplicate


def test_bad_feedback_names_the_field_and_applies_nothing(client, loop_model, model):
    ids = [p.impression_id
           for p in client.predict(loop_model, ADS, USER, log_impressions=True).predictions]
    with pytest.raises(clickd.InvalidArgumentError) as e:
        client.feedback(loop_model, [(ids[0], 1), (ids[1], float("nan"))])
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.message == "items[1].label is nan; must be finite"
    with pytest.raises(clickd.InvalidArgumentError,
                       match=r"^INVALID_ARGUMENT: items is empty; Feedback needs at least one$"):
        client.feedback(loop_model, [])
    with pytest.raises(clickd.InvalidArgumentError, match=r"items\[0\]\.importance is -1"):
        client.feedback(loop_model, [(ids[0], 1, -1.0)])
    with pytest.raises(clickd.InvalidArgumentError, match="idempotency_key has 129 bytes"):
        client.feedback(loop_model, [(ids[0], 1)], idempotency_key="k" * 129)
    # Nothing of the refused requests was applied, their key included.
    assert client.get_model(loop_model).updates == 0
    assert list(client.feedback(loop_model, [(ids[0], 1)], idempotency_key="k" * 128
                                ).statuses) == [JOINED]
    # A model without the loop refuses both halves of it.
    with pytest.raises(clickd.FailedPreconditionError, match="no impression-to-click loop"):
        client.predict(model, ADS, USER, log_impressions=True)
    with pytest.raises(clickd.FailedPreconditionError, match="no impression-to-click loop"):
        client.feedback(model, [(ids[1], 1)])
    with pytest.raises(clickd.NotFoundError, match='model "no-such-model" not found'):
        client.feedback("no-such-model", [(ids[1], 1)])
    # Shorthands the client cannot read are refused before any call.
    with pytest.raises(TypeError, match="feedback item"):
        client.feedback(loop_model, [ids[1]])
    with pytest.raises(TypeError, match="impression id"):
        client.feedback(loop_model, [("123", 1)])
    with pytest.raises(TypeError, match="pass either a FeedbackRequest or its fields"):
        client.feedback(clickd.feedback_request(loop_model, [(ids[1], 1)]), request_id="x")


def test_feedback_items_from_shorthands():
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.timezone.utc)
    item = clickd.feedback_item((42, 1, 0.5, when))
    assert (item.impression_id, item.label, item.importance) == (42, 1.0, 0.5)
    assert item.event_time_unix_micros == int(when.timestamp()) * 1_000_000 + 678901
    assert clickd.feedback_item((42, 0, None, 17)).event_time_unix_micros == 17
    plain = clickd.feedback_item((42, 0))
    assert not plain.HasField("importance") and plain.event_time_unix_micros == 0
    assert clickd.feedback_item(plain) is plain
    with pytest.raises(TypeError, match="naive datetime"):
        clickd.feedback_item((42, 1, None, datetime.datetime(2026, 1, 2)))
    with pytest.raises(TypeError, match="event time"):
        clickd.feedback_item((42, 1, None, 1.5))


def test_feedback_event_time_reaches_the_server(client, loop_model):
    ids = [p.impression_id
           for p in client.predict(loop_model, ADS, USER, log_impressions=True).predictions]
    now = datetime.datetime.now(datetime.timezone.utc)
    response = client.feedback(loop_model, [(ids[0], 1, None, now)])
    assert list(response.statuses) == [JOINED]
    with pytest.raises(clickd.InvalidArgumentError,
                       match=r"items\[0\]\.event_time_unix_micros is -5"):
        client.feedback(loop_model, [(ids[1], 1, None, -5)])


def test_per_candidate_extras(client, model):
    client.update(model, impressions=[(USER, [(ADS[0], 1), (ADS[1], 0)])] * 3)
    scores = client.predict(model, ADS, USER, uncertainty=True, explain_top_k=100)
    for p in scores.predictions:
        assert p.HasField("uncertainty") and math.isfinite(p.uncertainty) and p.uncertainty > 0
        assert 0 < len(p.explanation) <= 100
        contributions = [c.contribution for c in p.explanation]
        assert contributions == sorted(contributions, key=abs, reverse=True)
        # All of a candidate's contributions add up to its (sparse) margin.
        assert sum(contributions) == pytest.approx(p.margin, rel=1e-5, abs=1e-6)
        for c in p.explanation:
            assert c.contribution == pytest.approx(c.weight * c.value, rel=1e-6)
        assert not p.HasField("calibrated_prediction")  # the model has no calibration
    # Less is known about an ad never seen than about one seen three times.
    assert scores.predictions[2].uncertainty > scores.predictions[1].uncertainty
    top = client.predict(model, ADS, USER, explain_top_k=2)
    assert [len(p.explanation) for p in top.predictions] == [2, 2, 2]
    assert [c.key for c in top.predictions[0].explanation] == \
        [c.key for c in scores.predictions[0].explanation[:2]]
    # Without asking, no extras.
    plain = client.predict(model, ADS, USER).predictions[0]
    assert not plain.HasField("uncertainty") and len(plain.explanation) == 0
    with pytest.raises(clickd.InvalidArgumentError, match="explain_top_k is 101; the limit is 100"):
        client.predict(model, ADS, USER, explain_top_k=101)


def test_calibrated_prediction(client):
    name = "cal-" + uuid.uuid4().hex[:8]
    client.create_model(loop_config(name, calibration={"enabled": True}))
    try:
        scores = client.predict(name, ADS, USER, log_impressions=True, uncertainty=True)
        for p in scores.predictions:
            # Before its first fit the calibration is the identity.
            assert p.HasField("calibrated_prediction")
            assert p.calibrated_prediction == pytest.approx(p.prediction)
            assert p.impression_id != 0 and p.HasField("uncertainty")
    finally:
        client.delete_model(name)


def test_feedback_stream(client, loop_model):
    ids = [p.impression_id
           for p in client.predict(loop_model, ADS, USER, log_impressions=True).predictions]
    with client.open_feedback_stream() as stream:
        a = stream.send(clickd.feedback_request(loop_model, [(ids[0], 1)], request_id="s-1"))
        b = stream.send(clickd.feedback_request(loop_model, [(ids[0], 0), (ids[1], 0)],
                                                request_id="s-2"))
        stream.finish()
    assert [a.request_id, b.request_id] == ["s-1", "s-2"]
    assert list(a.statuses) == [JOINED] and list(b.statuses) == [ALREADY, JOINED]
    assert (a.joined, b.joined) == (1, 1)
    assert a.model_version < b.model_version
    # A rejected message ends the stream with its index; the ones before it
    # stay applied.
    stream = client.open_feedback_stream()
    assert stream.send(clickd.feedback_request(loop_model, [(ids[2], 1)])).joined == 1
    with pytest.raises(clickd.InvalidArgumentError,
                       match=r"message 1: items\[0\]\.label is 0\.5"):
        stream.send(clickd.feedback_request(loop_model, [(ids[2], 0.5)]))
    with pytest.raises(clickd.FailedPreconditionError, match="already finished"):
        stream.send(clickd.feedback_request(loop_model, [(ids[2], 1)]))
    assert client.get_model(loop_model).updates == 3


class CountingInterceptor(grpc.UnaryUnaryClientInterceptor):
    """Counts attempts per method."""

    def __init__(self):
        self.calls = {}

    def intercept_unary_unary(self, continuation, details, request):
        method = details.method.rsplit("/", 1)[-1]
        self.calls[method] = self.calls.get(method, 0) + 1
        return continuation(details, request)


@pytest.fixture(scope="module")
def dead_address():
    """The address of a clickd that was stopped: nothing listens there."""
    stopped = Server().start()
    address = stopped.address
    stopped.close()
    return address


def test_which_calls_retry_unavailable(dead_address):
    counter = CountingInterceptor()
    sleeps = []
    retry = clickd.RetryPolicy(max_attempts=3, initial_backoff=0.01, max_backoff=0.02)
    channel = grpc.intercept_channel(grpc.insecure_channel(dead_address), counter)
    with clickd.Client(channel=channel, retry=retry, timeout=5, sleep=sleeps.append) as c:
        calls = [
            # A Predict that logs impressions: one attempt, by name or request.
            ("Predict", 1, lambda: c.predict("m", ADS, log_impressions=True)),
            ("Predict", 1, lambda: c.predict(clickd.predict_request("m", ADS,
                                                                    log_impressions=True))),
            ("Predict", 3, lambda: c.predict("m", ADS, uncertainty=True)),
            ("Update", 1, lambda: c.update("m", [({"ad": [1]}, 1)])),
            ("Update", 3, lambda: c.update("m", [({"ad": [1]}, 1)], idempotency_key="u-1")),
            ("Update", 3, lambda: c.update(clickd.update_request("m", [({"ad": [1]}, 1)],
                                                                 idempotency_key="u-2"))),
            ("Feedback", 3, lambda: c.feedback("m", [(1, 1)])),
            ("Feedback", 3, lambda: c.feedback("m", [(1, 1)], idempotency_key="f-1")),
        ]
        for method, attempts, call in calls:
            counter.calls.clear()
            sleeps.clear()
            with pytest.raises(clickd.UnavailableError):
                call()
            assert counter.calls == {method: attempts}, (method, attempts)
            assert len(sleeps) == attempts - 1


def test_keyed_calls_retry_deadline_exceeded(dead_address):
    # With wait_for_ready, a call to an address where nothing listens waits
    # for its deadline and fails DEADLINE_EXCEEDED. A keyed call retries
    # that, each attempt with a deadline of its own (with one deadline for
    # all, the second attempt would have no time left and never be sent).
    counter = CountingInterceptor()
    retry = clickd.RetryPolicy(max_attempts=3, initial_backoff=0.01, max_backoff=0.02)
    channel = grpc.intercept_channel(grpc.insecure_channel(dead_address), counter)
    with clickd.Client(channel=channel, retry=retry, timeout=0.2, sleep=lambda s: None) as c:
        calls = [
            ("Update", 3, lambda: c.update("m", [({"ad": [1]}, 1)], idempotency_key="u-1",
                                           wait_for_ready=True)),
            ("Feedback", 3, lambda: c.feedback("m", [(1, 1)], idempotency_key="f-1",
                                               wait_for_ready=True)),
            ("Feedback", 1, lambda: c.feedback("m", [(1, 1)], wait_for_ready=True)),
            ("Update", 1, lambda: c.update("m", [({"ad": [1]}, 1)], wait_for_ready=True)),
            ("Predict", 1, lambda: c.predict("m", ADS, wait_for_ready=True)),
        ]
        for method, attempts, call in calls:
            counter.calls.clear()
            with pytest.raises(clickd.DeadlineExceededError):
                call()
            assert counter.calls == {method: attempts}, (method, attempts)


def test_keyed_retries_reach_a_server_that_comes_back():
    """The ad-server loop across a restart: impressions logged, the server
    down when the click comes, the keyed Feedback retried until it is back
    (same port, same --data_dir: the join buffer and keys survive)."""
    with tempfile.TemporaryDirectory(prefix="clickd_py_fb_") as data_dir:
        flags = [f"--data_dir={data_dir}", "--update_log_sync=none"]
        first = Server(flags).start()
        restarted = []

        def sleep_and_restart(seconds):
            if not restarted:
                restarted.append(Server(flags, port=first.port).start())
            time.sleep(seconds)

        retry = clickd.RetryPolicy(max_attempts=20, initial_backoff=0.05, max_backoff=0.2)
        try:
            with clickd.Client(first.address, timeout=10, retry=retry,
                               sleep=sleep_and_restart) as c:
                c.create_model(loop_config("loop"))
                ids = [p.impression_id
                       for p in c.predict("loop", ADS, USER, log_impressions=True).predictions]
                assert first.stop() == 0
                response = c.feedback("loop", [(ids[0], 1)], idempotency_key="click-1")
                assert restarted, "the feedback was answered without a retry"
                assert list(response.statuses) == [JOINED] and not response.duplicate
                again = c.feedback("loop", [(ids[0], 1)], idempotency_key="click-1")
                assert again.duplicate and list(again.statuses) == []
                update = c.update("loop", [({"ad": [1]}, 1)], idempotency_key="u-1")
                assert update.applied == 1 and not update.duplicate
        finally:
            first.close()
            for s in restarted:
                s.close()
