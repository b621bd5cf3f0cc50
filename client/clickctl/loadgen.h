// `clickctl loadgen`: drives a running clickd with synthetic, deterministic
// requests (loadgen_requests.h) in a closed loop (--concurrency calls in
// flight) or an open loop (--qps, latency from each call's intended send
// time; loadgen_runner.h), or over one UpdateStream, and reports the rate
// and the latency percentiles. docs/clickctl.md documents every flag;
// bench/rpc/run.sh uses it for docs/performance_rpc.md.
//
// Exit codes: 0 the run completed and some measured call succeeded (failed
// calls are counted in the report, by code); 1 the server was unreachable,
// no measured call succeeded, or calls outlived their deadlines; 2 usage
// error.
#ifndef CLICKD_CLIENT_CLICKCTL_LOADGEN_H_
#define CLICKD_CLIENT_CLICKCTL_LOADGEN_H_

#include <string>
#include <vector>

namespace clickd {

// Runs the command with its positional arguments (there are none) and
// returns the process exit code.
int RunLoadgenCommand(const std::vector<std::string>& args);

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_LOADGEN_H_
