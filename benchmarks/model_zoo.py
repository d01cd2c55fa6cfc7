"""Modern transformers, certified at every k: what a new user gets from
``mtpp.from_torch`` then one ``mtpp.certify(graph, k=[...], budget=...)`` per graph
(issue 75).

Every model is built offline from its ``transformers`` config with random weights
(seed 0), small hidden sizes (:data:`ARCHITECTURES`), batch 1 and sequence
:data:`SEQ`, imported at both granularities (``default``: one op per priced kernel;
``ops``: ``keep_zero_cost_ops=True``, every view, constant, input and output its own
op) and priced on the ``a100`` preset, which the graph records, so ``certify(graph,
ks)`` prices cuts on its link.  Per graph and k the table gives:

* ``ops``: nodes of the imported graph; ``ideals``: ideals of the graph after presolve
  (:mod:`heuristics.partition.presolve`; at ``k = 2``, enumeration capped at
  ``--max-ideals``: ``>cap`` = too wide for the exact ideal DP);
* ``LB/UB``, ``proven`` and ``method`` (the method whose bound is the certificate's);
* ``s``: the wall time of the one all-k certify call (the same on each of its rows);
* ``uniform``, ``params``, ``time``: DeepSpeed's ``uniform`` and ``parameters`` rules
  and torchgpipe's balance by time (:mod:`mtpp.pipelining.baselines`, through
  :func:`mtpp.pipelining.plan.plan_stages` at the model's layer boundaries), each
  plan's bottleneck over mtpp's partition's (so 1.25 = the baseline's pipeline is
  25 % slower), on the ``default`` graph only (the baselines cut at module calls).
  torchgpipe balances measured times: each layer timed on this machine's CPU.

Run from the repository root::

    python -m benchmarks.model_zoo                       # every architecture, 2 and 8 layers
    python -m benchmarks.model_zoo --arch llama qwen2 --layers 16 32 --budget 60
    python -m benchmarks.model_zoo --granularity default --ks 2 4 8

A 2-core machine shared with others runs the default set in tens of minutes, most
of it in the budgets of the graphs not proven at once.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

from benchmarks._common import git_commit, print_table

SEQ = 64
"""Sequence length of every model's input (the audio encoder of Whisper: 2 x 32 frames)."""
KS = (2, 4, 8, 16, 32, 64)
GRANULARITIES = ("default", "ops")
BASELINES = ("deepspeed-uniform", "deepspeed-parameters", "torchgpipe-time")


def _by_name() -> type:
    import torch

    class ByName(torch.nn.Module):  # type: ignore[misc,name-defined]
        """``model`` called with its positional arguments passed by ``names``, and its
        last hidden state returned (encoder-decoders take many optional arguments)."""

        def __init__(self, model: Any, names: tuple[str, ...]) -> None:
            super().__init__()
            self.model = model
            self.names = names

        def forward(self, *args: Any) -> Any:
            return self.model(**dict(zip(self.names, args)), use_cache=False).last_hidden_state

    return ByName


def _ByName(model: Any, names: tuple[str, ...]) -> Any:
    return _by_name()(model, names)


def _decoder(family: str) -> Callable[[int], tuple[Any, tuple[Any, ...]]]:
    """A Llama-style causal LM (RoPE, grouped-query attention, gated MLP)."""

    def build(layers: int) -> tuple[Any, tuple[Any, ...]]:
        import torch
        import transformers

        config_cls, model_cls = {
            "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
            "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM),
            "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
        }[family]
        config = config_cls(
            hidden_size=256,
            intermediate_size=688,
            num_hidden_layers=layers,
            num_attention_heads=8,
            num_key_value_heads=2,
            vocab_size=1000,
            max_position_embeddings=4 * SEQ,
            use_cache=False,
        )
        return model_cls(config).eval(), (torch.randint(0, 1000, (1, SEQ)),)

    return build


def _mixtral(layers: int) -> tuple[Any, tuple[Any, ...]]:
    """Mixtral-style: every MLP a mixture of 8 experts, 2 per token."""
    import torch
    import transformers

    config = transformers.MixtralConfig(
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=layers,
        num_attention_heads=8,
        num_key_value_heads=2,
        num_local_experts=8,
        num_experts_per_tok=2,
        vocab_size=1000,
        max_position_embeddings=4 * SEQ,
        use_cache=False,
    )
    return transformers.MixtralForCausalLM(config).eval(), (torch.randint(0, 1000, (1, SEQ)),)


