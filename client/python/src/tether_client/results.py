"""Results as arrays: a run's (or a co-simulation's, or an evaluation's)
frames as numpy arrays with their names, a pandas frame, CSV, and pictures
(plotting.py).

Column names are the CLI's (``tether run --format csv``): ``t``, the
coordinate names, ``v_NAME``, ``a_NAME``, ``lambda_C``, ``g_C``,
``gdot_C``, ``dynamics_residual``, ``constraint_residual``, the output
names. Tether is unit-agnostic (times in "s", each coordinate and each
constraint in its own unit); ``Trajectory.units`` says how each column's
unit follows from those: ``[x]`` is the unit of coordinate x, ``[rod]``
that of constraint rod, ``[E]`` the energy unit, so a multiplier is in
``[E]/[rod]`` (M a = F - G^T lambda: G^T lambda is a generalized force).
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field
from typing import (Any, Dict, Iterable, List, Optional, Sequence, Tuple,
                    Union)

import numpy as np
from google.protobuf import json_format

from tether_client._proto.tether.v1 import simulation_pb2

__all__ = ["Names", "Trajectory"]

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Names:
    """The names of a description's coordinates, constraints and outputs,
    in order (what a Frame's arrays are indexed by)."""
    coordinates: Tuple[str, ...] = ()
    constraints: Tuple[str, ...] = ()
    outputs: Tuple[str, ...] = ()

    @classmethod
    def from_spec(cls, spec: Any) -> "Names":
        """The names in a SimulationSpec (or a SystemSpec)."""
        system = spec.system if hasattr(spec, "system") else spec
        return cls(tuple(system.coordinates),
                   tuple(c.name for c in system.constraints),
                   tuple(o.name for o in system.outputs))

    def sized(self, d: int, m: int, k: int) -> "Names":
        """These names, or q0.., c0.., y0.. where a list has not the size of
        the frames' arrays (no description given, or another one)."""
        def pick(names: Tuple[str, ...], prefix: str, n: int) -> Tuple[str, ...]:
            return names if len(names) == n else tuple(
                "%s%d" % (prefix, i) for i in range(n))
        return Names(pick(self.coordinates, "q", d),
                     pick(self.constraints, "c", m),
                     pick(self.outputs, "y", k))


def _matrix(rows: List[Sequence[float]], width: int) -> np.ndarray:
    out = np.full((len(rows), width), np.nan)
    for i, row in enumerate(rows):
        n = min(len(row), width)
        out[i, :n] = row[:n]
    return out


def _header_cell(name: str, unit: str) -> str:
    if not unit:
        return name
    return "%s %s" % (name, unit if unit.startswith("[") else "[%s]" % unit)


@dataclass
class Trajectory:
    """Frames as arrays: row i is frame i, in the order received.

    ``t`` (n,), ``step`` (n,), ``q``, ``v``, ``a`` (n, d), ``multipliers``
    (n, m; the proto's ``lambda``), ``position_residuals`` (n, m: e =
    g(q, t)), ``velocity_residuals`` (n, m: e'), ``dynamics_residual`` and
    ``constraint_residual`` (n,), ``outputs`` (n, k); ``names`` labels the
    columns and ``certificate`` is the run's Certificate (None when the
    run had none, or for a co-simulation's or an evaluation's frames)."""
    t: np.ndarray
    step: np.ndarray
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    multipliers: np.ndarray
    position_residuals: np.ndarray
    velocity_residuals: np.ndarray
    dynamics_residual: np.ndarray
    constraint_residual: np.ndarray
    outputs: np.ndarray
    names: Names = field(default_factory=Names)
    certificate: Any = None

    @classmethod
    def from_frames(cls, frames: Iterable[Any], names: Optional[Names] = None,
                    certificate: Any = None) -> "Trajectory":
        """The arrays of tether.v1 Frame messages (all of one description)."""
        frames = list(frames)
        d = max((len(f.q) for f in frames), default=len(names.coordinates) if names else 0)
        m = max((len(getattr(f, "lambda")) for f in frames),
                default=len(names.constraints) if names else 0)
        k = max((len(f.outputs) for f in frames),
                default=len(names.outputs) if names else 0)
        return cls(
            t=np.array([f.t for f in frames], dtype=float),
            step=np.array([f.step for f in frames], dtype=np.int64),
            q=_matrix([f.q for f in frames], d),
            v=_matrix([f.v for f in frames], d),
            a=_matrix([f.a for f in frames], d),
            multipliers=_matrix([getattr(f, "lambda") for f in frames], m),
            position_residuals=_matrix([f.residuals.position for f in frames], m),
            velocity_residuals=_matrix([f.residuals.velocity for f in frames], m),
            dynamics_residual=np.array([f.residuals.dynamics for f in frames], dtype=float),
            constraint_residual=np.array([f.residuals.constraint for f in frames],
                                         dtype=float),
            outputs=_matrix([f.outputs for f in frames], k),
            names=(names or Names()).sized(d, m, k),
            certificate=certificate)

    @classmethod
    def from_jsonl(cls, path: PathLike, spec: Any = None) -> "Trajectory":
        """The frames of ``tether run``'s JSON-lines output (one Frame a
        line, then {"certificate": ...}); ``spec`` (a SimulationSpec, or the
        path of its JSON file) names the columns. A line that is neither
        raises ValueError naming the file and line."""
        from tether_client.messages import load_spec
        if isinstance(spec, (str, os.PathLike)):
            spec = load_spec(spec)
        frames = []
        certificate = None
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                    if isinstance(value, dict) and "certificate" in value:
                        certificate = json_format.ParseDict(
                            value["certificate"], simulation_pb2.Certificate())
                    else:
                        frames.append(json_format.ParseDict(
                            value, simulation_pb2.Frame()))
                except (ValueError, json_format.ParseError) as error:
                    raise ValueError("%s:%d: not a Frame nor a certificate "
                                     "line: %s" % (path, number, error)) from None
        return cls.from_frames(frames, Names.from_spec(spec) if spec else None,
                               certificate)

    def __len__(self) -> int:
        return len(self.t)

    def columns(self) -> List[Tuple[str, str, np.ndarray]]:
        """(name, unit, values) of every column, in the CLI's CSV order."""
        n = self.names
        cols: List[Tuple[str, str, np.ndarray]] = [
            ("step", "", self.step), ("t", "s", self.t)]
        cols += [(c, "[%s]" % c, self.q[:, i]) for i, c in enumerate(n.coordinates)]
        cols += [("v_" + c, "[%s]/s" % c, self.v[:, i])
                 for i, c in enumerate(n.coordinates)]
        cols += [("a_" + c, "[%s]/s^2" % c, self.a[:, i])
                 for i, c in enumerate(n.coordinates)]
        cols += [("lambda_" + c, "[E]/[%s]" % c, self.multipliers[:, i])
                 for i, c in enumerate(n.constraints)]
        cols += [("g_" + c, "[%s]" % c, self.position_residuals[:, i])
                 for i, c in enumerate(n.constraints)]
        cols += [("gdot_" + c, "[%s]/s" % c, self.velocity_residuals[:, i])
                 for i, c in enumerate(n.constraints)]
        cols += [("dynamics_residual", "[E]/[q]", self.dynamics_residual),
                 ("constraint_residual", "[g]/s^2", self.constraint_residual)]
        cols += [(o, "", self.outputs[:, i]) for i, o in enumerate(n.outputs)]
        return cols

    @property
    def units(self) -> Dict[str, str]:
        """Column name -> unit ("" where the description decides, as for
        outputs and step)."""
        return {name: unit for name, unit, _ in self.columns()}

    def to_pandas(self) -> Any:
        """A pandas DataFrame, one column per columns() entry; its
        ``attrs["units"]`` is ``units``. Needs pandas (an optional
        dependency: pip install tether-client[pandas], or python3-pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Trajectory.to_pandas needs pandas (Debian: "
                              "python3-pandas; pip: tether-client[pandas])") from None
        frame = pd.DataFrame({name: values for name, _, values in self.columns()})
        frame.attrs["units"] = self.units
        return frame

    def to_csv(self, path: PathLike) -> None:
        """Writes a CSV file: a header of "name unit" cells ("t [s]", "x [x]",
        "v_x [x]/s", "lambda_rod [E]/[rod]"; the name alone where the
        description decides the unit), then one row a frame, every number
        with 17 significant digits (read back exactly)."""
        cols = self.columns()
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow([_header_cell(name, unit) for name, unit, _ in cols])
            for i in range(len(self)):
                writer.writerow([int(values[i]) if name == "step" else
                                 repr(float(values[i]))
                                 for name, _, values in cols])

    def plot(self, path: Optional[PathLike] = None, **kwargs: Any) -> Any:
        """The coordinates, the multipliers and each constraint's residual
        against the certificate's bound, in one matplotlib figure; written
        to ``path`` (PNG, SVG, PDF: by its suffix) when given. See
        tether_client.plotting.plot_trajectory."""
        from tether_client.plotting import plot_trajectory
        return plot_trajectory(self, path, **kwargs)

    def animate(self, points: Sequence[Tuple[str, str]], path: PathLike,
                **kwargs: Any) -> Any:
        """A GIF (or MP4) of a planar mechanism: each point is a pair of
        coordinate or output names (x, y). See
        tether_client.plotting.animate_trajectory."""
        from tether_client.plotting import animate_trajectory
        return animate_trajectory(self, points, path, **kwargs)
