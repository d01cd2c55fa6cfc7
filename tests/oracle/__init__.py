"""The brute-force oracle: the truth every test compares against, one module per problem.

* :mod:`tests.oracle.partition`: MTPP, Eq. (1)-(4) of the MTPP paper: block costs from the
  definition, OPT over every assignment, over chains of down-sets and in exact rationals,
  the best segmentation of an order, the best split-point plan, the cheapest convex block
  with a share of weights.
* :mod:`tests.oracle.peak_memory`: the minimum peak over every topological order, in floats
  and in exact arithmetic.
* :mod:`tests.oracle.placement`: the placement simulator replayed in exact arithmetic, and
  the optima over every placement and priority order.
* :mod:`tests.oracle.mip`: the minimum of a solver model over every 0/1 choice.
* :mod:`tests.oracle.graphs`: random DAGs, every topological order, the shared graphs.

Each is written from the definitions with Python sets, integers and rationals, sharing no
code with mtpp's cost model, DPs, simulator or solvers.  The names of every module but
:mod:`tests.oracle.placement` (whose ``brute_force_peak`` is another problem's) are
importable from here: ``from tests.oracle import exact_optimum``.
"""

from tests.oracle.graphs import (
    SHARED_LAYERED,
    chain_of_blocks,
    is_topological,
    random_dag,
    shared_graph,
    topological_orders,
)
from tests.oracle.mip import brute_min
from tests.oracle.partition import (
    ExactCosts,
    brute_force_optimum,
    brute_force_segmentation,
    brute_force_units,
    cheapest_share,
    convex,
    down_set_optimum,
    down_sets,
    exact_optimum,
    ideals,
    mixed_scale_problem,
    naive_block_cost,
    naive_block_peak,
    quotient_is_acyclic,
    rational_optimum,
)
from tests.oracle.peak_memory import (
    ExactPeak,
    brute_force_peak,
    exact_peak,
    exact_peak_optimum,
    reference_profile,
)

__all__ = [
    "SHARED_LAYERED",
    "ExactCosts",
    "ExactPeak",
    "brute_force_optimum",
    "brute_force_peak",
    "brute_force_segmentation",
    "brute_force_units",
    "brute_min",
    "chain_of_blocks",
    "cheapest_share",
    "convex",
    "down_set_optimum",
    "down_sets",
    "exact_optimum",
    "exact_peak",
    "exact_peak_optimum",
    "ideals",
    "is_topological",
    "mixed_scale_problem",
    "naive_block_cost",
    "naive_block_peak",
    "quotient_is_acyclic",
    "random_dag",
    "rational_optimum",
    "reference_profile",
    "shared_graph",
    "topological_orders",
]
