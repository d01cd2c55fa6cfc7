"""Every path a command names, checked before the command does any work.

A graph, partition, ONNX model or device-set file must be a readable file; ``-o``
and ``--plot`` must be writable (the directory exists, the path is not a directory)
and ``--plot`` must end in a known format (:data:`mtpp.pipelining.plot.FORMATS`);
``--export-dir`` / ``--out`` must be a directory or creatable; the batch ``--store``
must be writable, the store of ``table`` / ``plot`` readable.  A failure raises
:class:`mtpp.core.errors.InputFileError` or :class:`~mtpp.core.errors.InvalidParameterError`
(one line, exit 2) before a solve has run, so a typo in ``-o`` never costs a minute
of solving.  (An error while writing, such as a full disk, is
:class:`mtpp.cli.output.WriteError`: exit 1, one line naming the path.)
"""

from __future__ import annotations

import argparse
import os

from mtpp.io.json_file import check_directory, check_readable, check_writable

# argument name -> what the file is, for the messages
INPUT_FILES = {"file": "graph file", "partition": "partition file"}  # --weights may name shipped weights
OUTPUT_FILES = {"output": "output file", "plot": "plot file"}
DIRECTORIES = {"export_dir": "export directory", "out": "output directory"}


def check_paths(args: argparse.Namespace) -> None:
    """Raise :class:`InputFileError` for the first unusable path among ``args``."""
    for name, what in INPUT_FILES.items():
        path = getattr(args, name, None)
        if isinstance(path, str):
            check_readable(path, what)
    if args.command == "import":  # ``train`` has a ``model`` too: a model kind, not a file
        check_readable(args.model, "ONNX model")
    devices = getattr(args, "devices", None)
    if isinstance(devices, str) and (devices.endswith(".json") or os.path.exists(devices)):
        check_readable(devices, "device-set JSON file")
    for name, what in OUTPUT_FILES.items():
        path = getattr(args, name, None)
        if isinstance(path, str):
            check_writable(path, what)
    if isinstance(getattr(args, "plot", None), str):
        from mtpp.pipelining.plot import check_plot_path

        check_plot_path(args.plot)
    for name, what in DIRECTORIES.items():
        path = getattr(args, name, None)
        if isinstance(path, str):
            check_directory(path, what)
    store = getattr(args, "store", None)
    if args.command == "batch" and isinstance(store, str):
        check_writable(store, "results store")
    elif isinstance(store, str):
        check_readable(store, "results store")
