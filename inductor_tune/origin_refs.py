"""How a crossmeasure record's ``origin_json`` is kept in it_origin_list (schema 6): the text form only, no
database.  A record's text holds one list per config (the shapes whose studies proposed it), and configs recur
across records far more often than whole records do (stop 91's crossmeasure of the H200 studies: 4,728 config
lists, 240 distinct; 828 records, 160 distinct).  So each config's list is stored once and the record keeps
their digests; a text not in json.dumps' own form of a list of lists is stored whole, so every text comes back
exactly as it was written."""

from __future__ import annotations

import hashlib
import json

WHOLE = "sha256:"  # JSON text never starts with a letter, so a reference cannot be taken for a list
PER_CONFIG = "sha256[]:"


def is_reference(origin_json: str) -> bool:
    return origin_json.startswith((WHOLE, PER_CONFIG))


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def stored_texts(origin_json: str) -> tuple[bool, list[str]]:
    """Whether the text is stored per config, and the texts stored for it."""
    try:
        per_config = json.loads(origin_json)
    except ValueError:
        return False, [origin_json]
    if (isinstance(per_config, list) and all(isinstance(names, list) for names in per_config)
            and json.dumps(per_config) == origin_json):
        return True, [json.dumps(names) for names in per_config]
    return False, [origin_json]


def reference(per_config: bool, digests: list[str]) -> str:
    return PER_CONFIG + ",".join(digests) if per_config else WHOLE + digests[0]


def referenced(origin_json: str) -> tuple[bool, list[str]]:
    """Whether a reference is per config, and the digests it names."""
    if origin_json.startswith(PER_CONFIG):
        return True, [d for d in origin_json[len(PER_CONFIG):].split(",") if d]
    return False, [origin_json[len(WHOLE):]]


def text_of(per_config: bool, texts: list[str]) -> str:
    # json.dumps writes a list as "[" + ", ".join(items) + "]": the record's own text again
    return "[" + ", ".join(texts) + "]" if per_config else texts[0]
