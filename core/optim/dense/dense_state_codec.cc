#include "core/optim/dense/dense_state_codec.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/crc32c.h"

namespace clickd::dense_state {
namespace {

constexpr uint32_t kMagic = 0x534f4443;  // "CDOS" read as little-endian bytes
constexpr uint32_t kVersion = 1;

}  // namespace

Writer::Writer(std::string_view kind, int dim, int aux, uint64_t rounds) {
  coding::PutFixed32(&out_, kMagic);
  coding::PutFixed32(&out_, kVersion);
  coding::PutString(&out_, kind);
  coding::PutFixed32(&out_, static_cast<uint32_t>(dim));
  coding::PutFixed32(&out_, static_cast<uint32_t>(aux));
  coding::PutFixed64(&out_, rounds);
}

void Writer::PutBlock(Eigen::Index rows, Eigen::Index cols, const double* data) {
  coding::PutFixed32(&out_, static_cast<uint32_t>(rows));
  coding::PutFixed32(&out_, static_cast<uint32_t>(cols));
  for (Eigen::Index i = 0; i < rows * cols; ++i) coding::PutDouble(&out_, data[i]);
}

std::string Writer::Finish() && {
  crc32c::Seal(&out_);
  return std::move(out_);
}

absl::StatusOr<Reader> Reader::Open(std::string_view bytes, std::string_view kind, int dim,
                                    int aux) {
  const std::string want = absl::StrCat(std::string(kind), " state");
  if (bytes.size() < 4) {
    return absl::DataLossError(absl::StrCat(want, ": ", bytes.size(), " bytes is too short"));
  }
  std::string_view body;
  if (!crc32c::Unseal(bytes, &body)) {
    return absl::DataLossError(absl::StrCat(want, ": checksum mismatch"));
  }
  coding::Decoder d(body);
  uint32_t magic = 0, version = 0, got_dim = 0, got_aux = 0;
  uint64_t rounds = 0;
  std::string got_kind;
  if (!d.GetFixed32(&magic) || magic != kMagic) {
    return absl::InvalidArgumentError(absl::StrCat(want, ": not a dense optimizer state"));
  }
  if (!d.GetFixed32(&version) || version != kVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat(want, ": version ", version, " is unsupported (expected ", kVersion, ")"));
  }
  if (!d.GetString(&got_kind) || !d.GetFixed32(&got_dim) || !d.GetFixed32(&got_aux) ||
      !d.GetFixed64(&rounds)) {
    return absl::DataLossError(absl::StrCat(want, ": header is truncated"));
  }
  if (got_kind != kind) {
    return absl::InvalidArgumentError(absl::StrCat(want, ": bytes are a \"", got_kind,
                                                   "\" state, not \"", std::string(kind), "\""));
  }
  if (got_dim != static_cast<uint32_t>(dim)) {
    return absl::InvalidArgumentError(
        absl::StrCat(want, ": dim is ", got_dim, " in the bytes, ", dim, " here"));
  }
  if (got_aux != static_cast<uint32_t>(aux)) {
    return absl::InvalidArgumentError(
        absl::StrCat(want, ": tau is ", got_aux, " in the bytes, ", aux, " here"));
  }
  return Reader(d.remaining(), kind, rounds);
}

absl::Status Reader::ReadBlock(std::string_view name, int rows, int cols, double* out) {
  uint32_t got_rows = 0, got_cols = 0;
  if (!decoder_.GetFixed32(&got_rows) || !decoder_.GetFixed32(&got_cols)) {
    return absl::DataLossError(absl::StrCat(kind_, " state: ", std::string(name), " is missing"));
  }
  if (got_rows != static_cast<uint32_t>(rows) || got_cols != static_cast<uint32_t>(cols)) {
    return absl::DataLossError(absl::StrCat(kind_, " state: ", std::string(name), " is ", got_rows,
                                            "x", got_cols, ", expected ", rows, "x", cols));
  }
  const int64_t n = int64_t{rows} * cols;
  for (int64_t i = 0; i < n; ++i) {
    if (!decoder_.GetDouble(&out[i])) {
      return absl::DataLossError(
          absl::StrCat(kind_, " state: ", std::string(name), " is truncated"));
    }
    if (!std::isfinite(out[i])) {
      return absl::DataLossError(
          absl::StrCat(kind_, " state: ", std::string(name), " has a non-finite value at ", i));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Eigen::MatrixXd> Reader::Matrix(std::string_view name, int rows, int cols) {
  Eigen::MatrixXd m(rows, cols);
  absl::Status s = ReadBlock(name, rows, cols, m.data());
  if (!s.ok()) return s;
  return m;
}

absl::StatusOr<Eigen::VectorXd> Reader::Vector(std::string_view name, int size) {
  Eigen::VectorXd v(size);
  absl::Status s = ReadBlock(name, size, 1, v.data());
  if (!s.ok()) return s;
  return v;
}

absl::Status Reader::Finish() const {
  if (!decoder_.remaining().empty()) {
    return absl::DataLossError(
        absl::StrCat(kind_, " state: ", decoder_.remaining().size(), " unexpected trailing bytes"));
  }
  return absl::OkStatus();
}

}  // namespace clickd::dense_state
