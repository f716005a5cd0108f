#!/usr/bin/env bash
# Prepared at stop 64 (docs/rules.md, "The next GPU runs", 0), after s65-h200.sh: span round 30 with hull probes, the
# refit and its one score on held-out set 58 (seed 2090, drawn at stop 64 before this round was planned). At odd N a
# rule covers only the hull of its odd evidence, and at held-out sets 54-56 18 untouched problems at odd N lay in a
# config rule's span but outside its hull (`prenorm_rmsnorm_train_fwd` 32220x3159, 1.781x best found, among them).
# The round takes every family with a config rule over experiments/fits/h200-s64.txt (2b0e169f's list): 5 span probes
# per rule (every alignment class, as settling needs) and 2 hull probes at odd N outside its hull; planned on the CPU
# at stop 64 (`--plan-only H200`). It also checks every config rule out of sample again: a probe that loses holds its
# rule back. Resumable (crossmeasure and the gate resume; the fit is not made again): where a call's limit stops a
# step, copy what came back (the fit to experiments/candidates/, the databases to db/) and run it again.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml [experiments/candidates/h200-s65.yaml] --
# db/quack.sqlite $(sed 1,2d experiments/fits/h200-s65.txt | head -n -1) $(ls db/unsplit-*train*.sqlite
# db/mixtune*-probe-up-m5.sqlite) [db/crossmeasure-s65-hull30.sqlite db/heldout58.sqlite]`.
set -u
list=experiments/fits/h200-s65.txt; cand=experiments/candidates/h200-s65.yaml
AV=$(ls experiments/heldout/*.json | paste -sd,)
BUDGET=${BUDGET:-560} bash experiments/device/steps.sh \
  "[ -f $cand ] || python3 -m inductor_tune crossmeasure $(sed 1,2d $list | head -n -1 | paste -sd' ') \
   --span-probes 5 --hull-probes 2 --seed 130 --rounds 3 --no-progress --avoid-draw $AV \
   --storage db/crossmeasure-s65-hull30.sqlite && touch /tmp/hull30-done" \
  "[ -f $cand ] || { [ -f /tmp/hull30-done ] && bash experiments/fits/fit.sh $list $cand; } && cp $cand \$OUT/" \
  "[ -f $cand ] && python3 -m inductor_tune validate $cand --no-progress --draw experiments/heldout/set58-draw.json \
   --rounds 3 --storage sqlite:///db/heldout58.sqlite 2>&1 | grep -v 'Warning\|warn\|^$' | tail -12"
