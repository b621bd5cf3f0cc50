#include "core/model/dense_block.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/optim/numeric_bounds.h"

namespace clickd {

absl::Status ValidateDenseNamespaces(const std::vector<DenseNamespace>& namespaces) {
  if (namespaces.size() > kMaxDenseNamespaces) {
    return absl::InvalidArgumentError(absl::StrCat("dense_namespaces has ", namespaces.size(),
                                                   " entries; the limit is ", kMaxDenseNamespaces));
  }
  absl::flat_hash_set<std::string> seen;
  int64_t total = 0;
  for (size_t i = 0; i < namespaces.size(); ++i) {
    const DenseNamespace& ns = namespaces[i];
    const std::string field = absl::StrCat("dense_namespaces[", i, "]");
    if (absl::Status s = ValidateModelName(ns.name, field + ".name"); !s.ok()) return s;
    if (!seen.insert(ns.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".name \"", ns.name, "\" is declared twice"));
    }
    if (ns.dim < 1 || ns.dim > kMaxDenseDim) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".dim is ", ns.dim, "; must be in 1..", kMaxDenseDim));
    }
    total += ns.dim;
  }
  if (total > kMaxDenseDim) {
    return absl::InvalidArgumentError(absl::StrCat("dense_namespaces add up to ", total,
                                                   " dimensions; the limit is ", kMaxDenseDim));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DenseBlock>> DenseBlock::Create(
    const std::vector<DenseNamespace>& namespaces, const DenseOptimizerConfig& optimizer,
    int sparse_slots) {
  if (absl::Status s = ValidateDenseNamespaces(namespaces); !s.ok()) return s;
  int dim = sparse_slots;
  for (const DenseNamespace& ns : namespaces) dim += ns.dim;
  auto learner = NewDenseOptimizer(optimizer, dim);
  if (!learner.ok()) return learner.status();
  return std::unique_ptr<DenseBlock>(new DenseBlock(namespaces, sparse_slots, *std::move(learner)));
}

DenseBlock::DenseBlock(const std::vector<DenseNamespace>& namespaces, int sparse_slots,
                       std::unique_ptr<DenseOptimizer> learner)
    : sparse_slots_(sparse_slots), dim_(sparse_slots), learner_(std::move(learner)) {
  for (const DenseNamespace& ns : namespaces) {
    slots_[ns.name] = {dim_, ns.dim};
    dim_ += ns.dim;
  }
}

absl::Status DenseBlock::Check(const Example* context, std::string_view context_field,
                               const Example& example, std::string_view field) const {
  absl::flat_hash_set<std::string_view> given;
  auto check = [&](const Example& e, const std::string& prefix) -> absl::Status {
    for (size_t i = 0; i < e.dense.size(); ++i) {
      const DenseValues& d = e.dense[i];
      const std::string at = absl::StrCat(prefix, ".dense[", i, "]");
      auto slot = slots_.find(d.name);
      if (slot == slots_.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(at, ".namespace \"", d.name, "\" is not a dense namespace of this model"));
      }
      if (static_cast<int>(d.values.size()) != slot->second.dim) {
        return absl::InvalidArgumentError(absl::StrCat(at, ".values has ", d.values.size(),
                                                       " entries; dense namespace \"", d.name,
                                                       "\" has dimension ", slot->second.dim));
      }
      for (size_t j = 0; j < d.values.size(); ++j) {
        if (absl::Status s = CheckDenseValue(d.values[j], absl::StrCat(at, ".values[", j, "]"));
            !s.ok()) {
          return s;
        }
      }
      if (!given.insert(d.name).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(at, ".namespace \"", d.name, "\" is given twice"));
      }
    }
    return absl::OkStatus();
  };
  if (context != nullptr) {
    if (absl::Status s = check(*context, std::string(context_field)); !s.ok()) return s;
  }
  return check(example, std::string(field));
}

void DenseBlock::Place(const Example& example, Eigen::VectorXd* x) const {
  for (const DenseValues& d : example.dense) {
    auto slot = slots_.find(d.name);
    if (slot == slots_.end()) continue;  // Check() refuses these first
    for (int j = 0; j < slot->second.dim && j < static_cast<int>(d.values.size()); ++j) {
      (*x)[slot->second.offset + j] = d.values[j];
    }
  }
}

bool DenseBlock::Assemble(const Example* context, const Example& example,
                          Eigen::VectorXd* x) const {
  const bool any = !example.dense.empty() || (context != nullptr && !context->dense.empty());
  if (!any) return false;
  x->setZero(dim_);
  if (context != nullptr) Place(*context, x);
  Place(example, x);
  return true;
}

double DenseBlock::SparseMargin(absl::Span<const HashedFeature> features) const {
  ReaderMutexLock lock(&mu_);
  const Eigen::VectorXd& w = learner_->weights();
  double margin = 0;
  for (const HashedFeature& f : features) {
    if (f.key < static_cast<uint64_t>(sparse_slots_)) margin += w[f.key] * f.value;
  }
  return margin;
}

void DenseBlock::PlaceSparse(absl::Span<const HashedFeature> features, Eigen::VectorXd* x) const {
  for (const HashedFeature& f : features) {
    if (f.key < static_cast<uint64_t>(sparse_slots_)) (*x)[f.key] += f.value;
  }
}

double DenseBlock::MarginOf(const Example& example) const {
  if (example.dense.empty()) return 0;
  ReaderMutexLock lock(&mu_);
  const Eigen::VectorXd& w = learner_->weights();
  double margin = 0;
  for (const DenseValues& d : example.dense) {
    auto slot = slots_.find(d.name);
    if (slot == slots_.end()) continue;  // Check() refuses these first
    const int n = std::min<int>(slot->second.dim, static_cast<int>(d.values.size()));
    for (int j = 0; j < n; ++j) margin += w[slot->second.offset + j] * d.values[j];
  }
  return margin;
}

double DenseBlock::Margin(const Eigen::VectorXd& x) const {
  ReaderMutexLock lock(&mu_);
  return learner_->weights().dot(x);
}

void DenseBlock::Update(const Eigen::VectorXd& x, double dloss) {
  MutexLock lock(&mu_);
  learner_->Update(dloss * x);
}

std::string DenseBlock::SerializeState() const {
  ReaderMutexLock lock(&mu_);
  return learner_->SerializeState();
}

absl::Status DenseBlock::RestoreState(std::string_view bytes) {
  MutexLock lock(&mu_);
  return learner_->RestoreState(bytes);
}

uint64_t DenseBlock::StateBytes() const {
  ReaderMutexLock lock(&mu_);
  return learner_->StateBytes();
}

}  // namespace clickd
