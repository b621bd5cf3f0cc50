/* The embedded replica's C ABI (libclickd_embedded.so): what other
 * languages' bindings load (client/python/clickd/embedded.py; docs/embedded.md).
 * It wraps embedded/embedded_replica.h; requests and responses are
 * serialized clickd.v1 messages, so a binding builds them with its own
 * protobuf code, exactly as its gRPC client does.
 *
 * Errors: a function that can fail returns a gRPC status code (0 is OK)
 * and, on failure, sets *error to a message the caller frees with
 * clickd_embedded_free (error may be NULL if the caller does not want it).
 * Every buffer this library returns is freed with clickd_embedded_free.
 *
 * Thread safety: every function may be called from any thread at once,
 * clickd_embedded_close too: it waits for the calls under way on the
 * handle to return, and every later call fails FAILED_PRECONDITION ("the
 * embedded replica is closed"; applied_version returns 0, stats_json and
 * metrics_text NULL). A closed handle keeps a few dozen bytes so that a
 * late call finds it closed; a second close does nothing. */
#ifndef CLICKD_EMBEDDED_CLICKD_EMBEDDED_H_
#define CLICKD_EMBEDDED_CLICKD_EMBEDDED_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clickd_embedded clickd_embedded;

/* Joins the deployment whose NATS servers are `nats_url` (comma-separated)
 * and whose --nats_stream is `stream_prefix` (NULL: "CLICKD"); `nats_creds`
 * is a credentials file (NULL or "": none). Restores, applies the log for
 * up to `catch_up_timeout_ms` (<= 0: 60 s) and returns the handle in
 * *replica. */
int clickd_embedded_open(const char* nats_url, const char* stream_prefix, const char* nats_creds,
                         int64_t catch_up_timeout_ms, clickd_embedded** replica, char** error);

/* Scores a serialized clickd.v1.PredictRequest; *response gets a
 * serialized clickd.v1.PredictResponse of *response_len bytes. */
int clickd_embedded_predict(clickd_embedded* replica, const void* request, size_t request_len,
                            void** response, size_t* response_len, char** error);

/* The model's state digest: 16 hex digits and a NUL into digest[17]. */
int clickd_embedded_state_digest(clickd_embedded* replica, const char* model, char digest[17],
                                 char** error);

/* The stream sequence applied (every Predict answered now reflects it). */
uint64_t clickd_embedded_applied_version(clickd_embedded* replica);

/* Waits until the applied version reaches `version`, at most `timeout_ms`. */
int clickd_embedded_wait_for_version(clickd_embedded* replica, uint64_t version, int64_t timeout_ms,
                                     char** error);

/* The replica's statistics as a JSON object (applied_version,
 * stream_sequence, lag_seconds, nats_connected, models, bootstraps,
 * broken). */
char* clickd_embedded_stats_json(clickd_embedded* replica);

/* Stops applying, disconnects and frees the models, after the calls
 * under way on the handle return (a wait_for_version may take its
 * timeout). */
void clickd_embedded_close(clickd_embedded* replica);

void clickd_embedded_free(void* buffer);

/* The replica's metrics (clickd_embedded_*, docs/embedded.md#metrics) in
 * Prometheus' text exposition format 0.0.4, for the host to serve on its
 * own /metrics; freed with clickd_embedded_free. NULL if replica is NULL
 * or memory ran out. */
char* clickd_embedded_metrics_text(clickd_embedded* replica);

/* Predict without protobuf: the request's features as keys the caller
 * hashed (the keys wire form, Namespace.keys: XXH3_64 of a name or id
 * seeded with its namespace, docs/hashing.md), in flat arrays, and each
 * candidate's probability (or margin, for a model without a link) out.
 * What the bindings' predict_keys call: no message is encoded on either
 * side. The answer is the one clickd_embedded_predict gives for the same
 * request, bit for bit, with the same checks and limits (it builds that
 * request in a per-thread message and scores it).
 *
 * namespaces[0..num_namespaces) name the namespaces the keys belong to;
 * context key i is context_keys[i] in namespaces[context_namespaces[i]]
 * (value context_values[i], or 1 if context_values is NULL); candidate c's
 * keys are candidate_keys[candidate_ends[c-1] .. candidate_ends[c]) (from
 * 0 for c = 0), namespaced and valued alike. predictions[0..num_candidates)
 * gets each candidate's prediction; margins (NULL: not wanted) their
 * margins; *model_version (NULL: not wanted) the version that scored.
 * `variant` NULL or "": the champion. On failure nothing is written to
 * the outputs. */
int clickd_embedded_predict_keys(clickd_embedded* replica, const char* model, const char* variant,
                                 const char* const* namespaces, size_t num_namespaces,
                                 const uint64_t* context_keys, const uint32_t* context_namespaces,
                                 const float* context_values, size_t context_count,
                                 const uint64_t* candidate_keys,
                                 const uint32_t* candidate_namespaces,
                                 const float* candidate_values, const size_t* candidate_ends,
                                 size_t num_candidates, double* predictions, double* margins,
                                 uint64_t* model_version, char** error);

/* clickd_embedded_predict_keys with its arguments in one struct, for a
 * caller whose per-argument cost is high (Python's ctypes converts each
 * argument on every call; a struct it fills once is one pointer). The
 * fields mean what the arguments of the same names do; model_version is
 * set on success. */
typedef struct {
  const char* model;
  const char* variant;
  const char* const* namespaces;
  size_t num_namespaces;
  const uint64_t* context_keys;
  const uint32_t* context_namespaces;
  const float* context_values;
  size_t context_count;
  const uint64_t* candidate_keys;
  const uint32_t* candidate_namespaces;
  const float* candidate_values;
  const size_t* candidate_ends;
  size_t num_candidates;
  double* predictions;
  double* margins;
  uint64_t model_version;
} clickd_embedded_keys_request;

int clickd_embedded_predict_keys_request(clickd_embedded* replica,
                                         clickd_embedded_keys_request* request, char** error);

#ifdef __cplusplus
}
#endif

#endif /* CLICKD_EMBEDDED_CLICKD_EMBEDDED_H_ */
