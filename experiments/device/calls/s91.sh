#!/usr/bin/env bash
# Prepared at stop 89 (docs/rules.md, "The next GPU runs", 0): the H100 refit on the 95 H200 studies no H100 fit
# planned and on the H100's own studies, after s90.sh has brought back the coverage14 and coverage15 studies. H100
# only; every part is resumable (a part the limit cuts is run again and goes on where it stopped).
#   h200: crossmeasure of the 95 H200 study databases of the list (h200-s76.txt's, not in h100-s52.txt: 539 of their
#      995 studies have fewer than 2048 rows and 78 more than 131072, where no H100 rule reaches) with
#      --candidates-from H200 (828 shapes and 4728 (shape, config) pairs planned on the CPU at stop 89; about 1,200 s,
#      two or three calls; db/crossmeasure-h100-s91-h200.sqlite);
#   a: crossmeasure of the size groups of the H100's own studies (the list's db/coverage1{4,5}-h100-* and
#      db/bestfound-h100-*: plans from the H100's studies, no --candidates-from; 62 shapes and 217 (shape, config)
#      pairs planned on the CPU at stop 89 before coverage14 mix-bwd and coverage15 ran), then span round 1 over the
#      families a fit on everything before it changes or holds back against heuristics/h100.yaml (715d722d);
#   b (or rounds): what is left of span round 1, then span round 2 the same way, then the candidate
#      experiments/candidates/h100-s91.yaml (fit-h100.sh on the whole list, copied to $OUT), as one step: each
#      begins only when the one before it is complete;
#   score: its one score on H100 held-out set 14 (seed 2112, drawn at stop 89 before any of this; db/heldout-h100-14.sqlite);
#   models: where set 14 passed, the six model steps (db/models-h100-s91.sqlite);
#   tests (or tests-c, tests-d, a call each): where those passed, the GPU tests with it installed (candidate_parts.sh).
#   samples: after score, set 14's clean best found with it: the studies at its 12 best-found samples
#      (experiments/bestfound-h100-set14{,-large}, drawn with the set; no fit reads them) and both suites validated
#      with the candidate (bestfound.sh; db/bestfound-h100-14*.sqlite).
# Pack with `bash experiments/device/pack.sh STASH heuristics/h100.yaml [experiments/candidates/h100-s91.yaml] --
# $(sed 1,2d experiments/fits/h100-s91.txt | grep . | while read -r d; do [ -f "$d" ] && echo "$d"; done)
# db/mix-e2e-sweep-h100-*.sqlite db/unsplit-h100-*.sqlite` (fit-h100.sh's A/B records).
set -u
list=experiments/fits/h100-s91.txt; cand=experiments/candidates/h100-s91.yaml
B=${BUDGET:-560}
AV=$(ls experiments/heldout/*-draw.json | paste -sd,)
before() {  # the list's databases before $1 (a line of the list), as one line
  sed 1,2d $list | grep . | sed "\|^$1\$|,\$d" | paste -sd' '
}
span_round() {  # $1: the round, $2: its seed; the fit before it reads the list up to the round's own database
  local db=db/crossmeasure-h100-s91-span$1.sqlite
  mkdir -p /tmp/s91 && { head -2 $list; before "$db" | tr ' ' '\n'; } > /tmp/s91/list$1.txt
  # unsplit_fit refuses to overwrite, and a warm machine keeps /tmp: a cut round's fit is redone from scratch
  printf '%s' "rm -f /tmp/s91/pre$1.yaml && bash experiments/fits/fit-h100.sh /tmp/s91/list$1.txt /tmp/s91/pre$1.yaml > /tmp/s91/pre$1.out 2>&1 && \
   python3 -m inductor_tune crossmeasure $(before "$db") --candidates-from H200 --kernels \
   \$(python3 experiments/fits/changed_kernels.py heuristics/h100.yaml /tmp/s91/pre$1.yaml --held-back) \
   --span-probes 5 --edge-probes 1 --seed $2 --rounds 3 --max-configs 6 --no-progress --avoid-draw $AV \
   --storage $db 2>&1 | tail -4"
}
have=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$have" in
  "NVIDIA H100"*) ;;
  *) echo "s91.sh: the H100 refit runs on an H100 (GPU 0 is $have)" >&2; exit 2 ;;
esac
own=$(sed 1,2d $list | grep -E '^db/(coverage1[45]-h100-|bestfound-h100-)' | paste -sd' ')
h200=$(before db/crossmeasure-h100-s91-h200.sqlite | tr ' ' '\n' | grep -vxF -f <(sed 1,2d experiments/fits/h100-s52.txt) \
  | paste -sd' ')
# One step, so that a round starts only once the round before it is complete: a round's plan comes from a fit of
# every round before it, and a round cut short would give the next one a plan no later call repeats (stop 91).
rounds="set -o pipefail; $(span_round 1 911) && $(span_round 2 912) && \
 bash experiments/fits/fit-h100.sh $list $cand > \$OUT/fit-h100-s91.txt 2>&1 && cp $cand \$OUT/"
case "${PART:-h200}" in
  h200) BUDGET=$B exec bash experiments/device/steps.sh \
      "python3 -m inductor_tune crossmeasure $h200 --candidates-from H200 --top 2 --neighbours 1 --max-configs 6 \
       --rounds 3 --no-progress --avoid-draw $AV --storage db/crossmeasure-h100-s91-h200.sqlite 2>&1 | tail -4" ;;
  a) BUDGET=$B exec bash experiments/device/steps.sh \
      "python3 -m inductor_tune crossmeasure $own --top 2 --neighbours 1 --max-configs 6 --rounds 3 --no-progress \
       --avoid-draw $AV --storage db/crossmeasure-h100-s91.sqlite 2>&1 | tail -4" \
      "$rounds" ;;
  b|rounds) BUDGET=$B exec bash experiments/device/steps.sh "$rounds" ;;
  score) BUDGET=$B exec bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/h100-set14-draw.json \
       --rounds 3 --storage sqlite:///db/heldout-h100-14.sqlite 2>&1 | grep -v 'Warning\|warn\|^$' | tail -9" ;;
  models) BUDGET=$B exec bash experiments/device/steps.sh \
      "python3 -m inductor_tune validate $cand --no-progress --rounds 5 --storage sqlite:///db/models-h100-s91.sqlite \
       --models ${MODELS:-llama-2048,llama-4096,gpt2-2048,gpt2-768-t32768} 2>&1 | grep -v 'Warning\|warn\|^$' | tail -10" \
      "python3 -m inductor_tune validate $cand --no-progress --rounds 5 --storage sqlite:///db/models-h100-s91b.sqlite \
       --models llama-8192,gpt2-1024 2>&1 | grep -v 'Warning\|warn\|^$' | tail -10" ;;
  tests|tests-c|tests-d) BUDGET=$B exec bash experiments/device/candidate_parts.sh "$cand" 14 91 ;;
  samples)
    [ -f "$cand" ] || { echo "s91.sh: PART=samples reads $cand, which PART=b writes" >&2; exit 2; }
    digest=$(python3 -c "from inductor_tune.runtime.rulefile import load; print(load('$cand').digest()[:8])") || exit 2
    BUDGET=$B exec bash experiments/device/bestfound.sh experiments/bestfound-h100-set14 bestfound-h100-14 "$cand" \
      "$digest" ;;
  *) echo "s91.sh: PART=h200, a, b (rounds), score, models, tests, tests-c, tests-d or samples" >&2; exit 2 ;;
esac
