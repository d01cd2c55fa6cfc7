from __future__ import annotations

import pytest

from solvers.registry import BACKENDS, backend_class

INSTALLED = [name for name in BACKENDS if backend_class(name).available()]


@pytest.fixture(params=INSTALLED)
def backend_name(request: pytest.FixtureRequest) -> str:
    return request.param
