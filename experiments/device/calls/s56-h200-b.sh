#!/usr/bin/env bash
# Prepared at stop 55 for the next H200 session (docs/rules.md, "The next GPU runs", 0), after s56-h200-a.sh, whose
# 32-warp unsplit A/B the fits read (experiments/fits/h200-s56.unsplit): fill 22 over the best-found studies of the
# spent set 47 (24 shapes and 25 pairs by `--plan-only H200` on the CPU, stop 55), the fit of that
# (`experiments/fits/h200-s56.txt` without its span line) and the families it changes or newly holds back against
# the shipped 0608dd76, span round 26 over them, the refit from the whole list and its one score on held-out set 48
# (seed 2079, drawn at stop 54 before any later fit).
# crossmeasure and the gate run resume; the two fits are kept under experiments/candidates/ and not made again.
# Where the call's limit stops a step, copy what came back (`h200-s56-prespan.yaml`, `h200-s56.yaml` to
# experiments/candidates/, the databases to db/) and run the same script.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml [experiments/candidates/h200-s56*.yaml] --
# db/quack.sqlite db/bestfound47.sqlite db/bestfound47-large.sqlite db/unsplit-persistent32-train.sqlite
# db/unsplit-persistent32-train2.sqlite [db/crossmeasure-s56-*.sqlite db/heldout48.sqlite]`,
# then run
#   tar xJf .carry/db.tar.xz && source .devdeps/env.sh && bash experiments/device/calls/s56-h200-b.sh
set -u
bash experiments/device/fill_span_refit.sh 56 22 26 126 48
