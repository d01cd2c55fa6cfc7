"""Write a neutral :class:`~solvers.model.Model` as a free-format MPS file.

Any MILP solver reads the result (``highspy.Highs().readModel``,
``pyscipopt.Model().readProblem``, ``gurobi_cl``, ...), so a model built by
:mod:`formulations` can be archived, shared or solved outside Python.  Layout:

* ``NAME``; ``OBJSENSE`` / ``MAX`` when the model maximises (minimising is the MPS
  default and writes no section);
* ``ROWS``: the objective row ``obj`` (type ``N``) first, then one row ``R<i>`` per
  constraint ``i`` in model order: ``E`` if ``lower == upper``, ``G`` if only
  ``lower`` is finite, ``L`` if only ``upper`` is, ``G`` plus a ``RANGES`` entry
  ``upper - lower`` if both are (a two-sided row), ``N`` if neither;
* ``COLUMNS`` in column order, runs of integer columns between
  ``MARKER 'MARKER' 'INTORG'`` / ``'INTEND'`` lines.  A column with no entry gets an
  explicit ``obj 0`` entry, since a column exists in MPS only through its entries;
* ``RHS``: the non-zero right-hand sides, and the objective offset as the right-hand
  side of ``obj`` **with its sign negated**: the MPS convention (followed by HiGHS,
  SCIP, Gurobi and CPLEX) is ``objective = c.x - rhs(obj)``, so an offset ``+d``
  is written ``obj -d``;
* ``RANGES`` and ``BOUNDS`` only where needed: integer columns get explicit bounds
  (``BV`` for ``[0, 1]``, else ``LI`` / ``UI``, ``MI`` / ``PL`` for infinite ones),
  because some readers give an integer column without bounds the domain ``[0, 1]``;
  continuous columns get ``FX``, ``FR``, ``MI``, ``LO``, ``UP`` away from the default
  ``[0, +inf)``.  Upper bounds are written before lower bounds, so that readers that
  turn a negative ``UP`` on a column with lower bound 0 into a free lower bound are
  overruled by the ``LO`` line that follows;
* ``ENDATA``.

Column names come from the variable blocks (``y_3_1`` is entry ``(3, 1)`` of block
``y``; a one-element block keeps the bare block name), with characters other than
letters, digits, ``_`` and ``.`` replaced by ``_``; if that does not give unique
names, columns are named ``C<j>``.  Numbers are written with Python's shortest
round-trip ``repr``, so the file holds the model's data exactly.

The writer is vectorised (one sort of the matrix entries, string formatting in
bulk): a model with ``10^5`` rows and ``4 * 10^5`` non-zeros writes in about a second.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np

from solvers.model import Model, ObjSense

OBJ_ROW = "obj"
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_.]")


def _clean(name: str) -> str:
    return _BAD_CHARS.sub("_", name) or "_"


def column_names(model: Model) -> list[str]:
    """MPS names of the columns, from the variable blocks (module docstring)."""
    names: list[str] = [""] * model.num_vars
    for block in model.blocks.values():
        base = _clean(block.name)
        if block.size == 1:
            names[block.start] = base
            continue
        if len(block.shape) == 1:
            labels = [f"{base}_{i}" for i in range(block.size)]
        else:
            grid = np.indices(block.shape).reshape(len(block.shape), -1).T.tolist()
            labels = [base + "_" + "_".join(map(str, ix)) for ix in grid]
        names[block.start : block.start + block.size] = labels
    if len(set(names)) != len(names) or "" in names:
        names = [f"C{j}" for j in range(model.num_vars)]
    return names


def _check(model: Model) -> None:
    lo, hi = model.row_lower, model.row_upper
    bad = np.flatnonzero(np.isnan(lo) | np.isnan(hi) | (lo > hi) | (lo == math.inf) | (hi == -math.inf))
    if bad.size:
        r = int(bad[0])
        raise ValueError(f"row {r} has bounds [{lo[r]}, {hi[r]}], an empty range that MPS cannot express")
    vlo, vhi = model.lower, model.upper
    bad = np.flatnonzero((vlo == math.inf) | (vhi == -math.inf))
    if bad.size:
        j = int(bad[0])
        raise ValueError(f"variable {j} has bounds [{vlo[j]}, {vhi[j]}], which MPS cannot express")


def _rows_section(lo: np.ndarray, hi: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """ROWS lines, the right-hand side and the range of every row (NaN: none)."""
    flo, fhi = np.isfinite(lo), np.isfinite(hi)
    eq = flo & fhi & (lo == hi)
    kinds = np.where(eq, "E", np.where(flo, "G", np.where(fhi, "L", "N")))
    rhs = np.where(flo, lo, np.where(fhi, hi, 0.0))
    rng = np.where(flo & fhi & ~eq, hi - lo, np.nan)
    lines = [f" {t} R{i}" for i, t in enumerate(kinds.tolist())]
    return lines, rhs, rng


def _columns_section(model: Model, cols: list[str]) -> list[str]:
    """COLUMNS lines: objective and matrix entries sorted by column, integer runs in markers."""
    n, nrows = model.num_vars, model.num_rows
    a = model.matrix("csc")
    c = model.objective
    counts = np.diff(a.indptr)
    obj_cols = np.flatnonzero((c != 0) | (counts == 0))  # an empty column still needs one entry
    # entries as (column, row) with the objective as row -1, sorted column-major, objective first
    ent_col = np.concatenate([obj_cols, np.repeat(np.arange(n), counts)])
    ent_row = np.concatenate([np.full(obj_cols.size, -1), a.indices.astype(np.int64)])
    ent_val = np.concatenate([c[obj_cols], a.data])
    order = np.lexsort((ent_row, ent_col))
    ent_col, ent_row, ent_val = ent_col[order], ent_row[order], ent_val[order]
    row_names = np.array([OBJ_ROW] + [f"R{i}" for i in range(nrows)], dtype=object)
    col_names = np.array(cols, dtype=object)
    lines = [
        f"    {cn} {rn} {v!r}"
        for cn, rn, v in zip(col_names[ent_col].tolist(), row_names[ent_row + 1].tolist(), ent_val.tolist())
    ]
    is_int = model.is_integer
    if not is_int.any():
        return lines
    # each column has >= 1 entry, so column j's lines start at first[j]
    first = np.searchsorted(ent_col, np.arange(n + 1))
    edge = np.diff(np.r_[0, is_int.astype(np.int8), 0])
    starts, ends = np.flatnonzero(edge == 1), np.flatnonzero(edge == -1)  # integer runs [start, end)
    out: list[str] = []
    pos = 0
    for r, (s, e) in enumerate(zip(first[starts].tolist(), first[ends].tolist())):
        out.extend(lines[pos:s])
        out.append(f"    MARKER{r} 'MARKER' 'INTORG'")
        out.extend(lines[s:e])
        out.append(f"    MARKER{r} 'MARKER' 'INTEND'")
        pos = e
    out.extend(lines[pos:])
    return out


def _bounds_section(model: Model, cols: list[str]) -> list[str]:
    """BOUNDS lines, upper bound before lower bound for each column."""
    lo, hi, is_int = model.lower, model.upper, model.is_integer
    name = np.array(cols, dtype=object)
    flo, fhi = np.isfinite(lo), np.isfinite(hi)
    # (column, order within the column, line) triples, assembled per bound type
    parts: list[tuple[np.ndarray, int, list[str]]] = []

    def add(mask: np.ndarray, rank: int, kind: str, values: np.ndarray | None = None) -> None:
        idx = np.flatnonzero(mask)
        if values is None:
            text = [f" {kind} BND {cn}" for cn in name[idx].tolist()]
        else:
            text = [f" {kind} BND {cn} {v!r}" for cn, v in zip(name[idx].tolist(), values[idx].tolist())]
        parts.append((idx, rank, text))

    binary = is_int & (lo == 0) & (hi == 1)
    gen = is_int & ~binary
    add(binary, 0, "BV")
    add(gen & fhi, 0, "UI", hi)
    add(gen & ~fhi, 0, "PL")
    add(gen & flo, 1, "LI", lo)
    add(gen & ~flo, 1, "MI")
    cont = ~is_int
    fixed = cont & flo & fhi & (lo == hi)
    free = cont & ~flo & ~fhi
    add(fixed, 0, "FX", lo)
    add(free, 0, "FR")
    rest = cont & ~fixed & ~free
    add(rest & fhi, 0, "UP", hi)
    add(rest & ~flo, 1, "MI")
    add(rest & flo & (lo != 0), 1, "LO", lo)
    if not any(len(t) for _, _, t in parts):
        return []
    col = np.concatenate([p[0] for p in parts])
    rank = np.concatenate([np.full(p[0].size, p[1]) for p in parts])
    text = np.array([line for p in parts for line in p[2]], dtype=object)
    return text[np.lexsort((rank, col))].tolist()


def mps_lines(model: Model) -> list[str]:
    """The free-format MPS text of ``model``, one entry per line (module docstring).

    Raises :class:`ValueError` for a row with an empty range (``lower > upper``) or
    a variable bound MPS cannot hold (``lower = +inf`` or ``upper = -inf``)."""
    _check(model)
    cols = column_names(model)
    out = [f"NAME {_clean(model.name)}"]
    if model.sense is ObjSense.MAXIMIZE:
        out += ["OBJSENSE", "    MAX"]
    row_lines, rhs, rng = _rows_section(model.row_lower, model.row_upper)
    out += ["ROWS", f" N {OBJ_ROW}", *row_lines]
    out += ["COLUMNS", *_columns_section(model, cols)]
    out.append("RHS")
    if model.obj_offset != 0:
        out.append(f"    RHS {OBJ_ROW} {-model.obj_offset!r}")  # objective = c.x - rhs(obj)
    nz = np.flatnonzero(rhs != 0)
    out += [f"    RHS R{i} {v!r}" for i, v in zip(nz.tolist(), rhs[nz].tolist())]
    two_sided = np.flatnonzero(~np.isnan(rng))
    if two_sided.size:
        out.append("RANGES")
        out += [f"    RNG R{i} {v!r}" for i, v in zip(two_sided.tolist(), rng[two_sided].tolist())]
    bounds = _bounds_section(model, cols)
    if bounds:
        out += ["BOUNDS", *bounds]
    out.append("ENDATA")
    return out


def write_mps(model: Model, path: str | os.PathLike[str]) -> Path:
    """Write ``model`` to ``path`` as a free-format MPS file (module docstring) and
    return the path."""
    p = Path(path)
    text = "\n".join(mps_lines(model))
    p.write_text(text + "\n", encoding="ascii")
    return p
