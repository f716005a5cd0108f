#!/usr/bin/env bash
# Prepared at stop 52 for the next H200 session (docs/rules.md, "The next GPU runs", 0), after s53-h200-a.sh: fill 21
# over the best-found studies of the spent sets 45 and 46 (104 shapes and 114 pairs by `--plan-only H200` on the CPU),
# the fit of that (`experiments/fits/h200-s53.txt` without its span line) and the families it changes or newly holds
# back against the shipped 48edc030 (`changed_kernels.py --held-back`), span round 25 over them, the refit from the
# whole list and its one score on held-out set 47 (seed 2078). crossmeasure and the gate run resume; the two fits are
# kept under experiments/candidates/ and not made again. Where the call's limit stops a step, copy what came back
# (`h200-s53-prespan.yaml`, `h200-s53.yaml` to experiments/candidates/, the databases to db/) and run the same script.
# An empty family list (the fill changed nothing) leaves no span round and no refit: the shipped file stays.
# Pack with `bash experiments/device/pack.sh STASH heuristics/h200.yaml [experiments/candidates/h200-s53*.yaml] --
# db/quack.sqlite db/bestfound45.sqlite db/bestfound45-large.sqlite db/bestfound46.sqlite db/bestfound46-large.sqlite
# [db/crossmeasure-s53-*.sqlite db/heldout47.sqlite]`, then run
#   tar xJf .carry/db.tar.xz && source .devdeps/env.sh && bash experiments/device/calls/s53-h200-b.sh
set -u
bash experiments/device/fill_span_refit.sh 53 21 25 125 47
