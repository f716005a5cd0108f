#!/usr/bin/env bash
# Prepared at stop 69 for the next H200 session (docs/rules.md, "The next GPU runs", 0). 5af72bc3 is shipped
# (heuristics/h200.yaml); held-out set 61 (seed 2093) was drawn before anything below was made.
#   a: the A/B of the column unsplit probe (experiments/unsplit/probe-outer.yaml: every column reduction Inductor
#      splits at rows 33..4095 kept whole, Inductor's config, no launch rule) on its stratified training draw
#      (experiments/unsplit/outer-train-draw.json, 196 backward problems, 4 per rows x N octave cell), about
#      200 s; then set 61's best-found studies with what is left (resumable).
#   Then on the CPU: `python3 experiments/unsplit_fit.py fit heuristics/h200.yaml --outer --evidence
#   db/unsplit-outer-train.sqlite --out experiments/candidates/h200-s69.yaml`. Where a cell earns a rule, that file
#   is the candidate (CAND):
#   b: CAND's one score on set 61 (about 320 s), then what is left of set 61's best-found studies;
#   c: the GPU tests with CAND installed (test_gpu_heuristics.py, test_gpu_multi_kernel.py,
#      test_gpu_unsplit_types.py; then test_gpu_models.py and test_gpu.py in a second call, PART=d);
#   e: set 61's best-found suites validated with CAND (the studies resume first);
#   f: the two model steps of 2048 tokens with CAND, whose weight and bias gradients are column sums of 2048 rows
#      (a column rule holds for any column sum of its sizes).
# Where no cell earns a rule, set 61 stays fresh and PART=e validates the shipped file instead
# (CAND=heuristics/h200.yaml).
# No recorded model step of 8192 tokens has a column reduction under 4096 rows, so a column rule leaves them as
# they are; experiments/model_launches.py says so for each step before it ships.
# BUDGET must stay under what the device has left (the previous call's lease.budget_left_s less about 40 s).
# Pack with `bash experiments/device/pack.sh STASH experiments/unsplit/probe-outer.yaml [CAND] -- db/quack.sqlite
# [db/unsplit-outer-train.sqlite db/bestfound61*.sqlite db/heldout61.sqlite]`.
set -u
B=${BUDGET:-560}
cand=${CAND:-experiments/candidates/h200-s69.yaml}
studies=()
for name in bestfound61 bestfound61-large; do
  studies+=("python3 -m inductor_tune tune experiments/bestfound-set${name#bestfound}/problems.yaml \
  --storage sqlite:///db/$name.sqlite --no-progress 2>&1 | tail -14")
done
tests () {
  echo "cp $cand heuristics/h200.yaml && python3 -m pytest -v --tb=short -m gpu -p no:cacheprovider -p no:warnings \
   -rs $2 > \$OUT/pytest-$1.log 2>&1; tail -3 \$OUT/pytest-$1.log"
}
case "${PART:-a}" in
  a) BUDGET=$B bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate experiments/unsplit/probe-outer.yaml --no-progress \
       --draw experiments/unsplit/outer-train-draw.json --rounds 3 --storage sqlite:///db/unsplit-outer-train.sqlite \
       2>&1 | tail -8" \
      "${studies[@]}" ;;
  b) BUDGET=$B bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set61-draw.json --rounds 3 \
       --storage sqlite:///db/heldout61.sqlite" \
      "${studies[@]}" ;;
  e) digest=$(python3 -c "from inductor_tune.runtime.rulefile import load; print(load('$cand').digest()[:8])")
     BUDGET=$B bash experiments/device/bestfound.sh experiments/bestfound-set61 bestfound61 "$cand" "$digest" ;;
  c) BUDGET=$B bash experiments/device/steps.sh \
      "$(tests c 'tests/test_gpu_heuristics.py tests/test_gpu_multi_kernel.py tests/test_gpu_unsplit_types.py')" ;;
  d) BUDGET=$B bash experiments/device/steps.sh "$(tests d 'tests/test_gpu_models.py tests/test_gpu.py')" ;;
  f) BUDGET=$B bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate $cand --no-progress --rounds 5 --storage sqlite:///db/models-h200-s69.sqlite \
       --models llama-2048-t2048,gpt2-1024-t2048 2>&1 | grep -v 'Warning\|warn\|^$' | tail -8" ;;
esac
