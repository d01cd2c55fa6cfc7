"""Suite-wide collection order: the long tests first (the soundness fuzz chunks, minutes
each), so that ``pytest -n 2 --dist worksteal`` (``make test``) ends on short tests
and neither worker waits on the other's last chunk."""

from __future__ import annotations

import pytest

LONG_MODULES = ("tests/soundness/test_fuzz.py",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_MODULES))  # stable: the rest keeps its order
