"""The tests read and write megabyte rule files: through libyaml, as the product reads them (``rulefile.SAFE_LOADER``).

The pure-Python ``yaml.safe_load`` of the shipped H200 file takes seconds; dozens of tests do it."""

import yaml

from inductor_tune.runtime.rulefile import SAFE_DUMPER, SAFE_LOADER


def safe_load(stream):
    return yaml.load(stream, Loader=SAFE_LOADER)


def safe_dump(doc, **options) -> str:
    return yaml.dump(doc, Dumper=SAFE_DUMPER, **options)
