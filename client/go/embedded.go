//go:build cgo && clickd_embedded

package clickd

// The embedded replica from Go: Predict in this process, no RPC
// (docs/embedded.md). Built only with the build tag clickd_embedded (and
// cgo), so the gRPC client stays pure Go without it:
//
//	go build -tags clickd_embedded ./...
//
// It loads libclickd_embedded.so (the C ABI of embedded/clickd_embedded.h)
// at run time with dlopen: from WithLibrary, else $CLICKD_EMBEDDED_LIB, else
// the system's library search path; nothing is linked at build time.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The C ABI of embedded/clickd_embedded.h, declared here because this
// module is built outside the clickd source tree too.
typedef struct clickd_embedded clickd_embedded;

typedef struct {
	int (*open)(const char*, const char*, const char*, int64_t, clickd_embedded**, char**);
	int (*predict)(clickd_embedded*, const void*, size_t, void**, size_t*, char**);
	int (*state_digest)(clickd_embedded*, const char*, char*, char**);
	uint64_t (*applied_version)(clickd_embedded*);
	int (*wait_for_version)(clickd_embedded*, uint64_t, int64_t, char**);
	char* (*stats_json)(clickd_embedded*);
	void (*close)(clickd_embedded*);
	void (*free)(void*);
	char* (*metrics_text)(clickd_embedded*);
	int (*predict_keys)(clickd_embedded*, const char*, const char*, const char* const*, size_t,
	                    const uint64_t*, const uint32_t*, const float*, size_t, const uint64_t*,
	                    const uint32_t*, const float*, const size_t*, size_t, double*, double*,
	                    uint64_t*, char**);
} clickd_go_api;

// Loads the library at `path` into *api; NULL, or a malloc'd message.
static char* clickd_go_load(const char* path, clickd_go_api* api) {
	void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) return strdup(dlerror());
	struct { void** slot; const char* name; } symbols[] = {
		{(void**)&api->open, "clickd_embedded_open"},
		{(void**)&api->predict, "clickd_embedded_predict"},
		{(void**)&api->state_digest, "clickd_embedded_state_digest"},
		{(void**)&api->applied_version, "clickd_embedded_applied_version"},
		{(void**)&api->wait_for_version, "clickd_embedded_wait_for_version"},
		{(void**)&api->stats_json, "clickd_embedded_stats_json"},
		{(void**)&api->close, "clickd_embedded_close"},
		{(void**)&api->free, "clickd_embedded_free"},
		{(void**)&api->metrics_text, "clickd_embedded_metrics_text"},
		{(void**)&api->predict_keys, "clickd_embedded_predict_keys"},
	};
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		*symbols[i].slot = dlsym(lib, symbols[i].name);
		if (*symbols[i].slot == NULL) {
			char* error = strdup(dlerror());
			dlclose(lib);
			return error;
		}
	}
	return NULL;  // never closed: its threads may outlive a handle's close
}

// A call's outcome, returned by value so that no Go pointer crosses.
typedef struct {
	int code;
	void* data;
	size_t len;
	char* error;
} clickd_go_result;

static clickd_go_result clickd_go_open(const clickd_go_api* api, const char* url,
                                       const char* prefix, const char* creds,
                                       int64_t timeout_ms) {
	clickd_go_result r = {0, NULL, 0, NULL};
	clickd_embedded* handle = NULL;
	r.code = api->open(url, prefix, creds, timeout_ms, &handle, &r.error);
	r.data = handle;
	return r;
}

static clickd_go_result clickd_go_predict(const clickd_go_api* api, clickd_embedded* handle,
                                          const void* request, size_t len) {
	clickd_go_result r = {0, NULL, 0, NULL};
	r.code = api->predict(handle, request, len, &r.data, &r.len, &r.error);
	return r;
}

static int clickd_go_state_digest(const clickd_go_api* api, clickd_embedded* handle,
                                  const char* model, char* digest, char** error) {
	return api->state_digest(handle, model, digest, error);
}

