"""Shared fixtures: the backends every conformance test runs on."""
from __future__ import annotations

import os

import pytest

#: "numpy" always; delegate names join when their backend exists (TEFLON_TEST_BACKENDS overrides).
BACKENDS = os.environ.get("TEFLON_TEST_BACKENDS", "numpy").split(",")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param
