"""The catalog families whose config rules differ between two heuristic files, comma-separated.

A span round restricted with `crossmeasure --kernels` to these families settles what a refit changed without
probing every kernel again (docs/rules.md, stops 46 and 47 chose the list by hand):

    python3 experiments/fits/changed_kernels.py OLD.yaml NEW.yaml

A rule counts as changed when NEW has a config rule whose key, span and config OLD does not have, or OLD had one
NEW lost; only config rules matter, since a keep_default rule launches Inductor's own configs.

With --held-back, a rule NEW fitted a config for but holds back until a span round settles it ("fitted ..., not
shipped: ..."), where OLD has no such rule with that span and fitted config, counts too. Such a rule launches
Inductor's default, but only a span round over its family can let it ship: stop 49's refit held back its rule for
the fused backwards at 248104..286842 rows because no round had probed there, and the list without it left that
family out (docs/rules.md, "Stop 49").
"""
from __future__ import annotations

import argparse
import json
import re

import yaml

from inductor_tune.runtime.rulefile import SAFE_LOADER

HELD_BACK = re.compile(r"^fitted (.+?), not shipped: ")


def _load(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=SAFE_LOADER)["rules"]


def _rules(rules: list[dict], held_back: bool = False) -> dict[str, dict]:
    """Each config rule by its key, span and config; with ``held_back``, instead each rule held back from a config,
    by its key, span and the config it was fitted."""
    out = {}
    for rule in rules:
        key = {name: value for name, value in rule.items() if name != "evidence"}
        fitted = HELD_BACK.match(rule.get("evidence", {}).get("note", ""))
        if held_back and fitted:
            key["fitted"] = fitted.group(1)
        elif held_back or rule.get("action") != "config":
            continue
        out[json.dumps(key, sort_keys=True)] = rule
    return out


def changed_families(old_path: str, new_path: str, held_back: bool = False) -> list[str]:
    old_rules, new_rules = _load(old_path), _load(new_path)
    old, new = _rules(old_rules), _rules(new_rules)
    changed = [new.get(key) or old[key] for key in set(old) ^ set(new)]
    if held_back:
        old_held, new_held = _rules(old_rules, held_back=True), _rules(new_rules, held_back=True)
        changed += [new_held[key] for key in set(new_held) - set(old_held)]
    return sorted({shape.split()[0] for rule in changed for shape in rule["evidence"]["shapes"]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--held-back", action="store_true",
                        help="also the families of rules NEW fitted a config for and holds back until a span round")
    args = parser.parse_args()
    print(",".join(changed_families(args.old, args.new, args.held_back)))


if __name__ == "__main__":
    main()
