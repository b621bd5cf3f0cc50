"""Builders of clickd.v1 messages from plain Python values.

Every client method takes the generated messages (clickd.v1.clickd_pb2) or
these shorthands, converted here in one place:

  example    {"user": ["country=FR", ("age", 0.3)], "ad": [7]}
             a mapping (or a list of pairs) from namespace name to features;
             a feature is a name (str), a pre-hashed id (int) or a
             (name or id, value) pair. An Example message passes unchanged.
  labeled    (example, label) or (example, label, importance), or a
             LabeledExample message
  impression (context, [(candidate, label), ...]) or an Impression message
  feedback   (impression_id, label[, importance[, event_time]]) or a
             FeedbackItem message; event_time is microseconds since the
             Unix epoch (int) or an aware datetime.datetime
  config     a ModelConfig message, or its protobuf JSON form as a dict:
             {"name": "ctr", "ftrl": {"alpha": 0.05}}

Shorthand examples are written in one of the wire forms (docs/api.md,
"Wire forms"), chosen by ``wire``:

  "features" one Feature message per feature (the default)
  "packed"   per namespace, names as a repeated string and ids as packed
             fixed64, each with its values (cheaper for the server to parse)
  "keys"     per namespace, keys hashed here with the model's hashing seed
             (``seed``, from get_model(...).config.hashing.seed), so the
             server neither parses names nor hashes them

All three teach the model the same coordinates. Messages passed in are
sent as they are.
"""

import datetime
from typing import Any, Iterable, Mapping, Optional

from google.protobuf import json_format

from clickd import hashing
from clickd.v1 import clickd_pb2 as pb


def _feature(f, where: str) -> pb.Feature:
    if isinstance(f, pb.Feature):
        return f
    value = None
    if isinstance(f, tuple):
        if len(f) != 2:
            raise TypeError(f"{where}: a feature pair is (name or id, value), got {f!r}")
        f, value = f
    out = pb.Feature()
    if isinstance(f, bool):
        raise TypeError(f"{where}: a feature is a str name or an int id, got {f!r}")
    if isinstance(f, int):
        out.id = f
    elif isinstance(f, str):
        out.name = f
    else:
        raise TypeError(f"{where}: a feature is a str name or an int id, got {f!r}")
    if value is not None:
        out.value = value
    return out


WIRE_FORMS = ("features", "packed", "keys")


def _pack(ns: pb.Namespace, features: Iterable[pb.Feature], wire: str,
          seed: Optional[int]) -> None:
    """Writes the features into ns's packed fields (wire "packed" or "keys")."""
    names, ids, keys = [], [], []
    for f in features:
        value = f.value if f.HasField("value") else 1.0
        kind = f.WhichOneof("key")
        if wire == "keys":
            ns_hash = hashing.namespace_hash(ns.name, seed)
            key = (hashing.named_key(ns_hash, f.name) if kind == "name" else
                   hashing.id_key(ns_hash, f.id))
            keys.append((key, value))
        elif kind == "name":
            names.append((f.name, value))
        else:
            ids.append((f.id, value))

    def values(pairs):  # empty when every value is 1, as the wire allows
        return [v for _, v in pairs] if any(v != 1.0 for _, v in pairs) else []

    ns.names.extend(n for n, _ in names)
    ns.values.extend(values(names))
    ns.ids.extend(i for i, _ in ids)
    ns.id_values.extend(values(ids))
    ns.keys.extend(k for k, _ in keys)
    ns.key_values.extend(values(keys))


def example(value: Any = None, dense: Optional[Mapping[str, Iterable[float]]] = None, *,
            wire: str = "features", seed: Optional[int] = None) -> pb.Example:
    """Builds an Example from namespaces (see the module's doc) and dense values."""
    if wire not in WIRE_FORMS:
        raise ValueError(f"wire is {wire!r}; one of {', '.join(WIRE_FORMS)}")
    if wire == "keys" and seed is None:
        raise ValueError('wire="keys" needs the model\'s hashing seed (seed=...)')
    if isinstance(value, pb.Example):
        if dense:
            raise TypeError("dense values go into the Example message itself")
        return value
    out = pb.Example()
    items = value.items() if isinstance(value, Mapping) else (value or ())
    for i, (name, features) in enumerate(items):
        ns = out.namespaces.add(name=name)
        if isinstance(features, (str, int, tuple)):
            features = [features]
        built = [_feature(f, f"namespaces[{i}]") for f in features]
        if wire == "features":
            ns.features.extend(built)
        else:
            _pack(ns, built, wire, seed)
    for name, values in (dense or {}).items():
        out.dense.add(namespace=name, values=list(values))
    return out