static uint64_t clickd_go_applied_version(const clickd_go_api* api, clickd_embedded* handle) {
	return api->applied_version(handle);
}

static int clickd_go_wait_for_version(const clickd_go_api* api, clickd_embedded* handle,
                                      uint64_t version, int64_t timeout_ms, char** error) {
	return api->wait_for_version(handle, version, timeout_ms, error);
}

static char* clickd_go_stats_json(const clickd_go_api* api, clickd_embedded* handle) {
	return api->stats_json(handle);
}

static void clickd_go_close(const clickd_go_api* api, clickd_embedded* handle) {
	api->close(handle);
}

static void clickd_go_free(const clickd_go_api* api, void* buffer) { api->free(buffer); }

static char* clickd_go_metrics_text(const clickd_go_api* api, clickd_embedded* handle) {
	return api->metrics_text(handle);
}

static clickd_go_result clickd_go_predict_keys(
    const clickd_go_api* api, clickd_embedded* handle, const char* model, const char* variant,
    const char* const* namespaces, size_t num_namespaces, const uint64_t* context_keys,
    const uint32_t* context_namespaces, const float* context_values, size_t context_count,
    const uint64_t* candidate_keys, const uint32_t* candidate_namespaces,
    const float* candidate_values, const uint64_t* candidate_ends, size_t num_candidates,
    double* predictions, double* margins) {
	clickd_go_result r = {0, NULL, 0, NULL};
	uint64_t version = 0;
	r.code = api->predict_keys(handle, model, variant, namespaces, num_namespaces, context_keys,
	                           context_namespaces, context_values, context_count, candidate_keys,
	                           candidate_namespaces, candidate_values,
	                           (const size_t*)candidate_ends, num_candidates, predictions,
	                           margins, &version, &r.error);
	r.len = (size_t)version;
	return r;
}
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	pb "github.com/clickd/clickd/client/go/clickdpb"
)

// maxVersionWait is how long the library's Predict waits for its
// min_model_version (EmbeddedReplicaOptions::max_version_wait, which the C
// ABI leaves at its default), as a server's --max_version_wait does.
const maxVersionWait = time.Second

type embeddedOptions struct {
	library        string
	natsCreds      string
	catchUpTimeout time.Duration
}

// EmbeddedOption configures an EmbeddedReplica.
type EmbeddedOption func(*embeddedOptions) error

// WithLibrary loads libclickd_embedded.so from path (else
// $CLICKD_EMBEDDED_LIB, else the system's library search path).
func WithLibrary(path string) EmbeddedOption {
	return func(o *embeddedOptions) error {
		if path == "" {
			return errors.New("clickd: the library path is empty")
		}
		o.library = path
		return nil
	}
}

// WithNatsCreds authenticates to NATS with a credentials file (JWT and NKey seed).
func WithNatsCreds(path string) EmbeddedOption {
	return func(o *embeddedOptions) error {
		o.natsCreds = path
		return nil
	}
}

// WithCatchUpTimeout bounds how long NewEmbeddedReplica retries while NATS is
// unavailable and then applies the log before it returns (60 s by default);
// after it, the replica catches up while serving.
func WithCatchUpTimeout(d time.Duration) EmbeddedOption {
	return func(o *embeddedOptions) error {
		if d < time.Millisecond {
			return fmt.Errorf("clickd: catch-up timeout is %v; must be at least 1ms", d)
		}
		o.catchUpTimeout = d
		return nil
	}
}

var libraries struct {
	mu     sync.Mutex
	loaded map[string]*C.clickd_go_api // by path; a library is never unloaded
}

