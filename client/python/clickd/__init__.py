"""clickd: the Python client of the clickd.v1.Clickd gRPC service (docs/client_python.md).

    import clickd
    with clickd.Client("127.0.0.1:50051", timeout=0.05) as client:
        scores = client.predict("ctr", candidates=[{"ad": [7]}, {"ad": [8]}],
                                context={"user": ["country=FR"]})

The generated stubs live in the subpackage clickd.v1 (clickd_pb2,
clickd_pb2_grpc). They are generated at build time, never committed: an
installed package carries them, and in a build tree they sit in another
directory on sys.path, which extend_path adds to this package's path.
"""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

try:
    from clickd.v1 import clickd_pb2 as pb  # noqa: E402
except ImportError as e:  # pragma: no cover - a setup error, said plainly
    raise ImportError(
        "clickd.v1.clickd_pb2 is missing: build the stubs (CMake target clickd_python_stubs) "
        "and put their directory on PYTHONPATH, or install the package (pip install client/python)"
    ) from e

from clickd.client import (AckedUpdateStream, Client, FeedbackStream, RetryPolicy,  # noqa: E402
                           UpdateStreamWriter)
from clickd.embedded import EmbeddedReplica, KeysRequest  # noqa: E402
from clickd.errors import *  # noqa: E402,F401,F403
from clickd.errors import __all__ as _errors
from clickd.hashing import Hasher, feature_key  # noqa: E402
from clickd.messages import (example, feedback_item, feedback_request, impression,  # noqa: E402
                             labeled, model_config, predict_request, update_request)

__all__ = _errors + [
    "AckedUpdateStream", "Client", "EmbeddedReplica", "FeedbackStream", "Hasher", "KeysRequest",
    "RetryPolicy",
    "UpdateStreamWriter", "example", "feature_key", "feedback_item", "feedback_request",
    "impression", "labeled", "model_config", "pb", "predict_request", "update_request",
]
