"""Pipeline stages for PyTorch models: split points, layer balances and a certificate.

:func:`plan_pipeline` turns an ``nn.Module`` into a :class:`PipelinePlan` whose
``split_spec`` ``torch.distributed.pipelining.pipeline`` takes as is
(:mod:`mtpp.pipelining.plan`); the DeepSpeed and torchgpipe partition rules are in
:mod:`mtpp.pipelining.baselines`, the stage chart in :mod:`mtpp.pipelining.plot`.
"""

from mtpp.pipelining.plan import RULES, Balance, PipelinePlan, SplitPointError, Stage, plan_pipeline

__all__ = ["RULES", "Balance", "PipelinePlan", "SplitPointError", "Stage", "plan_pipeline"]
