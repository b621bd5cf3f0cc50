// Package clickd is the Go client of clickd, the online click-prediction
// service (proto/clickd/v1/clickd.proto; docs/client_go.md).
//
// A Client is a thin layer over the generated gRPC stub (package clickdpb)
// that puts a deadline on every call, retries the calls that are safe to
// send twice, returns errors that carry the gRPC code and message (*Error),
// sends a bearer token and TLS credentials when given, and hashes features
// exactly as the server does (Hasher, and the WireKeys form of Example).
// Its retry rules are those of the C++ and Python clients
// (docs/client_python.md, "Deadlines and retries"):
//
//	Predict                  UNAVAILABLE, one deadline for every attempt;
//	                         never with LogImpressions (a lost reply's ids
//	                         could never be labelled)
//	Feedback                 UNAVAILABLE; with an idempotency key also
//	                         DEADLINE_EXCEEDED, each attempt with a deadline
//	                         of its own
//	Update with a key        UNAVAILABLE and DEADLINE_EXCEEDED, each attempt
//	                         with a deadline of its own
//	Update without a key,    never
//	streams, model calls
//
// A Client is safe for concurrent use by any number of goroutines; a stream
// belongs to one goroutine.
package clickd
