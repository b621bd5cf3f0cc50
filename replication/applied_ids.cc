#include "replication/applied_ids.h"

#include "absl/strings/str_cat.h"
#include "core/base/coding.h"

namespace clickd {

std::optional<uint64_t> AppliedIds::Seen(std::string_view id, int64_t unix_nanos) {
  Expire(unix_nanos);
  auto it = by_id_.find(std::string(id));
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

void AppliedIds::Add(std::string_view id, uint64_t sequence, int64_t unix_nanos) {
  if (id.empty()) return;
  Expire(unix_nanos);
  if (!by_id_.try_emplace(std::string(id), sequence).second) return;
  order_.push_back({std::string(id), sequence, unix_nanos});
}

void AppliedIds::Expire(int64_t unix_nanos) {
  const int64_t oldest = unix_nanos - static_cast<int64_t>(window_.count());
  while (!order_.empty() && order_.front().unix_nanos < oldest) {
    by_id_.erase(order_.front().id);
    order_.pop_front();
  }
}

std::string AppliedIds::Encode() const {
  std::string out;
  coding::PutFixed32(&out, static_cast<uint32_t>(order_.size()));
  for (const Entry& e : order_) {
    coding::PutFixed64(&out, e.sequence);
    coding::PutFixed64(&out, static_cast<uint64_t>(e.unix_nanos));
    coding::PutString(&out, e.id);
  }
  return out;
}

absl::StatusOr<AppliedIds> AppliedIds::Decode(std::string_view bytes,
                                              std::chrono::nanoseconds window) {
  AppliedIds out(window);
  coding::Decoder in(bytes);
  uint32_t count = 0;
  // 20 bytes at least per id: a count beyond that is damage, not memory to
  // reserve.
  if (!in.GetFixed32(&count) || count > in.remaining().size() / 20) {
    return absl::DataLossError("applied message ids: count truncated or too large");
  }
  for (uint32_t i = 0; i < count; ++i) {
    Entry e;
    uint64_t nanos = 0;
    if (!in.GetFixed64(&e.sequence) || !in.GetFixed64(&nanos) || !in.GetString(&e.id) ||
        e.id.empty()) {
      return absl::DataLossError(absl::StrCat("applied message ids: id ", i, " is truncated"));
    }
    e.unix_nanos = static_cast<int64_t>(nanos);
    if (!out.by_id_.try_emplace(e.id, e.sequence).second) {
      return absl::DataLossError(absl::StrCat("applied message ids: \"", e.id, "\" repeats"));
    }
    out.order_.push_back(std::move(e));
  }
  if (!in.remaining().empty()) return absl::DataLossError("applied message ids: trailing bytes");
  return out;
}

}  // namespace clickd
