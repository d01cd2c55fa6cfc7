"""The plan of a certify call: one table of methods, each describing itself, and the page
generated from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtpp.engine.method import ALL_KS, EACH_K
from mtpp.engine.plan import PLAN, budget_page

ROOT = Path(__file__).resolve().parents[3]


def test_the_budget_page_is_generated_from_the_plan() -> None:
    """``docs/budget.md`` is what ``python -m mtpp.engine.plan`` prints: regenerate it when the plan changes."""
    assert (ROOT / "docs" / "budget.md").read_text() == budget_page()


@pytest.mark.parametrize("kind", PLAN, ids=[k.__name__ for k in PLAN])
def test_every_method_says_what_it_needs_its_share_and_when_it_is_skipped(kind: type) -> None:
    assert kind.name and kind.__doc__
    assert kind.scope in (EACH_K, ALL_KS)
    assert kind.needs and kind.share and kind.skipped
    assert kind.name in budget_page()


def test_the_names_are_distinct_and_the_first_partitions_come_first() -> None:
    names = [kind.name for kind in PLAN]
    assert len(set(names)) == len(names)
    assert PLAN[0].essential and not any(kind.essential for kind in PLAN[1:])
