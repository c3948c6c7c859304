"""Pictures of a Trajectory with matplotlib (an optional dependency:
Debian's python3-matplotlib, or pip install tether-client[plot]).

plot_trajectory draws, one above the other, the coordinates, the
multipliers, and each constraint's |residual| on a log scale against the
certificate's bound on it (ConstraintCertificate.position_bound, the bound
on |g| over the whole window: a dashed line of the constraint's colour).
animate_trajectory draws a planar mechanism's points and links frame by
frame into a GIF (Pillow's writer) or, with ffmpeg, an MP4.
Both use matplotlib's Agg backend when they write a file: no display needed.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple, Union

import numpy as np

if TYPE_CHECKING:
    from tether_client.results import Trajectory

__all__ = ["animate_trajectory", "plot_trajectory"]

ORIGIN = "origin"


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ImportError(
            "plotting needs matplotlib (Debian: apt-get install "
            "python3-matplotlib; pip: pip install tether-client[plot])") from None
    if not os.environ.get("DISPLAY") and not os.environ.get("MPLBACKEND"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_trajectory(traj: "Trajectory", path: "Optional[Union[str, os.PathLike[str]]]" = None,
                    title: Optional[str] = None) -> Any:
    """The figure (matplotlib Figure), saved to ``path`` when given."""
    plt = _pyplot()
    names = traj.names
    rows = 3 if names.constraints else 1
    fig, axes = plt.subplots(rows, 1, sharex=True, figsize=(8, 2.6 * rows + 0.6),
                             squeeze=False)
    ax = axes[0][0]
    for i, name in enumerate(names.coordinates):
        ax.plot(traj.t, traj.q[:, i], label=name)
    ax.set_ylabel("coordinates")
    if names.coordinates:
        ax.legend(loc="best", fontsize="small", ncol=min(4, len(names.coordinates)))
    if names.constraints:
        ax = axes[1][0]
        for i, name in enumerate(names.constraints):
            ax.plot(traj.t, traj.multipliers[:, i], label=name)
        ax.set_ylabel("multipliers λ")
        ax.legend(loc="best", fontsize="small", ncol=min(4, len(names.constraints)))
        ax = axes[2][0]
        bounds = {}
        if traj.certificate is not None:
            bounds = {c.name: c.position_bound for c in traj.certificate.constraints}
        for i, name in enumerate(names.constraints):
            # An exact zero (a consistent start's g) has no place on a log
            # axis: left out of the line (NaN), not drawn at the smallest
            # double, which stretched the axis down to 1e-300 and squeezed
            # the residuals and the bound into its top.
            residual = np.abs(traj.position_residuals[:, i])
            residual = np.where(residual > 0, residual, np.nan)
            line, = ax.semilogy(traj.t, residual, label="|g_%s|" % name)
            bound = bounds.get(name)
            if bound is not None and np.isfinite(bound) and bound > 0:
                ax.axhline(bound, linestyle="--", color=line.get_color(),
                           label="bound on |g_%s|" % name)
        ax.set_ylabel("constraint residual")
        ax.legend(loc="best", fontsize="small", ncol=2)
    axes[-1][0].set_xlabel("t (s)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig


def _series(traj: "Trajectory", name: str) -> np.ndarray:
    """The values of a coordinate or an output named ``name``."""
    if name == ORIGIN:
        return np.zeros(len(traj))
    names = traj.names
    if name in names.coordinates:
        return traj.q[:, names.coordinates.index(name)]
    if name in names.outputs:
        return traj.outputs[:, names.outputs.index(name)]
    raise ValueError("'%s' is neither a coordinate (%s) nor an output (%s)" % (
        name, ", ".join(names.coordinates) or "none",
        ", ".join(names.outputs) or "none"))


def animate_trajectory(traj: "Trajectory", points: Sequence[Tuple[str, str]],
                       path: "Union[str, os.PathLike[str]]",
                       links: Optional[Sequence[Tuple[int, int]]] = None,
                       max_frames: int = 200, fps: int = 25) -> Any:
    """Writes an animation of the planar points (x name, y name) to ``path``
    (.gif with Pillow; .mp4 needs ffmpeg) and returns matplotlib's
    animation. ``links`` are pairs of point indices drawn as bars, -1 being
    the origin; by default a chain from the origin through the points in
    order. At most ``max_frames`` frames, evenly spaced in the frames' order.
    Raises ValueError when a name is not a coordinate or an output."""
    plt = _pyplot()
    from matplotlib import animation
    if not points:
        raise ValueError("animate needs at least one point (x, y)")
    if len(traj) == 0:
        raise ValueError("animate needs at least one frame")
    xs = np.array([_series(traj, x) for x, _ in points])
    ys = np.array([_series(traj, y) for _, y in points])
    bars_at: Sequence[Tuple[int, int]] = (
        links if links is not None else [(i - 1, i) for i in range(len(points))])
    for a, b in bars_at:
        for end in (a, b):
            if not -1 <= end < len(points):
                raise ValueError("link (%d, %d): point %d does not exist (%d points; "
                                 "-1 is the origin)" % (a, b, end, len(points)))
    idx = np.unique(np.linspace(0, len(traj) - 1, min(max_frames, len(traj))).astype(int))
    fig, ax = plt.subplots(figsize=(5, 5))
    span_x = np.concatenate([xs.ravel(), [0.0]])
    span_y = np.concatenate([ys.ravel(), [0.0]])
    pad = 0.05 * max(np.ptp(span_x), np.ptp(span_y), 1e-9)
    ax.set_xlim(span_x.min() - pad, span_x.max() + pad)
    ax.set_ylim(span_y.min() - pad, span_y.max() + pad)
    ax.set_aspect("equal")
    ax.grid(True, alpha=0.3)
    bars = [ax.plot([], [], "-", color="0.3", lw=2)[0] for _ in bars_at]
    dots = ax.plot([], [], "o", color="C0", ms=8)[0]
    label = ax.text(0.02, 0.95, "", transform=ax.transAxes)

    def at(point: int, frame: int) -> Tuple[float, float]:
        return (0.0, 0.0) if point < 0 else (xs[point, frame], ys[point, frame])

    def draw(k: int) -> Any:
        frame = idx[k]
        for bar, (a, b) in zip(bars, bars_at):
            (xa, ya), (xb, yb) = at(a, frame), at(b, frame)
            bar.set_data([xa, xb], [ya, yb])
        dots.set_data(xs[:, frame], ys[:, frame])
        label.set_text("t = %.3f s" % traj.t[frame])
        return bars + [dots, label]

    anim = animation.FuncAnimation(fig, draw, frames=len(idx), blit=True)
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    writer: Any = (animation.PillowWriter(fps=fps) if suffix == ".gif"
                   else animation.FFMpegWriter(fps=fps))
    anim.save(path, writer=writer)
    plt.close(fig)
    return anim
