"""Which machine prices a problem: the graph's own, a device asked for, or figures given.

A graph made by an importer records the machine it was priced on
(:attr:`mtpp.Graph.machine`, a :class:`mtpp.core.schema.Machine`: name, bandwidth,
memory, units).  :func:`choose` decides the bandwidth ``B`` and memory ``M`` of a call:

* a figure given explicitly (``bandwidth=``, ``memory=``) wins;
* else the device asked for (``device=``), else the graph's machine, gives it (its
  ``memory`` ``None`` is unlimited);
* else the defaults of :class:`mtpp.Problem`: ``B = 1``, ``M`` unlimited.

Two traps are caught here, at the boundary:

* a machine whose ``units`` are not the graph's is **refused**
  (:class:`UnitsMismatchError`): its bandwidth and memory mean nothing on that graph,
  so no answer computed from them could be right;
* a graph whose sizes are in bytes, with no machine recorded and none given, priced
  at the default ``B = 1`` (1 byte per time unit, 1 MB/s for microseconds) gets a
  one-line :class:`MachineWarning`: no cut ever pays there, so every certificate says
  "one stage".  It is a warning, not an error, because such files (written by
  ``mtpp import`` before graphs recorded their machine) must still load and run, and
  ``bandwidth=1`` given explicitly is a legitimate choice that silences it.  The
  command line prints it on stderr even with ``--quiet`` or ``--json``, and a
  certificate repeats it in its notes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from mtpp.core.errors import InvalidParameterError
from mtpp.core.schema import Machine, Units

BYTE_UNITS = frozenset({"bytes", "byte", "B"})
"""Size units in which ``B = 1`` (one byte per time unit) is never a real link."""


class MachineWarning(UserWarning):
    """A graph in bytes was priced at the default bandwidth ``B = 1``: no machine was
    recorded in it and none was given (module docstring)."""


class UnitsMismatchError(InvalidParameterError):
    """A machine's units are not the graph's: its bandwidth and memory cannot price it."""


def as_machine(value: Machine | Mapping[str, object]) -> Machine:
    """A :class:`Machine` from itself or a mapping of its fields (checked)."""
    if isinstance(value, Machine):
        return value
    if not isinstance(value, Mapping):
        raise InvalidParameterError(
            f"machine must be an mtpp.core.schema.Machine or a dict of its fields, got {value!r}"
        )
    from pydantic import ValidationError

    try:
        return Machine.model_validate(dict(value))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "machine"
        raise InvalidParameterError(f"machine {where}: {err['msg']}") from None


def check_units(graph_units: Mapping[str, str] | None, machine: Machine, graph_name: str | None = None) -> None:
    """Refuse ``machine`` (:class:`UnitsMismatchError`) when the graph has units and they
    are not the machine's."""
    if graph_units is None:
        return
    mine = machine.units.model_dump()
    if dict(graph_units) != mine:
        label = f"graph {graph_name!r}" if graph_name else "the graph"
        raise UnitsMismatchError(
            f"machine {machine.name!r} is in {_units(mine)} but {label} is in {_units(graph_units)}: "
            "its bandwidth and memory cannot price it; give bandwidth= and memory= in the graph's units"
        )


def _units(units: Mapping[str, str]) -> str:
    return f"{units.get('time', '?')} and {units.get('size', '?')}"


@dataclass(frozen=True)
class Choice:
    """What :func:`choose` decided: ``bandwidth``, ``memory`` (``inf``: unlimited), the
    ``machine`` that gave at least one of them (``None``: both given or the defaults),
    ``source`` (``"graph"``, ``"device"``, ``"given"`` or ``"default"``) and the
    ``warning`` to show, if any."""

    bandwidth: float
    memory: float
    machine: Machine | None
    source: str
    warning: str | None = None

    def describe(self) -> str:
        """One line for a result's notes and the command line: which machine priced it."""
        if self.machine is None:
            what = "none (bandwidth and memory given)" if self.source == "given" else "none"
        else:
            where = {"graph": "recorded in the graph", "device": "asked for"}.get(self.source, self.source)
            what = f"{self.machine.name} ({where})"
        memory = "unlimited" if math.isinf(self.memory) else f"{self.memory:g}"
        return f"machine: {what}; bandwidth {self.bandwidth:g}, memory {memory}"


def choose(
    graph_units: Mapping[str, str] | None,
    graph_machine: Machine | None,
    device: Machine | None,
    bandwidth: float | None,
    memory: float | None,
    graph_name: str | None = None,
) -> Choice:
    """The bandwidth and memory of a call (module docstring): explicit figures win,
    then ``device``, then the graph's machine, then ``B = 1`` and unlimited memory.
    Raises :class:`UnitsMismatchError` for a device whose units are not the graph's."""
    machine = graph_machine
    source = "graph"
    if device is not None:
        check_units(graph_units, device, graph_name)
        machine, source = device, "device"
    if machine is not None and bandwidth is not None and memory is not None:
        machine, source = None, "given"
    if machine is None:
        b = 1.0 if bandwidth is None else bandwidth
        m = math.inf if memory is None else memory
        given = source == "given" or bandwidth is not None
        warning = None
        if bandwidth is None and graph_units is not None and graph_units.get("size") in BYTE_UNITS:
            label = f"graph {graph_name!r}" if graph_name else "the graph"
            warning = (
                f"{label} is in {_units(graph_units)} but records no machine and none was given: bandwidth 1 "
                f"byte/{graph_units.get('time', 'unit')} makes every cut nearly free; pass device='a100' "
                "(--device) or the link's bandwidth"
            )
        return Choice(b, m, None, "given" if given else "default", warning)
    b = machine.bandwidth if bandwidth is None else bandwidth
    if memory is not None:
        m = memory
    else:
        m = math.inf if machine.memory is None else machine.memory
    return Choice(b, m, machine, source)


__all__ = ["BYTE_UNITS", "Choice", "Machine", "MachineWarning", "Units", "UnitsMismatchError", "as_machine", "choose"]