func loadLibrary(path string) (*C.clickd_go_api, error) {
	libraries.mu.Lock()
	defer libraries.mu.Unlock()
	if api, ok := libraries.loaded[path]; ok {
		return api, nil
	}
	// In C memory: cgo passes it to C on every call.
	api := (*C.clickd_go_api)(C.calloc(1, C.sizeof_clickd_go_api))
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.clickd_go_load(cpath, api); msg != nil {
		defer C.free(unsafe.Pointer(msg))
		C.free(unsafe.Pointer(api))
		return nil, fmt.Errorf("clickd: cannot load the embedded replica's library %q: %s "+
			"(WithLibrary or $CLICKD_EMBEDDED_LIB names it; the CMake target "+
			"clickd_embedded_shared builds it)", path, C.GoString(msg))
	}
	if libraries.loaded == nil {
		libraries.loaded = map[string]*C.clickd_go_api{}
	}
	libraries.loaded[path] = api
	return api, nil
}

// EmbeddedReplica is a read-only replica of a clickd deployment inside this
// process (docs/embedded.md): its Predict and StateDigest have the Client's
// signatures and answers, so switching between the two is a one-line
// change. It is safe for concurrent use; Close may race other calls (they
// then fail CANCELED, as a closed Client's do).
type EmbeddedReplica struct {
	api    *C.clickd_go_api
	mu     sync.RWMutex // the read side for every call; Close takes the write side
	handle *C.clickd_embedded
	bufs   sync.Pool // *[]byte: serialized requests
}

// NewEmbeddedReplica joins the deployment whose NATS servers are natsURL
// (comma-separated) and whose --nats_stream is streamPrefix ("": CLICKD):
// it restores every model from the newest published snapshot and applies
// the log (within the catch-up timeout). NOT_FOUND if the deployment's log
// does not exist, UNAVAILABLE if NATS did not answer in time.
func NewEmbeddedReplica(natsURL, streamPrefix string, opts ...EmbeddedOption) (*EmbeddedReplica, error) {
	o := embeddedOptions{library: os.Getenv("CLICKD_EMBEDDED_LIB")}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.library == "" {
		o.library = "libclickd_embedded.so"
	}
	if natsURL == "" {
		return nil, errors.New("clickd: the NATS URL is empty; want nats://host:port[,...]")
	}
	api, err := loadLibrary(o.library)
	if err != nil {
		return nil, err
	}
	url, prefix, creds := C.CString(natsURL), C.CString(streamPrefix), C.CString(o.natsCreds)
	defer C.free(unsafe.Pointer(url))
	defer C.free(unsafe.Pointer(prefix))
	defer C.free(unsafe.Pointer(creds))
	r := C.clickd_go_open(api, url, prefix, creds, C.int64_t(o.catchUpTimeout.Milliseconds()))
	if err := embeddedError(api, r.code, r.error); err != nil {
		return nil, err
	}
	return &EmbeddedReplica{api: api, handle: (*C.clickd_embedded)(r.data)}, nil
}

// embeddedError is the library's failure as an *Error (nil for code 0),
// freeing its message.
func embeddedError(api *C.clickd_go_api, code C.int, msg *C.char) error {
	if msg != nil {
		defer C.clickd_go_free(api, unsafe.Pointer(msg))
	}
	if code == 0 {
		return nil
	}
	return &Error{Code: codes.Code(code), Message: C.GoString(msg)}
}

var errEmbeddedClosed = &Error{Code: codes.Canceled, Message: "the embedded replica is closed"}

func contextError(ctx context.Context) error {
	switch err := ctx.Err(); {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: codes.DeadlineExceeded, Message: err.Error()}
	default:
		return &Error{Code: codes.Canceled, Message: err.Error()}
	}
}

