package clickd

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error is a failed call: the gRPC code and the server's message, unchanged.
// Test for a code with errors.As, or with clickd.Code(err).
type Error struct {
	Code    codes.Code
	Message string
}

// Error spells the code as gRPC names it: "INVALID_ARGUMENT: candidates[0]...".
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", codeName(e.Code), e.Message)
}

// GRPCStatus lets status.FromError and status.Code read an *Error.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

// Code returns the gRPC code of an error returned by this package (OK for
// nil, Unknown for an error that carries none).
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return status.Code(err)
}

func fromRPC(err error) error {
	if err == nil {
		return nil
	}
	s, ok := status.FromError(err)
	if !ok {
		return &Error{Code: codes.Unknown, Message: err.Error()}
	}
	return &Error{Code: s.Code(), Message: s.Message()}
}

// codeName is the upper-case name of a code, as the other clients print it.
func codeName(c codes.Code) string {
	names := map[codes.Code]string{
		codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN",
		codes.InvalidArgument: "INVALID_ARGUMENT", codes.DeadlineExceeded: "DEADLINE_EXCEEDED",
		codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
		codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
		codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED",
		codes.OutOfRange: "OUT_OF_RANGE", codes.Unimplemented: "UNIMPLEMENTED",
		codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE", codes.DataLoss: "DATA_LOSS",
		codes.Unauthenticated: "UNAUTHENTICATED",
	}
	if n, ok := names[c]; ok {
		return n
	}
	return c.String()
}
