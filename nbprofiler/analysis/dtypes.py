"""Bytes per element of torch's dtypes, by the names traces write them.

The profiler writes a dtype two ways: an operator's "Input type" in C++ spelling
("float", "c10::Half", "unsigned char"), and a collective's "dtype" as c10's
ScalarType name ("Float", "Half", "Byte"). FLOPs' bytes moved (``flops``) and a
collective's message size (``collectives``) both read this one table.
"""
from __future__ import annotations

import math

# Lower case, without "c10::".
_ITEM_BYTES = {
    "bool": 1, "byte": 1, "char": 1, "signed char": 1, "unsigned char": 1, "int8": 1, "uint8": 1,
    "qint8": 1, "quint8": 1, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
    "short": 2, "half": 2, "bfloat16": 2, "uint16": 2,
    "int": 4, "float": 4, "qint32": 4, "uint32": 4, "complexhalf": 4,
    "long": 8, "double": 8, "uint64": 8, "complexfloat": 8,
    "complexdouble": 16,
}


def type_name(raw: str) -> str:
    """A dtype name as this module keys it: lower case, without "c10::"."""
    return raw.lower().removeprefix("c10::")


def item_bytes(name: object) -> float:
    """Bytes per element of the dtype ``name`` in either spelling; NaN when unknown or absent."""
    return float(_ITEM_BYTES.get(type_name(name), math.nan)) if isinstance(name, str) else math.nan
