"""Graphs in and out: mtpp's JSON and node-link files (``graph_file``), ONNX models
(``onnx_model``) and PyTorch modules (``torch_model``, needs the ``torch`` extra);
``json_file`` reads any JSON input and checks paths with one-line typed errors.

The model importers are imported on first use, so ``import mtpp.io`` needs neither
onnx nor torch.
"""

from mtpp.io.graph_file import graph_from_dict, load_graph

__all__ = ["graph_from_dict", "load_graph"]
