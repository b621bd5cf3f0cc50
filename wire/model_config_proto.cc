#include "wire/model_config_proto.h"

#include <string>

namespace clickd {

v1::ModelConfig ModelConfigToProto(const ModelConfig& c) {
  v1::ModelConfig p;
  p.set_name(c.name);
  p.set_optimizer(OptimizerName(c));
  p.set_loss(std::string(LossTypeName(c.loss)));
  const OptimizerConfig& o = c.optimizer;
  switch (o.type) {
    case OptimizerType::kFtrl: {
      v1::FtrlParams* f = p.mutable_ftrl();
      f->set_alpha(o.ftrl.alpha);
      f->set_beta(o.ftrl.beta);
      f->set_lambda1(o.ftrl.lambda1);
      f->set_lambda2(o.ftrl.lambda2);
      f->set_lambda1_times_t(o.ftrl.lambda1_times_t);
      break;
    }
    case OptimizerType::kAdagrad:
    case OptimizerType::kAdagradDa: {
      v1::AdagradParams* a = p.mutable_adagrad();
      a->set_eta(o.adagrad.eta);
      a->set_delta(o.adagrad.delta);
      a->set_lambda(o.adagrad.lambda);
      break;
    }
    case OptimizerType::kPcOgd:
      p.mutable_pc_ogd()->set_radius(o.pc_ogd.radius);
      p.mutable_pc_ogd()->set_scale(o.pc_ogd.scale);
      break;
    case OptimizerType::kGlobalOgd:
      p.mutable_global_ogd()->set_radius(o.global_ogd.radius);
      p.mutable_global_ogd()->set_scale(o.global_ogd.scale);
      break;
    case OptimizerType::kSgd:
      p.mutable_sgd()->set_eta(o.sgd.eta);
      break;
    case OptimizerType::kPa:
      p.mutable_pa()->set_c(o.pa.c);
      break;
    case OptimizerType::kCw:
      p.mutable_cw()->set_eta(o.cw.eta);
      p.mutable_cw()->set_a(o.cw.a);
      break;
    case OptimizerType::kMetaGradDiag:
      p.mutable_metagrad_diag()->set_diameter(o.metagrad_diag.diameter);
      p.mutable_metagrad_diag()->set_gradient_bound(o.metagrad_diag.gradient_bound);
      break;
    case OptimizerType::kDense:  // the dense learner's parameters, below
      break;
  }
  v1::HashingConfig* h = p.mutable_hashing();
  h->set_seed(c.hashing.seed);
  h->set_bits(static_cast<uint32_t>(c.hashing.bits));
  h->set_bias(c.hashing.bias);
  for (const std::vector<std::string>& names : c.hashing.interactions) {
    v1::Interaction* i = h->add_interactions();
    for (const std::string& n : names) i->add_namespaces(n);
  }
  p.set_num_shards(static_cast<uint32_t>(c.num_shards));
  if (!c.dense_namespaces.empty() || c.optimizer.type == OptimizerType::kDense) {
    for (const DenseNamespace& ns : c.dense_namespaces) {
      auto* out = p.add_dense_namespaces();
      out->set_name(ns.name);
      out->set_dim(ns.dim);
    }
    const DenseOptimizerConfig& d = c.dense_optimizer;
    p.set_dense_optimizer(std::string(DenseOptimizerTypeName(d.type)));
    v1::DenseOptimizerParams* dp = p.mutable_dense();
    dp->set_eta(d.eta);
    dp->set_delta(d.delta);
    dp->set_tau(d.tau);
    dp->set_weight_power(d.weight_power);
    dp->set_diameter(d.diameter);
    dp->set_gradient_bound(d.gradient_bound);
  }
  return p;
}

v1::ProgressiveMetrics MetricsToProto(const MetricsSummary& m) {
  v1::ProgressiveMetrics p;
  p.set_examples(m.examples);
  p.set_weight(m.weight);
  p.set_loss(m.loss);
  p.set_logloss(m.logloss);
  p.set_auc(m.auc);
  p.set_hinge(m.hinge);
  p.set_mistakes(m.mistakes);
  p.set_calibration(m.calibration);
  p.set_squared(m.squared);
  p.set_auc_error_bound(m.auc_error_bound);
  return p;
}

}  // namespace clickd
