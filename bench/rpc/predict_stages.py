"""Per-call instructions by stage from predict_stages.sh's (and
update_stages.sh's) callgrind dumps: cases named update_* use the Update
stages, the others the Predict stages.

Usage: predict_stages.py INDEX (lines: case calls dump-path).
Each stage is the inclusive cost of the functions matching its pattern,
summed, divided by the case's calls.
"""
import re
import subprocess
import sys

# (stage, pattern on callgrind_annotate's inclusive lines). The Example
# path (before issue 12) and the hashed path (after) have different
# functions; a build lacks one set and prints 0 for it.
STAGES = [
    ("parse the request (protobuf, onto the call's arena)", r"clickd::ParseRequest\("),
    ("  of which protobuf's UTF-8 check of strings", r"google::protobuf::internal::VerifyUTF8\("),
    # Named ScoresInline before issue 34's one plan per call, PlacePredict after.
    ("place the call (ScoresInline / PlacePredict)", r"ClickdService::(ScoresInline|PlacePredict)\("),
    ("  of which counting the features (PredictFeatureTotal / CountPredictCost)",
     r"clickd::(PredictFeatureTotal|CountPredictCost)\("),
    ("ScorePredictRequest, all of it", r"ClickdService::ScorePredictRequest\("),
    ("  counting them again (CheckPredictCost; gone after the plan)", r"clickd::CheckPredictCost\("),
    ("  before: ToExample (convert, copy names, StrCat paths)", r"clickd::ToExample\("),
    ("  before: CheckDenseValues", r"clickd::CheckDenseValues\("),
    ("  before: ScoreCandidates(Example) (hash + model)",
     r"clickd::ScoreCandidates\(clickd::Model const&, clickd::Example const&"),
    ("    of which LinearModel::Margin (model lookup)", r"\?\?\?:clickd::LinearModel<[^ ]*>::Margin\("),
    ("  after: HashPredictRequest (check + hash)", r"clickd::HashPredictRequest\("),
    ("  after: ScoreCandidates(HashedCandidates) (model)",
     r"clickd::ScoreCandidates\(clickd::Model const&, clickd::HashedCandidates const&"),
    ("    of which LinearModel::Margins (model lookup)", r"\?\?\?:clickd::LinearModel<[^ ]*>::Margins\("),
    ("serialize the response", r"clickd::SerializeResponse\("),
    ("free the call (request, response, arena)",
     r"_Sp_counted_ptr_inplace<clickd::UnaryCall<clickd::ClickdService, "
     r"clickd::v1::PredictRequest.*_M_dispose"),
    ("malloc + free (all callers)", r"malloc\.c:(malloc|free) "),
]
# Stages that do not overlap and lie outside one another, for "the rest".
TOP_LEVEL = [0, 2, 4, 14, 15]  # parse, place, ScorePredictRequest, serialize, free

UPDATE_STAGES = [
    ("parse the request (protobuf, onto the call's arena)", r"clickd::ParseRequest\("),
    ("place the call (PlaceUpdate)", r"ClickdService::PlaceUpdate\("),
    ("  of which counting the features (UpdateFeatureTotal / CountUpdateCost)",
     r"clickd::(UpdateFeatureTotal|CountUpdateCost)\("),
    ("ApplyUpdate, all of it", r"\?\?\?:clickd::ClickdService::ApplyUpdate\("),
    ("  ValidateUpdateRequest (limits, convert, labels, dense)", r"clickd::ValidateUpdateRequest\("),
    ("    of which counting again (CheckUpdateCost; gone after the plan)",
     r"clickd::CheckUpdateCost\("),
    ("    of which ToExample (proto to Example: copies names)", r"clickd::ToExample\("),
    ("  ServedModel::LearnBatch (hash, commit, learn)", r"\?\?\?:clickd::ServedModel::LearnBatch\("),
    ("    of which HashBatch (hash the Examples)", r"clickd::HashBatch\("),
    ("    of which LearnHashedBatch (the model's steps)", r"clickd::LearnHashedBatch\("),
    ("serialize the response", r"clickd::SerializeResponse\("),
    ("free the call (request, response, arena)",
     r"_Sp_counted_ptr_inplace<clickd::UnaryCall<clickd::ClickdService, "
     r"clickd::v1::UpdateRequest.*_M_dispose"),
    ("malloc + free (all callers)", r"malloc\.c:(malloc|free) "),
]
UPDATE_TOP_LEVEL = [0, 1, 3, 10, 11]  # parse, place, ApplyUpdate, serialize, free


def totals(path):
    with open(path) as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])
    raise ValueError(path)


def inclusive(path, stages):
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                          capture_output=True, text=True, check=True).stdout
    out = []
    for _, pattern in stages:
        out.append(sum(int(line.split()[0].replace(",", "")) for line in text.splitlines()
                       if re.search(pattern, line)))
    return out


def main():
    cases = [line.split() for line in open(sys.argv[1]) if line.strip()]
    health = None
    for name, calls, path in cases:
        calls = int(calls)
        per_call = totals(path) / calls
        if name == "health":
            health = per_call
            print(f"health: {per_call:,.0f} instructions per call")
            continue
        stages, top = ((UPDATE_STAGES, UPDATE_TOP_LEVEL) if name.startswith("update_")
                       else (STAGES, TOP_LEVEL))
        parts = [v / calls for v in inclusive(path, stages)]
        ratio = f" ({per_call / health:.2f}x health)" if health else ""
        print(f"{name}: {per_call:,.0f} instructions per call{ratio}")
        for (label, _), v in zip(stages, parts):
            print(f"  {label:<76} {v:>12,.0f}")
        rest = per_call - sum(parts[i] for i in top)
        print(f"  {'the rest (gRPC, metrics, access check, threads)':<76} {rest:>12,.0f}")


if __name__ == "__main__":
    main()
