"""mtpp's core: what every package of the project may import, and nothing else.

* :mod:`~mtpp.core.graph` (the computation graph, CSR arrays), :mod:`~mtpp.core.schema`
  (its JSON document), :mod:`~mtpp.core.problem` (graph + k + machine);
* :mod:`~mtpp.core.cost` (block costs, MTPP Eq. 1-3) and :mod:`~mtpp.core.evaluate` (the
  independent evaluator every partition passes); :mod:`~mtpp.core.memory` (peak memory
  of an order, Topoformer Eq. 1-3, 15); :mod:`~mtpp.core.simulator` (the placement cost
  model, REGAL App. A.1);
* :mod:`~mtpp.core.devices`, :mod:`~mtpp.core.device_sets`, :mod:`~mtpp.core.presets`
  (machines: one device for pipelining, device sets for placement, the named presets);
* :mod:`~mtpp.core.rounding` (provable float error bounds), :mod:`~mtpp.core.validation`
  (argument checks), :mod:`~mtpp.core.errors` (:class:`~mtpp.core.errors.MtppError` at the
  root of every error mtpp raises), :mod:`~mtpp.core.result` and :mod:`~mtpp.core.records`
  (the result contract and bound records), :mod:`~mtpp.core.jit` (numba with a Python
  fallback), :mod:`~mtpp.core.memory_cap`, :mod:`~mtpp.core.fingerprint`.

The core imports nothing outside itself (``tests/test_layers.py``).
"""
