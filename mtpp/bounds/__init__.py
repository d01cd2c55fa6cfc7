"""The combinatorial lower bounds: each a plain function in a module named for it, its
problem, proof and rounding argument in its docstring.  They need no solver and import
only :mod:`mtpp.core` (so the heuristics and formulations may use them).

Partitioning (MTPP):

* :mod:`~mtpp.bounds.simple`: Lemma 3.3 with the overflow term;
* :mod:`~mtpp.bounds.cut`: ``max_v min_{S ∋ v} f(S)`` by one minimum cut per op;
* :mod:`~mtpp.bounds.crossing`: every tensor once per block its net must meet, over k;
* :mod:`~mtpp.bounds.clique`: k + 1 ops pairwise too dear to share a block;
* :mod:`~mtpp.bounds.reach` (with :mod:`~mtpp.bounds.reach_sweeps`): no chain of k
  blocks below the bound covers the graph;
* :mod:`~mtpp.bounds.hull_cuts`: the minimum cuts over convex hulls the last four share.

Peak memory (schedules): :mod:`~mtpp.bounds.peak_memory` (local and forced-live) and
:mod:`~mtpp.bounds.peak_cut` (the min-cut live bound).

The MIP bounds of Section 3 are models in :mod:`formulations`, solved by certify's MIP
methods; the ideal DP, which proves optima on narrow graphs, lives with the heuristics.
"""
