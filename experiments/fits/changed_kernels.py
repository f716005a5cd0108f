"""The catalog families whose config rules differ between two heuristic files, comma-separated.

A span round restricted with `crossmeasure --kernels` to these families settles what a refit changed without
probing every kernel again (docs/rules.md, stops 46 and 47 chose the list by hand):

    python3 experiments/fits/changed_kernels.py OLD.yaml NEW.yaml

A rule counts as changed when NEW has a config rule whose key, span and config OLD does not have, or OLD had one
NEW lost; only config rules matter, since a keep_default rule launches Inductor's own configs.
"""
from __future__ import annotations

import argparse
import json

import yaml

def _config_rules(path: str) -> dict[str, dict]:
    with open(path, encoding="utf-8") as handle:
        rules = yaml.safe_load(handle)["rules"]
    out = {}
    for rule in rules:
        if rule.get("action") != "config":
            continue
        key = {name: value for name, value in rule.items() if name != "evidence"}
        out[json.dumps(key, sort_keys=True)] = rule
    return out


def changed_families(old_path: str, new_path: str) -> list[str]:
    old, new = _config_rules(old_path), _config_rules(new_path)
    families = set()
    for key in set(old) ^ set(new):
        rule = new.get(key) or old[key]
        for shape in rule["evidence"]["shapes"]:
            families.add(shape.split()[0])
    return sorted(families)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    args = parser.parse_args()
    print(",".join(changed_families(args.old, args.new)))


if __name__ == "__main__":
    main()