def _t5(decoder: bool) -> Callable[[int], tuple[Any, tuple[Any, ...]]]:
    """T5 (relative position bias computed in the first layer, read by every layer)."""

    def build(layers: int) -> tuple[Any, tuple[Any, ...]]:
        import torch
        import transformers

        config = transformers.T5Config(
            d_model=256,
            d_kv=32,
            d_ff=1024,
            num_layers=layers,
            num_decoder_layers=layers,
            num_heads=8,
            vocab_size=1000,
            use_cache=False,
        )
        ids = torch.randint(0, 1000, (1, SEQ))
        if not decoder:
            return transformers.T5EncoderModel(config).eval(), (ids,)
        model = _ByName(transformers.T5Model(config).eval(), ("input_ids", "decoder_input_ids"))
        return model, (ids, torch.randint(0, 1000, (1, SEQ // 2)))

    return build


def _whisper(layers: int) -> tuple[Any, tuple[Any, ...]]:
    """Whisper encoder-decoder (two convolutions over 80 mel bins, then transformers)."""
    import torch
    import transformers

    config = transformers.WhisperConfig(
        d_model=256,
        encoder_layers=layers,
        decoder_layers=layers,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=1024,
        decoder_ffn_dim=1024,
        num_mel_bins=80,
        max_source_positions=SEQ // 2,
        max_target_positions=SEQ,
        vocab_size=1000,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
        suppress_tokens=[],
        begin_suppress_tokens=[],
        use_cache=False,
    )
    model = _ByName(transformers.WhisperModel(config).eval(), ("input_features", "decoder_input_ids"))
    return model, (torch.randn(1, 80, SEQ), torch.randint(0, 1000, (1, SEQ // 2)))


ARCHITECTURES: dict[str, Callable[[int], tuple[Any, tuple[Any, ...]]]] = {
    "llama": _decoder("llama"),
    "mistral": _decoder("mistral"),
    "qwen2": _decoder("qwen2"),
    "mixtral": _mixtral,
    "t5-encoder": _t5(decoder=False),
    "t5": _t5(decoder=True),
    "whisper": _whisper,
}
"""Each architecture's builder: layers -> (module in eval mode, example arguments)."""


def _ideals(graph: Any, cap: int) -> str:
    """Ideals of ``graph`` after presolve (at k = 2, on its recorded machine), or ``>cap``."""
    from heuristics.partition.ideals import enumerate_ideals
    from heuristics.partition.presolve import presolve
    from mtpp.core.problem import Problem

    machine = graph.machine
    memory = math.inf if machine is None or machine.memory is None else machine.memory
    problem = Problem(graph, 2, bandwidth=1.0 if machine is None else machine.bandwidth, memory=memory)
    lattice = enumerate_ideals(presolve(problem).problem.graph, cap)
    return f">{cap:,}" if lattice is None else f"{lattice.count:,}"


def run_graph(
    arch: str, layers: int, granularity: str, ks: tuple[int, ...], budget: float, cap: int
) -> list[tuple[object, ...]]:
    """The table's rows of one architecture at one depth and granularity."""
    import torch

    from mtpp.engine.certify import certify
    from mtpp.io.torch_model import from_torch
    from mtpp.pipelining.plan import plan_stages, trace_model

    torch.manual_seed(0)
    module, args = ARCHITECTURES[arch](layers)
    traced = None
    if granularity == "default":
        traced = trace_model(module, args, device_spec="a100")
        graph = traced.graph
    else:
        graph = from_torch(module, args, device_spec="a100", keep_zero_cost_ops=True)
    ideals = _ideals(graph, cap)
    t = time.perf_counter()
    certificates = certify(graph, list(ks), budget=budget)
    seconds = time.perf_counter() - t
    rows: list[tuple[object, ...]] = []
    for cert in certificates:
        ratios = ["-"] * len(BASELINES)
        if traced is not None:
            for i, rule in enumerate(BASELINES):
                plan = plan_stages(traced, cert.k, rule=rule, certificate=cert)
                ratios[i] = f"{plan.bottleneck / cert.upper_bound:.3f}"
        rows.append(
            (
                f"{arch}-{layers}",
                granularity,
                graph.n,
                ideals,
                cert.k,
                f"{cert.lower_bound / cert.upper_bound:.5f}" if cert.upper_bound else "1",
                "yes" if cert.optimal else "no",
                cert.lower_bound_method,
                f"{seconds:.1f}",
                *ratios,
            )
        )
    return rows


HEADER = ("graph", "gran.", "ops", "ideals", "k", "LB/UB", "proven", "method", "s", "uniform", "params", "time")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", nargs="+", choices=sorted(ARCHITECTURES), default=list(ARCHITECTURES))
    parser.add_argument("--layers", nargs="+", type=int, default=[2, 8])
    parser.add_argument("--granularity", nargs="+", choices=GRANULARITIES, default=list(GRANULARITIES))
    parser.add_argument("--ks", nargs="+", type=int, default=list(KS))
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per certify call (all ks)")
    parser.add_argument("--max-ideals", type=int, default=2_000_000, help="cap of the ideals column")
    args = parser.parse_args(argv)
    print(f"model zoo, commit {git_commit()}, a100 pricing, seq {SEQ}, budget {args.budget:g} s per graph")
    rows: list[tuple[object, ...]] = []
    for arch in args.arch:
        for layers in args.layers:
            for granularity in args.granularity:
                try:
                    got = run_graph(arch, layers, granularity, tuple(args.ks), args.budget, args.max_ideals)
                except Exception as exc:  # an architecture the importer cannot trace: say so, go on
                    print(f"{arch}-{layers} {granularity}: {type(exc).__name__}: {exc}"[:300])
                    failed = (f"{arch}-{layers}", granularity, *["-"] * 5, f"failed ({type(exc).__name__})")
                    got = [(*failed, *["-"] * (len(HEADER) - len(failed)))]
                rows.extend(got)
                print_table(HEADER, got)
                print(flush=True)
    print("all graphs:")
    print_table(HEADER, rows)


if __name__ == "__main__":
    main()
