"""A model learns from a small synthetic click stream sent by the client:
its progressive logloss falls, and on fresh impressions it beats the base
rate."""

import math
import random

import clickd

USERS, ADS = 30, 20


def make_world(seed):
    rng = random.Random(seed)
    user_w = [rng.gauss(0, 1.2) for _ in range(USERS)]
    ad_w = [rng.gauss(0, 1.2) for _ in range(ADS)]
    return rng, user_w, ad_w


def impressions(rng, user_w, ad_w, count):
    """`count` page views of 2 ads each: (context, [(candidate, clicked), ...])."""
    out = []
    for _ in range(count):
        u = rng.randrange(USERS)
        shown = []
        for a in rng.sample(range(ADS), 2):
            p = 1 / (1 + math.exp(-(-1.0 + user_w[u] + ad_w[a])))
            shown.append(({"ad": [a]}, 1 if rng.random() < p else 0))
        out.append(({"user": [f"u{u}"]}, shown))
    return out


def logloss(margins, labels):
    total = 0.0
    for m, y in zip(margins, labels):
        p = min(max(1 / (1 + math.exp(-m)), 1e-12), 1 - 1e-12)
        total -= math.log(p) if y else math.log(1 - p)
    return total / len(labels)


def test_logloss_falls_on_a_synthetic_click_stream(client, model):
    rng, user_w, ad_w = make_world(seed=13)
    stream = impressions(rng, user_w, ad_w, 2000)
    margins, labels = [], []
    for start in range(0, len(stream), 100):
        batch = stream[start:start + 100]
        response = client.update(model, impressions=batch, return_margins=True,
                                 idempotency_key=f"batch-{start}")
        margins.extend(response.margins)
        labels.extend(y for _, shown in batch for _, y in shown)
    assert len(margins) == len(labels) == 4000
    first, last = logloss(margins[:500], labels[:500]), logloss(margins[-1000:], labels[-1000:])
    assert last < first - 0.02, (first, last)
    # The server's own progressive metrics saw the same examples.
    info = client.get_model(model)
    assert info.updates == 4000 and info.metrics.examples == 4000
    assert abs(info.metrics.logloss - logloss(margins, labels)) < 1e-3

    # Fresh impressions from the same world: the model beats the base rate.
    test = impressions(rng, user_w, ad_w, 500)
    rate = sum(labels) / len(labels)
    scored, truth = [], []
    for context, shown in test:
        response = client.predict(model, [c for c, _ in shown], context)
        scored.extend(p.margin for p in response.predictions)
        truth.extend(y for _, y in shown)
    base = logloss([math.log(rate / (1 - rate))] * len(truth), truth)
    assert logloss(scored, truth) < base - 0.02


def test_an_update_stream_reports_progressive_metrics(client, model):
    rng, user_w, ad_w = make_world(seed=14)
    stream = impressions(rng, user_w, ad_w, 1000)
    requests = [clickd.update_request(model, impressions=stream[i:i + 50])
                for i in range(0, len(stream), 50)]
    summary = client.update_stream(requests)
    assert summary.requests == 20 and summary.applied == 2000
    assert summary.metrics.examples == 2000
    assert 0.5 < summary.metrics.auc <= 1.0
    assert 0 < summary.metrics.logloss < math.log(2)