// Predict scores candidates as Client.Predict does and returns the same
// PredictResponse (its ModelVersion is the applied stream sequence); it
// runs on this goroutine. LogImpressions is refused FAILED_PRECONDITION:
// impressions are logged through a server. A MinModelVersion not applied
// yet is waited for up to the replica's max_version_wait (1 s, then
// UNAVAILABLE naming both versions, as a server answers), or until the
// call's deadline (ctx's, or Timeout's) if that comes first (then
// DEADLINE_EXCEEDED). ctx is not watched while the library scores (a few
// microseconds); WaitForReady has no effect (there is no connection).
func (r *EmbeddedReplica) Predict(ctx context.Context, req *pb.PredictRequest, opts ...CallOption) (*pb.PredictResponse, error) {
	if err := contextError(ctx); err != nil {
		return nil, err
	}
	bufp, _ := r.bufs.Get().(*[]byte)
	if bufp == nil {
		bufp = new([]byte)
	}
	defer r.bufs.Put(bufp)
	data, err := proto.MarshalOptions{}.MarshalAppend((*bufp)[:0], req)
	if err != nil {
		return nil, &Error{Code: codes.InvalidArgument, Message: fmt.Sprintf("the request: %v", err)}
	}
	*bufp = data
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.handle == nil {
		return nil, errEmbeddedClosed
	}
	if err := r.waitForDeadline(ctx, req.GetMinModelVersion(), opts); err != nil {
		return nil, err
	}
	var request unsafe.Pointer
	if len(data) > 0 {
		request = unsafe.Pointer(&data[0])
	}
	res := C.clickd_go_predict(r.api, r.handle, request, C.size_t(len(data)))
	if err := embeddedError(r.api, res.code, res.error); err != nil {
		return nil, err
	}
	defer C.clickd_go_free(r.api, res.data)
	resp := &pb.PredictResponse{}
	// proto.Unmarshal copies what it keeps, so the library's buffer is freed after.
	if err := proto.Unmarshal(unsafe.Slice((*byte)(res.data), int(res.len)), resp); err != nil {
		return nil, &Error{Code: codes.Internal, Message: fmt.Sprintf("the library's response: %v", err)}
	}
	return resp, nil
}

// waitForDeadline waits for a min_model_version not applied yet when the
// call's deadline comes before the library's own wait would end: a gRPC
// caller gets DEADLINE_EXCEEDED then, too. Called with mu held for reading.
func (r *EmbeddedReplica) waitForDeadline(ctx context.Context, version uint64, opts []CallOption) error {
	if version == 0 || uint64(C.clickd_go_applied_version(r.api, r.handle)) >= version {
		return nil
	}
	o := callOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	deadline, ok := ctx.Deadline()
	if o.timeout > 0 && (!ok || time.Now().Add(o.timeout).Before(deadline)) {
		deadline, ok = time.Now().Add(o.timeout), true
	}
	left := time.Until(deadline)
	if !ok || left >= maxVersionWait {
		return nil
	}
	var msg *C.char
	code := C.clickd_go_wait_for_version(r.api, r.handle, C.uint64_t(version),
		C.int64_t(max(0, left.Milliseconds())), &msg)
	return embeddedError(r.api, code, msg)
}

// StateDigest returns the model's state digest: the same 16 hex digits as
// Client.StateDigest (NOT_FOUND for an unknown model). It reads the whole
// model while applying waits. ctx is checked before; opts have no effect.
func (r *EmbeddedReplica) StateDigest(ctx context.Context, model string, opts ...CallOption) (string, error) {
	if err := contextError(ctx); err != nil {
		return "", err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.handle == nil {
		return "", errEmbeddedClosed
	}
	name := C.CString(model)
	defer C.free(unsafe.Pointer(name))
	var digest [17]C.char
	var msg *C.char
	code := C.clickd_go_state_digest(r.api, r.handle, name, &digest[0], &msg)
	if err := embeddedError(r.api, code, msg); err != nil {
		return "", err
	}
	return C.GoString(&digest[0]), nil
}

// AppliedVersion is the stream sequence applied: every Predict answered now
// reflects every record up to it. 0 after Close.
func (r *EmbeddedReplica) AppliedVersion() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.handle == nil {
		return 0
	}
	return uint64(C.clickd_go_applied_version(r.api, r.handle))
}

