#include "core/persist/batch_codec.h"

#include "core/base/coding.h"

namespace clickd {
namespace {

using coding::Decoder;

// Sanity bounds: a corrupt count must not allocate gigabytes before the
// input runs out.
constexpr uint32_t kMaxCount = 1u << 24;
// Set in an example's namespace count when dense values follow its
// namespaces (records written before dense blocks never set it).
constexpr uint32_t kHasDense = 1u << 31;

void EncodeExample(const Example& e, std::string* out) {
  coding::PutFixed32(
      out, static_cast<uint32_t>(e.namespaces.size()) | (e.dense.empty() ? 0 : kHasDense));
  for (const Namespace& ns : e.namespaces) {
    coding::PutString(out, ns.name);
    coding::PutFixed32(out, static_cast<uint32_t>(ns.features.size()));
    for (const Feature& f : ns.features) {
      // kind: 0 name, 1 id, 2 key the client hashed (readers before keys
      // refuse 2 as corrupt rather than misread it).
      out->push_back(f.is_key ? 2 : f.has_id ? 1 : 0);
      if (f.has_id) {
        coding::PutFixed64(out, f.id);
      } else {
        coding::PutString(out, f.name);
      }
      coding::PutFloat(out, f.value);
    }
  }
  if (e.dense.empty()) return;
  // dense := count u32, (name string, value_count u32, f32*)*
  coding::PutFixed32(out, static_cast<uint32_t>(e.dense.size()));
  for (const DenseValues& d : e.dense) {
    coding::PutString(out, d.name);
    coding::PutFixed32(out, static_cast<uint32_t>(d.values.size()));
    for (float v : d.values) coding::PutFloat(out, v);
  }
}

bool DecodeDense(Decoder* in, Example* e) {
  uint32_t count = 0;
  if (!in->GetFixed32(&count) || count == 0 || count > in->remaining().size()) return false;
  e->dense.resize(count);
  for (DenseValues& d : e->dense) {
    uint32_t values = 0;
    if (!in->GetString(&d.name) || !in->GetFixed32(&values) ||
        values > in->remaining().size() / 4) {
      return false;
    }
    d.values.resize(values);
    for (float& v : d.values) {
      if (!in->GetFloat(&v)) return false;
    }
  }
  return true;
}

bool DecodeExample(Decoder* in, Example* e) {
  uint32_t namespaces = 0;
  if (!in->GetFixed32(&namespaces)) return false;
  const bool has_dense = (namespaces & kHasDense) != 0;
  namespaces &= ~kHasDense;
  if (namespaces > in->remaining().size()) return false;
  e->namespaces.resize(namespaces);
  for (Namespace& ns : e->namespaces) {
    uint32_t features = 0;
    if (!in->GetString(&ns.name) || !in->GetFixed32(&features) ||
        features > in->remaining().size()) {
      return false;
    }
    ns.features.resize(features);
    for (Feature& f : ns.features) {
      std::string_view kind;
      if (!in->GetBytes(1, &kind) || kind[0] < 0 || kind[0] > 2) return false;
      f.has_id = kind[0] != 0;
      f.is_key = kind[0] == 2;
      if (f.has_id ? !in->GetFixed64(&f.id) : !in->GetString(&f.name)) return false;
      if (!in->GetFloat(&f.value)) return false;
    }
  }
  return !has_dense || DecodeDense(in, e);
}

}  // namespace

// batch := group_count u32, group*
// group := has_context u8, [context example], count u32,
//          (example, label f32, importance f32)*
void EncodeBatch(absl::Span<const TrainingExample> batch, std::string* out) {
  std::vector<std::pair<size_t, size_t>> groups;  // [begin, end) sharing a context
  for (size_t i = 0; i < batch.size(); ++i) {
    if (groups.empty() || batch[i].context == nullptr ||
        batch[i].context != batch[groups.back().first].context) {
      groups.push_back({i, i + 1});
    } else {
      groups.back().second = i + 1;
    }
  }
  coding::PutFixed32(out, static_cast<uint32_t>(groups.size()));
  for (const auto& [begin, end] : groups) {
    const Example* context = batch[begin].context;
    out->push_back(context != nullptr ? 1 : 0);
    if (context != nullptr) EncodeExample(*context, out);
    coding::PutFixed32(out, static_cast<uint32_t>(end - begin));
    for (size_t i = begin; i < end; ++i) {
      EncodeExample(*batch[i].example, out);
      coding::PutFloat(out, batch[i].label);
      coding::PutFloat(out, batch[i].importance);
    }
  }
}

absl::StatusOr<DecodedBatch> DecodeBatch(std::string_view bytes) {
  Decoder in(bytes);
  DecodedBatch out;
  uint32_t groups = 0;
  auto corrupt = [] { return absl::DataLossError("update log record does not parse as a batch"); };
  if (!in.GetFixed32(&groups) || groups > kMaxCount) return corrupt();
  for (uint32_t g = 0; g < groups; ++g) {
    std::string_view has_context;
    if (!in.GetBytes(1, &has_context) || (has_context[0] != 0 && has_context[0] != 1)) {
      return corrupt();
    }
    const Example* context = nullptr;
    if (has_context[0] == 1) {
      Example& c = out.examples.emplace_back();
      if (!DecodeExample(&in, &c)) return corrupt();
      context = &c;
    }
    uint32_t count = 0;
    if (!in.GetFixed32(&count) || count > in.remaining().size()) return corrupt();
    // The encoder's grouping: one example per context-free group, and at
    // least one per impression. Anything else has another encoding.
    if (context == nullptr ? count != 1 : count == 0) return corrupt();
    for (uint32_t i = 0; i < count; ++i) {
      Example& e = out.examples.emplace_back();
      float label = 0, importance = 0;
      if (!DecodeExample(&in, &e) || !in.GetFloat(&label) || !in.GetFloat(&importance)) {
        return corrupt();
      }
      out.batch.push_back({context, &e, label, importance});
    }
  }
  if (!in.remaining().empty()) return corrupt();
  return out;
}

}  // namespace clickd
