#include "client/clickctl/loadgen_runner.h"

#include <sys/prctl.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/status/status.h"
#include "client/clickctl/loadgen_schedule.h"

namespace clickd {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

void SleepUntilNanos(int64_t nanos) {
  std::this_thread::sleep_until(Clock::time_point(std::chrono::nanoseconds(nanos)));
}

// How long after the last deadline a call may still be in flight before the
// run gives up waiting for it.
constexpr int64_t kDrainGraceNanos = 10'000'000'000;

// One run of the load loop. Lives on the heap: if calls outlive the drain
// bound, RunLoad leaks it rather than free what their callbacks will touch.
class LoadRun {
 public:
  LoadRun(CallIssuer& issuer, const LoadOptions& options)
      : issuer_(issuer),
        options_(options),
        deadline_ns_(absl::ToInt64Nanoseconds(options.deadline)) {}

  LoadResult RunClosed();
  LoadResult RunOpen();

 private:
  struct Call {
    grpc::ClientContext context;
    uint64_t index;
    int64_t start_ns;  // the due time in the open loop
    bool measured;
  };

  void StartCall(uint64_t index, int64_t start_ns, bool measured, bool closed);
  void Record(const Call& call, const grpc::Status& status);
  // Closed loop: starts this slot's next call, unless the run is over.
  void IssueNext();
  // Counts a call out; wakes RunClosed/RunOpen when it matters.
  void Finished();
  // Waits until no call is in flight or `until_ns`; true if none is.
  bool WaitIdle(int64_t until_ns);
  LoadResult Result(int64_t measure_start_ns);

  CallIssuer& issuer_;
  const LoadOptions options_;
  const int64_t deadline_ns_;
  int64_t warm_end_ns_ = 0;  // closed loop: calls starting from here are measured
  int64_t end_ns_ = 0;       // no call starts from here

  std::atomic<uint64_t> next_index_{0};
  std::atomic<uint64_t> measured_started_{0};
  std::atomic<uint64_t> warmup_done_{0};
  std::atomic<uint64_t> ok_{0};
  std::atomic<uint64_t> ok_units_{0};
  std::atomic<int64_t> last_done_ns_{0};
  LatencyHistogram latency_;

  // std::mutex rather than the annotated clickd::Mutex: we wait on a
  // condition variable.
  std::mutex mu_;
  std::condition_variable changed_;
  int64_t in_flight_ = 0;                       // guarded by mu_
  std::map<std::string, uint64_t> errors_;      // guarded by mu_
  std::map<std::string, std::string> example_;  // guarded by mu_
};

void LoadRun::StartCall(uint64_t index, int64_t start_ns, bool measured, bool closed) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++in_flight_;
  }
  auto* call = new Call;
  call->index = index;
  call->start_ns = start_ns;
  call->measured = measured;
  call->context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::nanoseconds(deadline_ns_));
  issuer_.Start(index, &call->context, [this, call, closed](const grpc::Status& status) {
    Record(*call, status);
    delete call;
    // Start the successor before counting this call out, so that the count
    // never touches zero while a slot is still running.
    if (closed) IssueNext();
    Finished();
  });
}

void LoadRun::Record(const Call& call, const grpc::Status& status) {
  const int64_t now = NowNanos();
  if (!call.measured) {
    warmup_done_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  latency_.Record(now - call.start_ns);
  int64_t last = last_done_ns_.load(std::memory_order_relaxed);
  while (now > last && !last_done_ns_.compare_exchange_weak(last, now)) {
  }
  if (status.ok()) {
    ok_.fetch_add(1, std::memory_order_relaxed);
    ok_units_.fetch_add(issuer_.Units(call.index), std::memory_order_relaxed);
    return;
  }
  const std::string code =
      absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code()));
  std::lock_guard<std::mutex> lock(mu_);
  if (errors_[code]++ == 0) example_[code] = status.error_message();
}

void LoadRun::IssueNext() {
  const int64_t now = NowNanos();
  if (now >= end_ns_) return;
  const bool measured = now >= warm_end_ns_;
  if (measured && measured_started_.fetch_add(1) >= options_.max_requests) return;
  StartCall(next_index_.fetch_add(1), now, measured, /*closed=*/true);
}