// WaitForVersion waits until AppliedVersion() >= version, at most timeout
// (DEADLINE_EXCEEDED naming both versions). Close waits for it to return.
func (r *EmbeddedReplica) WaitForVersion(version uint64, timeout time.Duration) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.handle == nil {
		return errEmbeddedClosed
	}
	var msg *C.char
	code := C.clickd_go_wait_for_version(r.api, r.handle, C.uint64_t(version),
		C.int64_t(max(0, timeout.Milliseconds())), &msg)
	return embeddedError(r.api, code, msg)
}

// EmbeddedStats is what the replica reports of itself (docs/embedded.md).
type EmbeddedStats struct {
	AppliedVersion uint64  `json:"applied_version"` // the stream sequence applied
	StreamSequence uint64  `json:"stream_sequence"` // the newest one known to exist
	LagSeconds     float64 `json:"lag_seconds"`
	NatsConnected  bool    `json:"nats_connected"`
	Models         uint64  `json:"models"`
	Bootstraps     uint64  `json:"bootstraps"` // restores from a published snapshot, the first included
	Broken         string  `json:"broken"`     // why applying stopped, until the next bootstrap
}

// Stats reads the replica's statistics.
func (r *EmbeddedReplica) Stats() (EmbeddedStats, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.handle == nil {
		return EmbeddedStats{}, errEmbeddedClosed
	}
	raw := C.clickd_go_stats_json(r.api, r.handle)
	if raw == nil {
		return EmbeddedStats{}, &Error{Code: codes.ResourceExhausted, Message: "out of memory for the statistics"}
	}
	defer C.clickd_go_free(r.api, unsafe.Pointer(raw))
	var s EmbeddedStats
	if err := json.Unmarshal([]byte(C.GoString(raw)), &s); err != nil {
		return EmbeddedStats{}, &Error{Code: codes.Internal, Message: fmt.Sprintf("the library's statistics: %v", err)}
	}
	return s, nil
}

// Close stops applying, disconnects from NATS and frees the models; it
// waits for calls under way (a WaitForVersion included) to return. Later
// calls fail CANCELED; a second Close does nothing.
func (r *EmbeddedReplica) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handle != nil {
		C.clickd_go_close(r.api, r.handle)
		r.handle = nil
	}
	return nil
}

// MetricsText returns the replica's metrics (clickd_embedded_*,
// docs/embedded.md#metrics) in Prometheus' text exposition format 0.0.4,
// for the host's own /metrics endpoint: serve it with Content-Type
// "text/plain; version=0.0.4; charset=utf-8", or append it to what the
// host's own registry writes.
func (r *EmbeddedReplica) MetricsText() (string, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.handle == nil {
		return "", errEmbeddedClosed
	}
	raw := C.clickd_go_metrics_text(r.api, r.handle)
	if raw == nil {
		return "", &Error{Code: codes.ResourceExhausted, Message: "out of memory for the metrics"}
	}
	defer C.clickd_go_free(r.api, unsafe.Pointer(raw))
	return C.GoString(raw), nil
}

// KeysRequest is a Predict in the keys wire form as flat arrays, for
// PredictKeys: no protobuf is built or parsed on either side of the
// library. Make it with NewKeysRequest (which keeps the model's and the
// namespaces' names in C memory, freed with the request) and fill the
// slices: context key i is ContextKeys[i] in Namespaces[ContextNamespaces[i]]
// with value ContextValues[i] (nil: every value 1); candidate c's keys
// are CandidateKeys[CandidateEnds[c-1]:CandidateEnds[c]] (from 0 for c = 0),
// namespaced and valued alike. Keys are hashed by the caller as the keys
// wire form defines them (NamedKey/IDKey of NamespaceHash; docs/hashing.md).
type KeysRequest struct {
	ContextKeys         []uint64
	ContextNamespaces   []uint32
	ContextValues       []float32
	CandidateKeys       []uint64
	CandidateNamespaces []uint32
	CandidateValues     []float32
	CandidateEnds       []uint64

	names *keysNames
}

