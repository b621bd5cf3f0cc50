// Little-endian fixed-width encoding for the on-disk formats, and a
// bounds-checked decoder that never reads past its input (the readers are
// fuzzed). Header-only, pure.
#ifndef CLICKD_CORE_BASE_CODING_H_
#define CLICKD_CORE_BASE_CODING_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace clickd::coding {

inline void PutFixed32(std::string* out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 4);
}

inline void PutFixed64(std::string* out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 8);
}

inline void PutDouble(std::string* out, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  PutFixed64(out, bits);
}

inline void PutFloat(std::string* out, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  PutFixed32(out, bits);
}

inline void PutString(std::string* out, std::string_view s) {
  PutFixed32(out, static_cast<uint32_t>(s.size()));
  out->append(s.data(), s.size());
}

// Reads from a byte range; every Get returns false (and consumes nothing
// more) once the input runs short.
class Decoder {
 public:
  explicit Decoder(std::string_view in) : in_(in) {}

  bool GetFixed32(uint32_t* v) {
    if (in_.size() < 4) return Fail();
    *v = 0;
    for (int i = 0; i < 4; ++i) *v |= uint32_t{static_cast<unsigned char>(in_[i])} << (8 * i);
    in_.remove_prefix(4);
    return true;
  }
  bool GetFixed64(uint64_t* v) {
    if (in_.size() < 8) return Fail();
    *v = 0;
    for (int i = 0; i < 8; ++i) *v |= uint64_t{static_cast<unsigned char>(in_[i])} << (8 * i);
    in_.remove_prefix(8);
    return true;
  }
  bool GetDouble(double* v) {
    uint64_t bits;
    if (!GetFixed64(&bits)) return false;
    std::memcpy(v, &bits, 8);
    return true;
  }
  bool GetFloat(float* v) {
    uint32_t bits;
    if (!GetFixed32(&bits)) return false;
    std::memcpy(v, &bits, 4);
    return true;
  }
  bool GetBytes(size_t n, std::string_view* v) {
    if (in_.size() < n) return Fail();
    *v = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  bool GetString(std::string* v) {
    uint32_t n;
    std::string_view bytes;
    if (!GetFixed32(&n) || !GetBytes(n, &bytes)) return Fail();
    v->assign(bytes.data(), bytes.size());
    return true;
  }

  std::string_view remaining() const { return in_; }
  bool ok() const { return ok_; }

 private:
  bool Fail() {
    ok_ = false;
    return false;
  }
  std::string_view in_;
  bool ok_ = true;
};

}  // namespace clickd::coding

#endif  // CLICKD_CORE_BASE_CODING_H_
