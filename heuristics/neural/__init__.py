"""Learned orderers: Topoformer (neural topological ordering) and REGAL-style BRKGA.

Everything that needs torch lives here and is imported lazily (the ``mtpp[neural]``
extra); the numpy parts (node features, DAG relation masks, decoders) work without it.

* :mod:`heuristics.neural.features` node features (Topoformer App. C.5);
* :mod:`heuristics.neural.masks` the seven DAG-derived attention graphs (Section 4.1);
* :mod:`heuristics.neural.topoformer` the encoder and priority head (Eq. 4, 5, 7, 17);
* :mod:`heuristics.neural.decoding` greedy / sampling / beam decoders (Section 4.2, Eq. 8);
* :mod:`heuristics.neural.policy` log-probabilities of orders under Eq. 6 and 8;
* :mod:`heuristics.neural.objectives` peak memory and the SliceGraph bottleneck as costs;
* :mod:`heuristics.neural.datasets` the training graphs as a training loop takes them
  from its caller (:mod:`mtpp.generators.training` draws them);
* :mod:`heuristics.neural.jobs` seeded calls over processes, results in order;
* :mod:`heuristics.neural.runs` what the two training loops share: options, the epoch
  loop with its checkpoint, history and clock;
* :mod:`heuristics.neural.training` REINFORCE with a greedy-rollout baseline (Eq. 9, 10);
* :mod:`heuristics.neural.inference` weights to priorities to orders;
* :mod:`heuristics.neural.regal` the REGAL GNN and its BRKGA (REGAL Section 2, App. A.3);
* :mod:`heuristics.neural.regal_training` REINFORCE for the REGAL GNN (REGAL Section 2.3);
* :mod:`heuristics.neural.history` training curves as a figure;
* :mod:`heuristics.neural.weights` saving / loading weights, the shipped files.
"""
