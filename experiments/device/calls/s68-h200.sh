#!/usr/bin/env bash
# Prepared at stop 68 for the next H200 session (docs/rules.md, "The next GPU runs", 0), in three calls (PART=a to c)
# and then SAMPLES=1. Two candidates wait:
# * 51913101 (experiments/candidates/h200-s67.yaml), the refit with coverage12, fill 26 and span round 32, passed
#   held-out set 59 at stop 68. At every kernel of the five recorded model steps it launches fcb2b8aa's configs
#   (`experiments/model_launches.py`, CPU: the one key that differs is a softmax forward's, and no step has one).
# * 5af72bc3 (experiments/candidates/h200-s68.yaml), the same list fitted with stop 68's settling
#   (FitParams.settle_applied_classes): 11 rules that 51913101 holds back ship. It is unscored; set 60 (seed 2092)
#   was drawn before it was fitted. At llama-4096 it may launch a fused backward config where fcb2b8aa keeps the
#   default (a key of nn_rmsnorm_bwd's envelope; the record does not say whether the step's kernel has it).
#   a: 5af72bc3's one score on set 60 (about 320 s), then the llama-4096 step with it (about 150 s);
#   b: the GPU tests with CAND installed (test_gpu_heuristics.py, test_gpu_multi_kernel.py,
#      test_gpu_unsplit_types.py, about 280 s), then set 60's best-found studies with what is left;
#   c: test_gpu_models.py and test_gpu.py with CAND installed (about 430 s), then what is left of those studies.
# CAND: experiments/candidates/h200-s68.yaml where set 60 passed and the llama-4096 step is within noise, else
# experiments/candidates/h200-s67.yaml. SAMPLES=1: the best-found studies of set 60 and both suites validated with
# CAND. BUDGET must stay under what the device has left (the previous call's lease.budget_left_s less about 40 s).
# Pack with `bash experiments/device/pack.sh STASH experiments/candidates/h200-s68.yaml
# experiments/candidates/h200-s67.yaml -- db/quack.sqlite [db/heldout60.sqlite db/models-h200-s68.sqlite
# db/bestfound60*.sqlite]`.
set -u
B=${BUDGET:-560}
cand=${CAND:-experiments/candidates/h200-s68.yaml}
studies=()
for name in bestfound60 bestfound60-large; do
  dir=experiments/bestfound-set${name#bestfound}
  studies+=("python3 -m inductor_tune tune $dir/problems.yaml --storage sqlite:///db/$name.sqlite --no-progress \
  2>&1 | tail -14")
done
tests () {
  echo "cp $cand heuristics/h200.yaml && python3 -m pytest -v --tb=short -m gpu -p no:cacheprovider -p no:warnings \
   -rs $2 > \$OUT/pytest-$1.log 2>&1; tail -3 \$OUT/pytest-$1.log"
}
if [ -n "${SAMPLES:-}" ]; then
  digest=$(python3 -c "from inductor_tune.runtime.rulefile import load; print(load('$cand').digest()[:8])")
  BUDGET=$B bash experiments/device/bestfound.sh experiments/bestfound-set60 bestfound60 "$cand" "$digest"
  exit 0
fi
case "${PART:-a}" in
  a) BUDGET=$B bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate experiments/candidates/h200-s68.yaml --no-progress \
       --draw experiments/heldout/set60-draw.json --rounds 3 --storage sqlite:///db/heldout60.sqlite" \
      "python3 -m inductor_tune validate experiments/candidates/h200-s68.yaml --no-progress --rounds 5 \
       --storage sqlite:///db/models-h200-s68.sqlite --models llama-4096 2>&1 \
       | grep -v 'Warning\|warn\|^$' | tail -8" ;;
  b) BUDGET=$B bash experiments/device/steps.sh \
      "$(tests b 'tests/test_gpu_heuristics.py tests/test_gpu_multi_kernel.py tests/test_gpu_unsplit_types.py')" \
      "${studies[@]}" ;;
  c) BUDGET=$B bash experiments/device/steps.sh "$(tests c 'tests/test_gpu_models.py tests/test_gpu.py')" \
      "${studies[@]}" ;;
esac
