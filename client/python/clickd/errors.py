"""Exceptions of the clickd client: one class per gRPC status code.

Every failed call raises a ClickdError (or a subclass named after its
code), carrying the gRPC code and the server's message unchanged, so a
caller can catch broadly (ClickdError), by kind (InvalidArgumentError), or
test ``err.code``. The server's codes and messages are documented in
docs/api.md#errors.
"""

import grpc

__all__ = [
    "ClickdError", "CancelledError", "UnknownError", "InvalidArgumentError",
    "DeadlineExceededError", "NotFoundError", "AlreadyExistsError", "PermissionDeniedError",
    "ResourceExhaustedError", "FailedPreconditionError", "AbortedError", "OutOfRangeError",
    "UnimplementedError", "InternalError", "UnavailableError", "DataLossError",
    "UnauthenticatedError", "error_for", "from_rpc_error",
]


class ClickdError(Exception):
    """A failed clickd call: ``code`` is a grpc.StatusCode, ``message`` the status message."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


class CancelledError(ClickdError):
    pass


class UnknownError(ClickdError):
    pass


class InvalidArgumentError(ClickdError):
    pass


class DeadlineExceededError(ClickdError):
    pass


class NotFoundError(ClickdError):
    pass


class AlreadyExistsError(ClickdError):
    pass


class PermissionDeniedError(ClickdError):
    pass


class ResourceExhaustedError(ClickdError):
    pass


class FailedPreconditionError(ClickdError):
    pass


class AbortedError(ClickdError):
    pass


class OutOfRangeError(ClickdError):
    pass


class UnimplementedError(ClickdError):
    pass


class InternalError(ClickdError):
    pass


class UnavailableError(ClickdError):
    pass


class DataLossError(ClickdError):
    pass


class UnauthenticatedError(ClickdError):
    pass


_BY_CODE = {
    grpc.StatusCode.CANCELLED: CancelledError,
    grpc.StatusCode.UNKNOWN: UnknownError,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.ABORTED: AbortedError,
    grpc.StatusCode.OUT_OF_RANGE: OutOfRangeError,
    grpc.StatusCode.UNIMPLEMENTED: UnimplementedError,
    grpc.StatusCode.INTERNAL: InternalError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DATA_LOSS: DataLossError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
}


def error_for(code: grpc.StatusCode, message: str) -> ClickdError:
    """Returns the exception of ``code``'s class (ClickdError for an unlisted code)."""
    return _BY_CODE.get(code, ClickdError)(code, message)


def from_rpc_error(error: grpc.RpcError) -> ClickdError:
    """Converts a grpc.RpcError (a failed call) into the matching ClickdError."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = error.details() if hasattr(error, "details") else str(error)
    return error_for(code or grpc.StatusCode.UNKNOWN, details or "")
