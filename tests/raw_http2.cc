#include "tests/raw_http2.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace clickd::testing {
namespace {

constexpr uint8_t kData = 0x0, kHeaders = 0x1, kRstStream = 0x3, kSettings = 0x4, kPing = 0x6,
                  kGoaway = 0x7, kWindowUpdate = 0x8;
constexpr uint8_t kEndStream = 0x1, kAck = 0x1, kEndHeaders = 0x4;
constexpr size_t kMaxFrame = 16384;
constexpr uint32_t kSettingsInitialWindowSize = 0x4;

uint32_t Read32(const std::string& s, size_t at) {
  return (uint32_t{static_cast<uint8_t>(s[at])} << 24) |
         (uint32_t{static_cast<uint8_t>(s[at + 1])} << 16) |
         (uint32_t{static_cast<uint8_t>(s[at + 2])} << 8) |
         uint32_t{static_cast<uint8_t>(s[at + 3])};
}

void Append32(std::string* s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s->push_back(static_cast<char>((v >> shift) & 0xff));
}

// An HPACK string literal (no Huffman), length with a 7-bit prefix.
void AppendString(std::string* s, const std::string& value) {
  size_t length = value.size();
  if (length < 127) {
    s->push_back(static_cast<char>(length));
  } else {
    s->push_back(static_cast<char>(127));
    length -= 127;
    while (length >= 128) {
      s->push_back(static_cast<char>((length % 128) | 128));
      length /= 128;
    }
    s->push_back(static_cast<char>(length));
  }
  s->append(value);
}

}  // namespace

RawHttp2Connection::RawHttp2Connection(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  fd_ = fd;
  Write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  WriteFrame(kSettings, 0, 0, "");
}

RawHttp2Connection::~RawHttp2Connection() {
  if (fd_ >= 0) close(fd_);
}

bool RawHttp2Connection::Write(const std::string& bytes) {
  size_t done = 0;
  // Bounded: a full socket buffer is waited for at most ~5 s in all.
  for (int i = 0; i < 5000 && done < bytes.size() && fd_ >= 0; ++i) {
    const ssize_t n = send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      poll(&p, 1, 1);
    } else {
      goaway_ = true;
      return false;
    }
  }
  return done == bytes.size();
}

void RawHttp2Connection::WriteFrame(uint8_t type, uint8_t flags, uint32_t stream,
                                    const std::string& payload) {
  std::string frame;
  const uint32_t length = static_cast<uint32_t>(payload.size());
  frame.push_back(static_cast<char>((length >> 16) & 0xff));
  frame.push_back(static_cast<char>((length >> 8) & 0xff));
  frame.push_back(static_cast<char>(length & 0xff));
  frame.push_back(static_cast<char>(type));
  frame.push_back(static_cast<char>(flags));
  Append32(&frame, stream & 0x7fffffff);
  frame += payload;
  Write(frame);
}

uint32_t RawHttp2Connection::StartCall(
    const std::string& path, const std::vector<std::pair<std::string, std::string>>& headers,
    uint32_t message_bytes) {
  const uint32_t id = next_stream_;
  next_stream_ += 2;
  std::vector<std::pair<std::string, std::string>> all = {{":method", "POST"},
                                                          {":scheme", "http"},
                                                          {":path", path},
                                                          {":authority", "x"},
                                                          {"content-type", "application/grpc"},
                                                          {"te", "trailers"}};
  all.insert(all.end(), headers.begin(), headers.end());
  std::string block;
  for (const auto& [name, value] : all) {
    block.push_back(0);  // literal without indexing, new name
    AppendString(&block, name);
    AppendString(&block, value);
  }
  WriteFrame(kHeaders, kEndHeaders, id, block);
  Stream& stream = streams_[id];
  stream.message_bytes = message_bytes;
  stream.window = initial_window_;
  std::string prefix(1, '\0');
  Append32(&prefix, message_bytes);
  stream.window -= 5;
  connection_window_ -= 5;
  WriteFrame(kData, 0, id, prefix);
  return id;
}

