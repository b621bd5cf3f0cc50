// RawHttp2Connection: a minimal HTTP/2 client over a plain TCP socket, for
// tests that act as a hostile gRPC caller (issue 33): it opens streams with
// literal (unindexed, unhuffman'd) HPACK headers and sends a gRPC message
// prefix followed by as many DATA bytes as the server's flow-control windows
// allow, without ever finishing the message. It answers SETTINGS and PING,
// follows WINDOW_UPDATE, and notes streams the server ends (HEADERS with
// END_STREAM, or RST_STREAM). It does not decode the server's headers.
//
// Thread safety: externally synchronized.
#ifndef CLICKD_TESTS_RAW_HTTP2_H_
#define CLICKD_TESTS_RAW_HTTP2_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace clickd::testing {

class RawHttp2Connection {
 public:
  // Connects to 127.0.0.1:port and sends the preface and empty SETTINGS;
  // ok() is false if that failed.
  explicit RawHttp2Connection(int port);
  ~RawHttp2Connection();
  RawHttp2Connection(const RawHttp2Connection&) = delete;
  RawHttp2Connection& operator=(const RawHttp2Connection&) = delete;

  bool ok() const { return fd_ >= 0 && !goaway_; }

  // Opens a stream calling `path` with `headers` besides the gRPC ones and
  // announces a message of `message_bytes`; returns the stream's id.
  uint32_t StartCall(const std::string& path,
                     const std::vector<std::pair<std::string, std::string>>& headers,
                     uint32_t message_bytes);

  // For up to `duration`, or until the server ended every stream: reads the server's frames, and
  // sends each open stream's message bytes while the windows allow, never the last byte.
  void Pump(std::chrono::milliseconds duration);

  // Message bytes sent on `stream` (after the 5-byte prefix).
  uint64_t sent(uint32_t stream) const;
  // Streams the server has ended.
  size_t ended() const;

 private:
  struct Stream {
    uint32_t message_bytes = 0;
    uint64_t sent = 0;
    int64_t window = 0;
    bool ended = false;
  };
  bool Write(const std::string& bytes);
  void WriteFrame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload);
  // Reads and handles the frames available now; false when nothing was.
  bool ReadFrames();
  void Handle(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload);
  // Sends what the windows allow; false when nothing could be sent.
  bool SendData();

  int fd_ = -1;
  bool goaway_ = false;
  uint32_t next_stream_ = 1;
  int64_t connection_window_ = 65535;
  int64_t initial_window_ = 65535;
  std::string input_;
  std::map<uint32_t, Stream> streams_;
};

}  // namespace clickd::testing

#endif  // CLICKD_TESTS_RAW_HTTP2_H_
