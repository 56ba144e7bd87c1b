"""Kubernetes quantities as the integers the core counts in.

The core compares integers only (no float drift when 1,000 pods' requests are summed), so every
quantity is converted once, at the edge: CPU to millicores, everything else (memory, GPUs, pods,
extended resources) to whole base units, rounding fractions *up* as the kubelet does for requests.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

_PATTERN = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
_SUFFIX = {
    "m": Decimal("0.001"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
MILLI_RESOURCES = frozenset({"cpu"})


class QuantityError(ValueError):
    """Not a Kubernetes quantity."""


def parse(value: object) -> Decimal:
    """`"500m"` → 0.5, `"64Gi"` → 68719476736, `8` → 8."""
    if isinstance(value, bool):
        raise QuantityError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"not a quantity: {value!r}")
        return Decimal(str(value))
    if not isinstance(value, str):
        raise QuantityError(f"not a quantity: {value!r}")
    match = _PATTERN.match(value.strip())
    if not match:
        raise QuantityError(f"not a quantity: {value!r}")
    number, exponent, suffix = match.groups()
    try:
        out = Decimal(number + (exponent or ""))
    except InvalidOperation as exc:
        raise QuantityError(f"not a quantity: {value!r}") from exc
    return out * _SUFFIX[suffix] if suffix else out


def to_units(resource: str, value: object) -> int:
    """The integer the core uses for `resource` (millicores for CPU, base units otherwise)."""
    amount = parse(value)
    if resource in MILLI_RESOURCES:
        amount *= 1000
    return math.ceil(amount)


def resource_list(raw: Mapping[str, object] | None) -> dict[str, int]:
    """A resource map in core units; raises `QuantityError` naming the resource."""
    out: dict[str, int] = {}
    for name, value in (raw or {}).items():
        try:
            out[name] = to_units(name, value)
        except QuantityError as exc:
            raise QuantityError(f"{name}: {exc}") from exc
    return out


def format_units(resource: str, amount: int) -> str:
    """Back to a quantity string for status (`1500` millicores → `1500m`)."""
    return (
        f"{amount}m"
        if resource in MILLI_RESOURCES and amount % 1000
        else (str(amount // 1000) if resource in MILLI_RESOURCES else str(amount))
    )