def labeled(value: Any, *, wire: str = "features", seed: Optional[int] = None) -> pb.LabeledExample:
    """Builds a LabeledExample from (example, label[, importance]) or passes one through."""
    if isinstance(value, pb.LabeledExample):
        return value
    if not isinstance(value, tuple) or len(value) not in (2, 3):
        raise TypeError(f"a labeled example is (example, label[, importance]), got {value!r}")
    out = pb.LabeledExample(example=example(value[0], wire=wire, seed=seed), label=value[1])
    if len(value) == 3 and value[2] is not None:
        out.importance = value[2]
    return out


def impression(value: Any, *, wire: str = "features", seed: Optional[int] = None) -> pb.Impression:
    """Builds an Impression from (context, [(candidate, label), ...]) or passes one through."""
    if isinstance(value, pb.Impression):
        return value
    context, candidates = value
    return pb.Impression(context=example(context, wire=wire, seed=seed),
                         candidates=[labeled(c, wire=wire, seed=seed) for c in candidates])


def model_config(value: Any) -> pb.ModelConfig:
    """Builds a ModelConfig from its protobuf JSON dict (unknown fields are errors)."""
    if isinstance(value, pb.ModelConfig):
        return value
    if isinstance(value, str):
        return pb.ModelConfig(name=value)
    return json_format.ParseDict(value, pb.ModelConfig())


def predict_request(model: str, candidates: Iterable[Any], context: Any = None, *,
                    min_model_version: int = 0, request_id: str = "", wire: str = "features",
                    seed: Optional[int] = None, log_impressions: bool = False,
                    uncertainty: bool = False, explain_top_k: int = 0) -> pb.PredictRequest:
    """Builds a PredictRequest: a context shared by every candidate, and the candidates.

    log_impressions, uncertainty and explain_top_k ask for the per-candidate
    extras of the impression-to-click loop (docs/api.md#predict).
    """
    return pb.PredictRequest(model=model, request_id=request_id,
                             context=example(context, wire=wire, seed=seed),
                             candidates=[example(c, wire=wire, seed=seed) for c in candidates],
                             min_model_version=min_model_version,
                             log_impressions=log_impressions, uncertainty=uncertainty,
                             explain_top_k=explain_top_k)


def update_request(model: str, examples: Iterable[Any] = (), impressions: Iterable[Any] = (), *,
                   return_margins: bool = False, idempotency_key: str = "",
                   request_id: str = "", wire: str = "features",
                   seed: Optional[int] = None) -> pb.UpdateRequest:
    """Builds an UpdateRequest: flat labeled examples, then impressions."""
    return pb.UpdateRequest(model=model, request_id=request_id,
                            examples=[labeled(e, wire=wire, seed=seed) for e in examples],
                            impressions=[impression(i, wire=wire, seed=seed)
                                         for i in impressions],
                            return_margins=return_margins, idempotency_key=idempotency_key)


def _event_time_micros(value: Any, where: str) -> int:
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            raise TypeError(f"{where}: a naive datetime has no time zone; give one, or "
                            "microseconds since the Unix epoch")
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        return (value - epoch) // datetime.timedelta(microseconds=1)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where}: an event time is microseconds since the Unix epoch (int) "
                        f"or an aware datetime, got {value!r}")
    return value


def feedback_item(value: Any) -> pb.FeedbackItem:
    """Builds a FeedbackItem from (impression_id, label[, importance[, event_time]]).

    A FeedbackItem message passes through. An importance of None means
    unset (1); an event time of None or 0 means "when the server receives
    it". Labels, importances and times are checked by the server, which
    names the item (items[i].label).
    """
    if isinstance(value, pb.FeedbackItem):
        return value
    if not isinstance(value, tuple) or len(value) not in (2, 3, 4):
        raise TypeError("a feedback item is (impression_id, label[, importance[, event_time]]), "
                        f"got {value!r}")
    impression_id, label = value[0], value[1]
    if isinstance(impression_id, bool) or not isinstance(impression_id, int):
        raise TypeError(f"an impression id is an int (Prediction.impression_id), "
                        f"got {impression_id!r}")
    out = pb.FeedbackItem(impression_id=impression_id, label=label)
    if len(value) >= 3 and value[2] is not None:
        out.importance = value[2]
    if len(value) == 4 and value[3] is not None:
        out.event_time_unix_micros = _event_time_micros(value[3], f"item {impression_id}")
    return out


def feedback_request(model: str, items: Iterable[Any] = (), *, idempotency_key: str = "",
                     request_id: str = "") -> pb.FeedbackRequest:
    """Builds a FeedbackRequest: labels for impressions that Predict logged."""
    return pb.FeedbackRequest(model=model, request_id=request_id,
                              items=[feedback_item(i) for i in items],
                              idempotency_key=idempotency_key or "")
