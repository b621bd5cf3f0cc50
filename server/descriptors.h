// File descriptors of the process under many connections (issue 33, N1).
//
// PrepareDescriptors() runs once at start, before any socket opens: it lifts
// the soft RLIMIT_NOFILE to the hard limit (the soft one is often 1024, the
// hard one far larger) and reserves one descriptor for shedding.
//
// gRPC 1.51 stops listening for good when accept4 fails with anything but
// EAGAIN or ECONNABORTED: tcp_server_posix.cc logs "Failed accept4: Too many
// open files" and closes the listener, so a burst of idle connections that
// uses up the descriptors ends the server's accepting even after they close
// (later gRPC versions retry after a back-off). No channel argument changes
// that, so clickd defines accept4 itself (descriptors.cc): gRPC's calls
// resolve to that definition, which calls the kernel and, when the process
// is out of descriptors, sheds the waiting connections (frees the reserved
// descriptor, accepts one, closes it: the client sees its connection reset)
// and returns EAGAIN, so that the listener stays armed and accepts again
// once descriptors are free. Connections that hold descriptors without
// sending anything are closed by gRPC after --handshake_timeout_seconds
// (no HTTP/2 settings) or --max_connection_idle_seconds (no calls).
//
// Thread safety: the functions are safe to call from any thread.
#ifndef CLICKD_SERVER_DESCRIPTORS_H_
#define CLICKD_SERVER_DESCRIPTORS_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace clickd {

// Raises the soft RLIMIT_NOFILE to the hard limit (capped at
// /proc/sys/fs/nr_open when the hard limit is unlimited) and reserves the
// shedding descriptor. Returns the soft limit now in force.
absl::StatusOr<uint64_t> PrepareDescriptors();

// Connections accepted and closed at once because the process was out of
// descriptors, since start.
uint64_t ConnectionsShed();

}  // namespace clickd

#endif  // CLICKD_SERVER_DESCRIPTORS_H_
