"""Pipeline stages for PyTorch models: split points, layer balances and a certificate.

:func:`plan_pipeline` turns an ``nn.Module`` into a :class:`PipelinePlan` whose
``split_spec`` ``torch.distributed.pipelining.pipeline`` takes as is
(:mod:`mtpp.pipelining.plan`; :func:`trace_model` then :func:`plan_stages` to trace
once and plan for several ``k`` or rules); the DeepSpeed and torchgpipe partition rules are in
:mod:`mtpp.pipelining.baselines`, the stage chart in :mod:`mtpp.pipelining.plot`.
"""

from mtpp.pipelining.plan import (
    RULES,
    Balance,
    PipelinePlan,
    SplitPointError,
    Stage,
    TracedModel,
    plan_pipeline,
    plan_stages,
    trace_model,
)

__all__ = [
    "RULES",
    "Balance",
    "PipelinePlan",
    "SplitPointError",
    "Stage",
    "TracedModel",
    "plan_pipeline",
    "plan_stages",
    "trace_model",
]
