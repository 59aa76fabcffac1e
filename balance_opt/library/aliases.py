"""The file ``balance-opt generate`` writes for a library instance under its own name.

``generate --preset fig4 --users 30 --seed 1`` draws the library's ``fig4a/k-30-s0001``
but names it ``fig4-K30-s0001``: the files differ in the name alone, so their sha256
differ and a solution of the generated file would match nothing. :func:`generated_sha256`
gives the digest of that generated file, so that ``check`` matches its solutions to the
library instance; the match stays exact (the very bytes ``generate`` writes, and only
when the library file is those bytes under the library's name).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from balance_opt.errors import InputError
from balance_opt.generator import PRESETS, GeneratorParams, generate_from
from balance_opt.io import instance_bytes, parse_json, read_bytes, sha256_bytes

# What ``generate`` names an instance: ``<preset>-K<K>[-LO<tokens>]-s<seed>`` (generator.instance_name).
GENERATED_NAME = re.compile(r"^(?P<preset>.+)-K(?P<users>\d+)(-LO\d+)?-s(?P<seed>\d{4,})$")


def generated_sha256(path: Path, stem: str) -> str | None:
    """sha256 of what ``generate`` writes for the library instance at ``path`` without ``--name``.

    None when the instance was not drawn by the generator from a preset, or when the
    library file is not what the generator draws under the library's name.
    """
    try:
        data = read_bytes(path)
        generator = parse_json(data, str(path)).get("generator")
    except (InputError, AttributeError):
        return None
    if not isinstance(generator, dict) or generator.get("preset") not in PRESETS:
        return None
    fields = {f.name for f in dataclasses.fields(GeneratorParams)}
    values: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in generator.items() if k in fields
    }
    try:
        params = GeneratorParams(**values)
        named = generate_from(dataclasses.replace(params, name=stem))
        if instance_bytes(named) != data:  # not the generator's draw under this name: no alias
            return None
        return sha256_bytes(instance_bytes(generate_from(dataclasses.replace(params, name=None))))
    except (TypeError, ValueError):
        return None
