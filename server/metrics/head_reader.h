// HeadReader: accepts the metrics port's connections and reads each one's
// request head (the request line and the headers, up to the blank line)
// on one thread with poll(2), so that a connection costs a descriptor and
// a small buffer, not a thread, until its request is complete. Only then
// is it handed on (to HttpExporter's threads, which run cpp-httplib on it).
//
// cpp-httplib 0.11.4 serves a connection per thread from accept on, reads
// a header line of up to 8 KB and any number of lines (100,000 lines held
// 793 MB), and restarts its read timeout at every byte: a client that
// trickles a byte a second holds a thread for ever, and 256 of them took
// every thread (issue 33, N11). Here a head is bounded in bytes and lines
// and must be complete within a time from accept; a connection that breaks
// a bound gets 431 or 408 and is closed. Replies to refused connections
// are written once and their sockets drained briefly (lingering close), so
// that the client reads the reply instead of a reset.
//
// Thread safety: Start and Stop are externally synchronized; `ready` runs
// on the reader's thread and must not block.
#ifndef CLICKD_SERVER_METRICS_HEAD_READER_H_
#define CLICKD_SERVER_METRICS_HEAD_READER_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

namespace clickd::metrics {

struct HeadLimits {
  // The request line and headers with their line ends, blank line included.
  size_t max_head_bytes = 16 << 10;
  // Header lines, the request line not counted.
  int max_header_lines = 100;
  // From accept to the blank line.
  std::chrono::milliseconds head_timeout{5000};
  // Connections still reading their head (or lingering after a refusal);
  // beyond it the oldest is closed.
  size_t max_connections = 1024;
};

class HeadReader {
 public:
  // What to do with a connection whose head is complete: `fd` (non-blocking;
  // the callee owns it) and the bytes read so far (the head, perhaps the
  // start of a body). Returns an HTTP status line's code and reason to
  // refuse it with instead ("503 Service Unavailable"), or "" if it took it.
  using Ready = std::function<std::string(int fd, std::string bytes)>;

  // Serves `listen_fd` (listening; the reader closes it at Stop).
  HeadReader(int listen_fd, HeadLimits limits, Ready ready);
  ~HeadReader();
  HeadReader(const HeadReader&) = delete;
  HeadReader& operator=(const HeadReader&) = delete;

  // Starts the reader's thread; false (errno set) if its wake-up pipe
  // cannot be made.
  bool Start();
  // Stops accepting, closes every connection it holds and the listening
  // socket, and joins the thread. Idempotent.
  void Stop();

 private:
  using Clock = std::chrono::steady_clock;
  struct Connection;
  void Loop();
  // Reads what `c` has sent; refuses it, hands it on or closes it as due.
  void Read(Connection* c, Clock::time_point now);
  static void Close(Connection* c);
  // Answers `status` ("431 Request Header Fields Too Large") and drains the
  // connection until the client closes or a second passes.
  static void Refuse(Connection* c, std::string_view status, Clock::time_point now);

  const int listen_fd_;
  const HeadLimits limits_;
  const Ready ready_;
  int wake_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_HEAD_READER_H_
