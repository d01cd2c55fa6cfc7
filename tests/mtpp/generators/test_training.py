"""The learned orderers' training graphs (:mod:`mtpp.generators.training`)."""

from __future__ import annotations

import pytest

from mtpp.core.errors import InvalidParameterError
from mtpp.generators.training import VALIDATION_EPOCH, epoch_graphs, training_graph


def test_training_graphs_are_seeded_fresh_and_in_range() -> None:
    a = epoch_graphs("peak", (20, 30), seed=3, epoch=0, count=4)
    assert all(20 <= g.n <= 30 for g in a)
    assert a == epoch_graphs("peak", (20, 30), seed=3, epoch=0, count=4)
    assert a != epoch_graphs("peak", (20, 30), seed=3, epoch=1, count=4)
    assert a != epoch_graphs("peak", (20, 30), seed=4, epoch=0, count=4)
    regal = epoch_graphs("mtpp", (30, 40), seed=3, epoch=2, count=3)
    assert epoch_graphs("mtpp", (30, 40), seed=3, epoch=2, count=3, jobs=2) == regal  # the same, in order
    assert training_graph("mtpp", (25, 25), 0, VALIDATION_EPOCH, 0).n == 25
    with pytest.raises(InvalidParameterError, match="nodes"):
        training_graph("peak", (10, 5), 0, 0, 0)
    with pytest.raises(InvalidParameterError, match="objective"):
        training_graph("speed", (10, 20), 0, 0, 0)
