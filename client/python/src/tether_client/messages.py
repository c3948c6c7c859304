"""The protobuf messages of tether.v1 in one namespace (``pb``), and the
description file readers.

simulation.proto, ensemble.proto and simulator.proto share the namespace: ``pb.SimulationSpec``,
``pb.RunRequest``, ``pb.IntegratorSpec.RK4``. A Frame's Lagrange multipliers
are the field ``lambda``, a Python keyword: read them as
``frame.multipliers`` (an alias this module adds to the generated class) or
``getattr(frame, "lambda")``.
"""

from __future__ import annotations

import os
from typing import Any, Union

from google.protobuf import json_format

from tether_client._proto.tether.v1 import (ensemble_pb2, simulation_pb2,
                                            simulator_pb2)

__all__ = ["load_spec", "parse_spec", "pb"]


class _Messages:
    """Every message and enum of tether.v1 in one namespace."""

    def __init__(self, *modules: Any) -> None:
        for module in modules:
            for name in dir(module):
                if not name.startswith("_"):
                    setattr(self, name, getattr(module, name))

    def __getattr__(self, name: str) -> Any:  # for type checkers: any message
        raise AttributeError("tether.v1 has no message or enum %r" % name)


pb = _Messages(simulation_pb2, ensemble_pb2, simulator_pb2)


def _multipliers(frame: Any) -> Any:
    """The frame's Lagrange multipliers (the proto field ``lambda``), one
    per constraint, in the constraint's force-per-constraint-unit: M a = F
    - G^T lambda."""
    return getattr(frame, "lambda")


# The keyword alias: frame.multipliers is frame.lambda.
simulation_pb2.Frame.multipliers = property(_multipliers)


def parse_spec(text: Union[str, bytes]) -> Any:
    """A SimulationSpec from its protobuf JSON mapping (camelCase or the
    proto's snake_case field names; an unknown field is an error,
    json_format.ParseError, that names it)."""
    return json_format.Parse(text, simulation_pb2.SimulationSpec())


def load_spec(path: "Union[str, os.PathLike[str]]") -> Any:
    """Reads a description file (JSON) into a SimulationSpec."""
    with open(path, encoding="utf-8") as f:
        return parse_spec(f.read())