bool RawHttp2Connection::ReadFrames() {
  char buffer[65536];
  bool any = false;
  for (int i = 0; i < 64; ++i) {
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
    if (n <= 0) {
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) goaway_ = true;
      break;
    }
    input_.append(buffer, static_cast<size_t>(n));
    any = true;
  }
  while (input_.size() >= 9) {
    const size_t length = (size_t{static_cast<uint8_t>(input_[0])} << 16) |
                          (size_t{static_cast<uint8_t>(input_[1])} << 8) |
                          size_t{static_cast<uint8_t>(input_[2])};
    if (input_.size() < 9 + length) break;
    const uint8_t type = static_cast<uint8_t>(input_[3]);
    const uint8_t flags = static_cast<uint8_t>(input_[4]);
    const uint32_t stream = Read32(input_, 5) & 0x7fffffff;
    Handle(type, flags, stream, input_.substr(9, length));
    input_.erase(0, 9 + length);
  }
  return any;
}

void RawHttp2Connection::Handle(uint8_t type, uint8_t flags, uint32_t stream,
                                const std::string& payload) {
  auto it = streams_.find(stream);
  switch (type) {
    case kSettings:
      if ((flags & kAck) != 0) return;
      for (size_t at = 0; at + 6 <= payload.size(); at += 6) {
        const uint32_t id = (uint32_t{static_cast<uint8_t>(payload[at])} << 8) |
                            uint32_t{static_cast<uint8_t>(payload[at + 1])};
        if (id != kSettingsInitialWindowSize) continue;
        const int64_t value = Read32(payload, at + 2);
        for (auto& [unused, s] : streams_) s.window += value - initial_window_;
        initial_window_ = value;
      }
      WriteFrame(kSettings, kAck, 0, "");
      return;
    case kPing:
      if ((flags & kAck) == 0) WriteFrame(kPing, kAck, 0, payload);
      return;
    case kWindowUpdate:
      if (payload.size() < 4) return;
      if (stream == 0) {
        connection_window_ += Read32(payload, 0) & 0x7fffffff;
      } else if (it != streams_.end()) {
        it->second.window += Read32(payload, 0) & 0x7fffffff;
      }
      return;
    case kHeaders:
      if (it != streams_.end() && (flags & kEndStream) != 0) it->second.ended = true;
      return;
    case kRstStream:
      if (it != streams_.end()) it->second.ended = true;
      return;
    case kGoaway:
      goaway_ = true;
      return;
    default:
      return;
  }
}

bool RawHttp2Connection::SendData() {
  bool any = false;
  for (auto& [id, stream] : streams_) {
    if (stream.ended) continue;
    const uint64_t left = stream.message_bytes - 1 - stream.sent;  // never the last byte
    const int64_t allowed = std::min(connection_window_, stream.window);
    const size_t n = static_cast<size_t>(
        std::min<int64_t>({static_cast<int64_t>(left), allowed, static_cast<int64_t>(kMaxFrame)}));
    if (n == 0) continue;
    WriteFrame(kData, 0, id, std::string(n, 'x'));
    stream.sent += n;
    stream.window -= static_cast<int64_t>(n);
    connection_window_ -= static_cast<int64_t>(n);
    any = true;
  }
  return any;
}

void RawHttp2Connection::Pump(std::chrono::milliseconds duration) {
  const auto end = std::chrono::steady_clock::now() + duration;
  while (ok() && ended() < streams_.size() && std::chrono::steady_clock::now() < end) {
    const bool read = ReadFrames();
    const bool sent = SendData();
    if (!read && !sent) {
      pollfd p{fd_, POLLIN, 0};
      poll(&p, 1, 10);
    }
  }
}

uint64_t RawHttp2Connection::sent(uint32_t stream) const {
  auto it = streams_.find(stream);
  return it == streams_.end() ? 0 : it->second.sent;
}

size_t RawHttp2Connection::ended() const {
  return static_cast<size_t>(std::count_if(streams_.begin(), streams_.end(),
                                           [](const auto& entry) { return entry.second.ended; }));
}

}  // namespace clickd::testing
