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
  config     a ModelConfig message, or its protobuf JSON form as a dict:
             {"name": "ctr", "ftrl": {"alpha": 0.05}}
"""

from typing import Any, Iterable, Mapping, Optional

from google.protobuf import json_format

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


def example(value: Any = None, dense: Optional[Mapping[str, Iterable[float]]] = None) -> pb.Example:
    """Builds an Example from namespaces (see the module's doc) and dense values."""
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
        ns.features.extend(_feature(f, f"namespaces[{i}]") for f in features)
    for name, values in (dense or {}).items():
        out.dense.add(namespace=name, values=list(values))
    return out


def labeled(value: Any) -> pb.LabeledExample:
    """Builds a LabeledExample from (example, label[, importance]) or passes one through."""
    if isinstance(value, pb.LabeledExample):
        return value
    if not isinstance(value, tuple) or len(value) not in (2, 3):
        raise TypeError(f"a labeled example is (example, label[, importance]), got {value!r}")
    out = pb.LabeledExample(example=example(value[0]), label=value[1])
    if len(value) == 3 and value[2] is not None:
        out.importance = value[2]
    return out


def impression(value: Any) -> pb.Impression:
    """Builds an Impression from (context, [(candidate, label), ...]) or passes one through."""
    if isinstance(value, pb.Impression):
        return value
    context, candidates = value
    return pb.Impression(context=example(context), candidates=[labeled(c) for c in candidates])


def model_config(value: Any) -> pb.ModelConfig:
    """Builds a ModelConfig from its protobuf JSON dict (unknown fields are errors)."""
    if isinstance(value, pb.ModelConfig):
        return value
    if isinstance(value, str):
        return pb.ModelConfig(name=value)
    return json_format.ParseDict(value, pb.ModelConfig())


def predict_request(model: str, candidates: Iterable[Any], context: Any = None, *,
                    min_model_version: int = 0, request_id: str = "") -> pb.PredictRequest:
    """Builds a PredictRequest: a context shared by every candidate, and the candidates."""
    return pb.PredictRequest(model=model, request_id=request_id, context=example(context),
                             candidates=[example(c) for c in candidates],
                             min_model_version=min_model_version)


def update_request(model: str, examples: Iterable[Any] = (), impressions: Iterable[Any] = (), *,
                   return_margins: bool = False, idempotency_key: str = "",
                   request_id: str = "") -> pb.UpdateRequest:
    """Builds an UpdateRequest: flat labeled examples, then impressions."""
    return pb.UpdateRequest(model=model, request_id=request_id,
                            examples=[labeled(e) for e in examples],
                            impressions=[impression(i) for i in impressions],
                            return_margins=return_margins, idempotency_key=idempotency_key)