void LoadRun::Finished() {
  // Notify under the lock: once a waiter sees zero it may free the run.
  std::lock_guard<std::mutex> lock(mu_);
  --in_flight_;
  if (in_flight_ == 0 || in_flight_ == options_.max_in_flight - 1) changed_.notify_all();
}

bool LoadRun::WaitIdle(int64_t until_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_until(lock, Clock::time_point(std::chrono::nanoseconds(until_ns)),
                             [this] { return in_flight_ == 0; });
}

LoadResult LoadRun::RunClosed() {
  const int64_t start = NowNanos();
  warm_end_ns_ = start + absl::ToInt64Nanoseconds(options_.warmup);
  end_ns_ = warm_end_ns_ + absl::ToInt64Nanoseconds(options_.duration);
  for (int slot = 0; slot < options_.concurrency; ++slot) IssueNext();
  // Each slot stops by end_ns_, and every call ends by its deadline.
  const bool drained = WaitIdle(end_ns_ + deadline_ns_ + kDrainGraceNanos);
  LoadResult result = Result(warm_end_ns_);
  result.drained = drained;
  return result;
}

LoadResult LoadRun::RunOpen() {
  // Sleep to the due time within a microsecond, not the default 50 us slack.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  const OpenLoopSchedule schedule(options_.target_qps);
  const int64_t warmup = absl::ToInt64Nanoseconds(options_.warmup);
  const uint64_t first_measured = schedule.DueBefore(warmup);
  const uint64_t end =
      std::min(schedule.DueBefore(warmup + absl::ToInt64Nanoseconds(options_.duration)),
               first_measured + options_.max_requests);
  const int64_t start = NowNanos();
  const int64_t give_up = start + schedule.DueNanos(end) + deadline_ns_;
  int64_t max_lag = 0;
  int64_t last_lag = 0;
  uint64_t i = 0;
  for (; i < end; ++i) {
    const int64_t due = start + schedule.DueNanos(i);
    if (NowNanos() < due) SleepUntilNanos(due);
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait_until(lock, Clock::time_point(std::chrono::nanoseconds(give_up)),
                          [this] { return in_flight_ < options_.max_in_flight; });
    }
    const int64_t now = NowNanos();
    if (now >= give_up) break;
    const bool measured = i >= first_measured;
    if (measured) {
      last_lag = now - due;
      max_lag = std::max(max_lag, last_lag);
    }
    StartCall(i, due, measured, /*closed=*/false);
  }
  const bool drained = WaitIdle(give_up + deadline_ns_ + kDrainGraceNanos);
  LoadResult result = Result(start + schedule.DueNanos(first_measured));
  result.drained = drained;
  result.max_send_lag_us = static_cast<double>(max_lag) / 1e3;
  result.final_send_lag_us = static_cast<double>(last_lag) / 1e3;
  result.unsent = end - i;
  return result;
}

LoadResult LoadRun::Result(int64_t measure_start_ns) {
  LoadResult r;
  std::lock_guard<std::mutex> lock(mu_);  // orders every Record before the reads
  r.latency = latency_.Summarize();
  r.requests = r.latency.count;
  r.ok = ok_.load();
  r.ok_units = ok_units_.load();
  r.errors = errors_;
  r.error_examples = example_;
  r.warmup_requests = warmup_done_.load();
  if (r.requests > 0) {
    r.seconds = static_cast<double>(last_done_ns_.load() - measure_start_ns) / 1e9;
  }
  return r;
}

}  // namespace

double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

LoadResult RunLoad(CallIssuer& issuer, const LoadOptions& options) {
  auto* run = new LoadRun(issuer, options);
  const double cpu_before = ProcessCpuSeconds();
  LoadResult result = options.target_qps > 0 ? run->RunOpen() : run->RunClosed();
  result.cpu_seconds = ProcessCpuSeconds() - cpu_before;
  // Calls still in flight would touch a freed run: leak it instead.
  if (result.drained) delete run;
  return result;
}

}  // namespace clickd
