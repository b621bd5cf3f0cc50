// The byte layout shared by every dense optimizer's SerializeState, and a
// strict reader for RestoreState. Layout (all integers little-endian):
//
//   state  := magic:fixed32 version:fixed32 kind:string dim:fixed32
//             aux:fixed32 rounds:fixed64 block* crc:fixed32
//   string := length:fixed32 bytes[length]
//   block  := rows:fixed32 cols:fixed32 double[rows * cols]  (column-major)
//   crc    := masked CRC32C (core/base/crc32c.h) of every byte before it
//
// `kind` names the optimizer and its form ("ada_fd_da"), `aux` is the shape
// parameter besides dim (tau for the sketches, 0 otherwise). Each optimizer
// writes a fixed list of blocks; the reader checks every shape against what
// the restoring optimizer expects, so bytes from another kind, dim or tau
// are refused rather than misread.
//
// Errors: DataLoss for bytes that are damaged (short, checksum, trailing
// bytes, non-finite values); InvalidArgument for intact bytes of another
// kind, dimension or tau. Pure; no shared state.
#ifndef CLICKD_CORE_OPTIM_DENSE_DENSE_STATE_CODEC_H_
#define CLICKD_CORE_OPTIM_DENSE_DENSE_STATE_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/coding.h"

namespace clickd::dense_state {

// Heap bytes held by a dense matrix or vector (for StateBytes).
template <typename Derived>
uint64_t HeapBytes(const Eigen::PlainObjectBase<Derived>& m) {
  return static_cast<uint64_t>(m.size()) * sizeof(typename Derived::Scalar);
}

class Writer {
 public:
  Writer(std::string_view kind, int dim, int aux, uint64_t rounds);

  void Put(const Eigen::MatrixXd& m) { PutBlock(m.rows(), m.cols(), m.data()); }
  void Put(const Eigen::VectorXd& v) { PutBlock(v.size(), 1, v.data()); }

  // Appends the checksum and returns the bytes.
  std::string Finish() &&;

 private:
  void PutBlock(Eigen::Index rows, Eigen::Index cols, const double* data);

  std::string out_;
};

class Reader {
 public:
  // Checks the checksum and the header against the restoring optimizer's
  // kind, dim and aux. The reader views `bytes`, which must outlive it.
  static absl::StatusOr<Reader> Open(std::string_view bytes, std::string_view kind, int dim,
                                     int aux);

  uint64_t rounds() const { return rounds_; }

  // Reads the next block, which must be rows x cols; `name` is for errors.
  absl::StatusOr<Eigen::MatrixXd> Matrix(std::string_view name, int rows, int cols);
  absl::StatusOr<Eigen::VectorXd> Vector(std::string_view name, int size);

  // DataLoss unless every block has been read.
  absl::Status Finish() const;

 private:
  Reader(std::string_view body, std::string_view kind, uint64_t rounds)
      : decoder_(body), kind_(kind), rounds_(rounds) {}

  absl::Status ReadBlock(std::string_view name, int rows, int cols, double* out);

  coding::Decoder decoder_;
  std::string kind_;
  uint64_t rounds_;
};

}  // namespace clickd::dense_state

#endif  // CLICKD_CORE_OPTIM_DENSE_DENSE_STATE_CODEC_H_
