"""Output formats of the views (a light module: the CLI imports it at start)."""

from __future__ import annotations

import enum
import json
from typing import Any


class Output(enum.StrEnum):
    TABLE = "table"
    JSON = "json"
    YAML = "yaml"


def dump(data: Any, output: Output) -> str:
    """JSON (indented, keys in the order built) or YAML (same order)."""
    if output is Output.YAML:
        import yaml

        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip("\n")
    return json.dumps(data, indent=2)