// keysNames holds the C strings of a KeysRequest; freed by its finalizer.
type keysNames struct {
	model, variant *C.char
	namespaces     **C.char
	count          int
}

// NewKeysRequest makes a KeysRequest for `model` (and `variant`, "" for
// the champion) whose keys belong to `namespaces`.
func NewKeysRequest(model, variant string, namespaces []string) *KeysRequest {
	n := &keysNames{model: C.CString(model), variant: C.CString(variant), count: len(namespaces)}
	if len(namespaces) > 0 {
		n.namespaces = (**C.char)(C.malloc(C.size_t(len(namespaces)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
		names := unsafe.Slice(n.namespaces, len(namespaces))
		for i, name := range namespaces {
			names[i] = C.CString(name)
		}
	}
	runtime.SetFinalizer(n, func(n *keysNames) {
		if n.namespaces != nil {
			for _, name := range unsafe.Slice(n.namespaces, n.count) {
				C.free(unsafe.Pointer(name))
			}
			C.free(unsafe.Pointer(n.namespaces))
		}
		C.free(unsafe.Pointer(n.model))
		C.free(unsafe.Pointer(n.variant))
	})
	return &KeysRequest{names: n}
}

func firstOf[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// PredictKeys scores a KeysRequest into predictions (one per candidate,
// len(req.CandidateEnds) of them) and, if margins is not nil, their
// margins; it returns the model version that scored. The answer is the
// one Predict gives for the same request in the keys wire form, bit for
// bit, without its protobuf encoding and decoding (docs/embedded.md).
// Errors are those of Predict; on one, nothing is written.
func (r *EmbeddedReplica) PredictKeys(req *KeysRequest, predictions, margins []float64) (uint64, error) {
	if req == nil || req.names == nil {
		return 0, &Error{Code: codes.InvalidArgument, Message: "the request was not made by NewKeysRequest"}
	}
	n := len(req.CandidateEnds)
	if len(req.ContextNamespaces) != len(req.ContextKeys) ||
		(req.ContextValues != nil && len(req.ContextValues) != len(req.ContextKeys)) ||
		len(req.CandidateNamespaces) != len(req.CandidateKeys) ||
		(req.CandidateValues != nil && len(req.CandidateValues) != len(req.CandidateKeys)) ||
		(n > 0 && req.CandidateEnds[n-1] != uint64(len(req.CandidateKeys))) {
		return 0, &Error{Code: codes.InvalidArgument, Message: "a KeysRequest's namespaces and values must match its keys, and the last candidate end must be the candidate key count"}
	}
	if len(predictions) < n || (margins != nil && len(margins) < n) {
		return 0, &Error{Code: codes.InvalidArgument, Message: fmt.Sprintf("predictions (and margins) need room for %d candidates", n)}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.handle == nil {
		return 0, errEmbeddedClosed
	}
	res := C.clickd_go_predict_keys(r.api, r.handle, req.names.model, req.names.variant,
		req.names.namespaces, C.size_t(req.names.count),
		(*C.uint64_t)(firstOf(req.ContextKeys)), (*C.uint32_t)(firstOf(req.ContextNamespaces)),
		(*C.float)(firstOf(req.ContextValues)), C.size_t(len(req.ContextKeys)),
		(*C.uint64_t)(firstOf(req.CandidateKeys)), (*C.uint32_t)(firstOf(req.CandidateNamespaces)),
		(*C.float)(firstOf(req.CandidateValues)), (*C.uint64_t)(firstOf(req.CandidateEnds)),
		C.size_t(n), (*C.double)(firstOf(predictions)), (*C.double)(firstOf(margins)))
	runtime.KeepAlive(req)
	if err := embeddedError(r.api, res.code, res.error); err != nil {
		return 0, err
	}
	return uint64(res.len), nil
}
