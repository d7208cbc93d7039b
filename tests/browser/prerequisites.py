"""What the front-end tests need from the machine, and what to do when it is missing.

On a developer's machine without Node.js or Chromium the front-end and browser
tests skip, as the Python package works without the extension. CI sets
``NBPROFILER_REQUIRE_LABEXTENSION=1`` (``.ci/run``), the same switch that makes
``labextension/build.sh`` fail without Node.js, so there a missing tool fails
the run instead of letting it go green without the extension being tested.
"""
from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRED = os.environ.get("NBPROFILER_REQUIRE_LABEXTENSION", "0") == "1"


def missing(what: str) -> NoReturn:
    """Skip the calling test because ``what`` is missing, or fail it where the extension is required."""
    if REQUIRED:
        pytest.fail(f"{what}, and NBPROFILER_REQUIRE_LABEXTENSION=1 requires the front-end tests")
    pytest.skip(what)
