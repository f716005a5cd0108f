#!/usr/bin/env bash
# Prepared at stop 65 for the next H200 session (docs/rules.md, "The next GPU runs", 0), in five calls (PART=a to e).
# Span round 30 with hull probes (stop 65) gave the refit 0f2e9a2a (experiments/candidates/h200-s65.yaml), which cut
# the groups of all 22 families anew. A rule of a new cut ships a config only once a later span round has timed it at
# N of every alignment class (settling), so 0f2e9a2a holds back rules whose probes all won (`prenorm_rmsnorm_train_fwd`
# N 4132..8192, rows 33..32768: 1.12-1.38x at its five probes). Span round 31 settles the new cuts before the refit is
# scored once on held-out set 58 (seed 2090, drawn at stop 64, before either round was planned): 5 span probes and 1
# edge probe per rule (seed 131) over the families 0f2e9a2a changes or holds back against the shipped 2b0e169f, every
# held-out draw avoided; 548 probes planned on the CPU at stop 65.
#   a: span round 31 (about 400 s) and the refit experiments/candidates/h200-s66.yaml (about 70 s);
#   b: the refit's one score on set 58 (about 300 s), then set 58's best-found studies and both suites validated with
#      the refit (about 250 s; they resume);
#   c: where set 58 passed, the five model steps with the refit (MODELS to choose; about 520 s for all five). Run
#      `experiments/model_launches.py heuristics/h200.yaml experiments/candidates/h200-s66.yaml
#      db/models-h200-s63.sqlite ...` on the CPU first: a step where the launches are 2b0e169f's need not be timed;
#   d, e: where set 58 and the model steps passed, the GPU tests with the refit installed: test_gpu_heuristics.py,
#      test_gpu_multi_kernel.py and test_gpu_unsplit_types.py (about 300 s), then test_gpu_models.py and test_gpu.py
#      (about 450 s on a fresh machine).
# Resumable: where a call's limit stops a step, copy what came back (the refit to experiments/candidates/, the
# databases to db/) and run the part again.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml experiments/candidates/h200-s65.yaml
# [experiments/candidates/h200-s66.yaml] -- db/quack.sqlite $(sed 1,2d experiments/fits/h200-s66.txt | head -n -1)
# $(ls db/unsplit-*train*.sqlite db/mixtune*-probe-up-m5.sqlite) [db/crossmeasure-s66-span31.sqlite]` for PART=a, and
# with the refit and `db/quack.sqlite [db/heldout58.sqlite db/bestfound58*.sqlite db/models-h200-s66.sqlite]` for b, c.
set -u
list=experiments/fits/h200-s66.txt; cand=experiments/candidates/h200-s66.yaml
case "${PART:-a}" in
  a) AV=$(ls experiments/heldout/*.json | paste -sd,)
     BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
      "[ -f $cand ] || python3 -m inductor_tune crossmeasure $(sed 1,2d $list | head -n -1 | paste -sd' ') \
       --kernels \$(python3 experiments/fits/changed_kernels.py heuristics/h200.yaml \
       experiments/candidates/h200-s65.yaml --held-back) --span-probes 5 --edge-probes 1 --seed 131 --rounds 3 \
       --no-progress --avoid-draw $AV --storage db/crossmeasure-s66-span31.sqlite && touch /tmp/span31-done" \
      "[ -f $cand ] || { [ -f /tmp/span31-done ] && bash experiments/fits/fit.sh $list $cand; } && cp $cand \$OUT/" ;;
  b) total=${BUDGET:-560}
     digest=$(python3 -c "from inductor_tune.runtime.rulefile import load; print(load('$cand').digest()[:8])")
     BUDGET=330 bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set58-draw.json --rounds 3 \
       --storage sqlite:///db/heldout58.sqlite 2>&1 | grep -v 'Warning\|warn\|^$' | tail -12"
     BUDGET=$((total - SECONDS)) bash experiments/device/bestfound.sh experiments/bestfound-set58 bestfound58 \
      "$cand" "$digest" ;;
  c) BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "python3 -m inductor_tune validate $cand --no-progress \
      --rounds 5 --storage sqlite:///db/models-h200-s66.sqlite \
      --models ${MODELS:-llama-2048,llama-4096,llama-8192,gpt2-1024,gpt2-2048} 2>&1 | grep -v 'Warning\|warn\|^$' \
      | tail -14" ;;
  d|e) tests="tests/test_gpu_heuristics.py tests/test_gpu_multi_kernel.py tests/test_gpu_unsplit_types.py"
     [ "$PART" = e ] && tests="tests/test_gpu_models.py tests/test_gpu.py"
     BUDGET=${BUDGET:-560} bash experiments/device/steps.sh "cp $cand heuristics/h200.yaml && python3 -m pytest -v \
      --tb=short -m gpu -p no:cacheprovider -p no:warnings -rs $tests > \$OUT/pytest-$PART.log 2>&1; \
      tail -3 \$OUT/pytest-$PART.log" ;;
esac
