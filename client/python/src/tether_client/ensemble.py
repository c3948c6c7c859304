"""Ensembles (Simulator.RunEnsemble): the request from numpy arrays, the
results as numpy arrays.

Names an instance may set: a parameter, a coordinate ``x`` (its initial
q), ``der(x)`` (its initial v) or an input. Parameters are folded into the
compiled model, so each distinct parameter set costs the server one
compilation; initial states and inputs share the template's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from tether_client._proto.tether.v1 import ensemble_pb2
from tether_client.results import Names, Trajectory

__all__ = ["EnsembleReduction", "EnsembleResult", "ensemble_spec"]


def ensemble_spec(values: Optional[Mapping[str, Sequence[float]]] = None,
                  sweeps: Optional[Mapping[str, Tuple[float, float, int]]] = None,
                  random: Optional[Mapping[str, Tuple[str, float, float]]] = None,
                  count: Optional[int] = None, seed: int = 0) -> Any:
    """An EnsembleSpec.

    ``values``: name -> array of N values, N explicit instances (every
    array the same length). ``sweeps``: name -> (start, stop, count), a grid
    in the mapping's order, the first slowest. ``random``: name ->
    ("uniform", a, b) or ("normal", mu, sigma), ``count`` draws per grid
    point under ``seed`` (1 when not given; ``count`` without ``random``
    is a ValueError, as the server's and the command line's). The instances
    are explicit x grid x draws."""
    spec = ensemble_pb2.EnsembleSpec(seed=_whole("seed", seed, 0, 2**64 - 1))
    if values:
        arrays = {}
        for name, v in values.items():
            a = np.asarray(v, dtype=float)
            if a.ndim != 1:
                raise ValueError("values[%r]: expected a one-dimensional array (one value "
                                 "per instance), found shape %s" % (name, a.shape))
            if len(a) == 0:
                raise ValueError("values[%r]: expected at least one value (one per "
                                 "instance), found none" % (name,))
            arrays[name] = a
        lengths = {len(a) for a in arrays.values()}
        if len(lengths) != 1:
            raise ValueError("values: every array must have the same length, "
                             "found lengths %s" % sorted(lengths))
        for i in range(lengths.pop()):
            instance = spec.instances.add()
            for name, a in arrays.items():
                instance.values.add(name=name, value=float(a[i]))
    for name, (start, stop, n) in (sweeps or {}).items():
        spec.sweeps.add(name=name, start=float(start), stop=float(stop),
                        count=_whole("sweeps[%r] count" % (name,), n, 1, 2**32 - 1))
    kinds = {"uniform": ensemble_pb2.EnsembleDistribution.UNIFORM,
             "normal": ensemble_pb2.EnsembleDistribution.NORMAL}
    for name, (kind, low_or_mean, high_or_sigma) in (random or {}).items():
        if kind not in kinds:
            raise ValueError("random[%r]: expected 'uniform' or 'normal', "
                             "found %r" % (name, kind))
        spec.random.add(name=name, kind=kinds[kind], a=float(low_or_mean),
                        b=float(high_or_sigma))
    if random:
        spec.random_count = 1 if count is None else _whole("count", count, 1, 2**64 - 1)
    elif count is not None:
        raise ValueError("count: draws per grid point need random (name -> (kind, a, b)); "
                         "found count=%r and no random" % (count,))
    return spec


def _whole(what: str, x: Any, low: int, high: int) -> int:
    """``x`` as an int in [low, high], or a ValueError naming ``what`` (a
    count of 2.5 is not truncated to 2, nor 10**10 left to protobuf's bare
    "Value out of range")."""
    try:
        n = int(x)
        whole = n == x
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole or isinstance(x, bool) or not low <= n <= high:
        raise ValueError("%s: expected an integer in %d..%d, found %r" % (what, low, high, x))
    return n


@dataclass
class EnsembleReduction:
    """Reductions over the instances per output time: ``t`` (T,), ``count``
    (T,) instances that reached each time, and ``mean``, ``std`` (of the
    population), ``min``, ``max`` (T, C) of each column (``columns``: q_x
    per coordinate, then v_x, then the outputs)."""
    t: np.ndarray
    count: np.ndarray
    columns: Tuple[str, ...]
    mean: np.ndarray
    std: np.ndarray
    min: np.ndarray
    max: np.ndarray

    @classmethod
    def from_message(cls, message: Any) -> "EnsembleReduction":
        shape = (len(message.t), len(message.columns))
        return cls(t=np.array(message.t, dtype=float),
                   count=np.array(message.count, dtype=np.int64),
                   columns=tuple(message.columns),
                   mean=np.array(message.mean, dtype=float).reshape(shape),
                   std=np.array(message.std, dtype=float).reshape(shape),
                   min=np.array(message.min, dtype=float).reshape(shape),
                   max=np.array(message.max, dtype=float).reshape(shape))

    def column(self, name: str) -> int:
        """The index of column ``name`` ("q_x", "v_x" or an output)."""
        return self.columns.index(name)


@dataclass
class EnsembleResult:
    """Every instance's result, one row per instance in index order.

    ``values`` (N, k): what each instance set, columns ``value_names``;
    ``ok`` (N,) bool; ``t`` (N,), ``q`` and ``v`` (N, nq): the final state
    (of a failed instance: its last completed step); ``steps`` (N,);
    ``position_bound``, ``max_position_residual``,
    ``max_velocity_residual`` (N,) and ``initial_consistent``,
    ``feedback_verified``, ``step_stable`` (N,) bool: each certificate in
    short (NaN / False without certificates); ``errors``: the cause of each
    failed instance ("" for the others), with ``failed_step`` and
    ``failed_time``; ``seed``: the draws' seed; ``trajectories``: each
    instance's frames (with an output_interval; else empty);
    ``fast_functions`` (N,) bool: the instances computed with vectorised
    transcendental functions (``functions="fast"``; the others have a
    plain run's bits);
    ``reduction``: with reduce=True, the EnsembleReduction (the frames are
    then not sent); ``raw``: the messages."""
    value_names: Tuple[str, ...]
    values: np.ndarray
    ok: np.ndarray
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    steps: np.ndarray
    position_bound: np.ndarray
    max_position_residual: np.ndarray
    max_velocity_residual: np.ndarray
    initial_consistent: np.ndarray
    feedback_verified: np.ndarray
    step_stable: np.ndarray
    errors: List[str]
    failed_step: np.ndarray
    failed_time: np.ndarray
    seed: int
    fast_functions: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    trajectories: List[Trajectory] = field(repr=False, default_factory=list)
    reduction: Optional[EnsembleReduction] = None
    raw: List[Any] = field(repr=False, default_factory=list)

    @classmethod
    def from_results(cls, results: Iterable[Any], seed: int = 0,
                     names: Optional[Names] = None,
                     reduction: Any = None) -> "EnsembleResult":
        rows = list(results)
        value_names = tuple(v.name for v in rows[0].values) if rows else ()
        nq = len(rows[0].final_state.q) if rows else 0

        def column(get: Any, dtype: Any = float) -> np.ndarray:
            return np.array([get(r) for r in rows], dtype=dtype)

        def state(r: Any, which: str) -> List[float]:
            x = list(getattr(r.final_state, which))
            return x + [0.0] * (nq - len(x))

        has_certificate = column(lambda r: r.HasField("certificate"), bool)

        def certificate(get: Any) -> np.ndarray:
            return np.where(has_certificate, column(lambda r: get(r.certificate)), np.nan)

        return cls(
            value_names=value_names,
            values=np.array([[v.value for v in r.values] for r in rows],
                            dtype=float).reshape(len(rows), len(value_names)),
            ok=column(lambda r: r.ok, bool),
            t=column(lambda r: r.final_state.t),
            q=np.array([state(r, "q") for r in rows], dtype=float).reshape(len(rows), nq),
            v=np.array([state(r, "v") for r in rows], dtype=float).reshape(len(rows), nq),
            steps=column(lambda r: r.steps, np.int64),
            position_bound=certificate(lambda c: c.position_bound),
            max_position_residual=certificate(lambda c: c.max_position_residual),
            max_velocity_residual=certificate(lambda c: c.max_velocity_residual),
            initial_consistent=column(lambda r: r.certificate.initial_consistent, bool),
            feedback_verified=column(lambda r: r.certificate.feedback_verified, bool),
            step_stable=column(lambda r: r.certificate.step_stable, bool),
            errors=[r.error for r in rows],
            failed_step=column(lambda r: r.failed_step, np.int64),
            failed_time=column(lambda r: r.failed_time),
            seed=seed,
            fast_functions=column(lambda r: r.fast_functions, bool),
            trajectories=([Trajectory.from_frames(r.frames, names) for r in rows]
                          if any(len(r.frames) for r in rows) else []),
            reduction=(EnsembleReduction.from_message(reduction)
                       if reduction is not None else None),
            raw=rows)

    def __len__(self) -> int:
        return len(self.ok)

    def value(self, name: str) -> np.ndarray:
        """The column of ``values`` for ``name``."""
        return self.values[:, self.value_names.index(name)]
