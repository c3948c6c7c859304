"""Results as arrays, pandas, CSV and pictures, from frames made here (no
server): the arrays, names and units, CSV read back exactly, the figure
and the animation files."""

import csv
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import PACKAGE_ROOT
from tether_client import Names, Trajectory, pb


def pendulum_frames(n=40, length=1.0):
    """A swinging pendulum's frames (x = sin, y = -cos), one constraint
    'rod', one output 'angle'; the residual grows like 1e-12 t."""
    frames = []
    for k in range(n):
        t = 0.05 * k
        angle = 0.5 * math.cos(3 * t)
        frame = pb.Frame(step=k, t=t, q=[length * math.sin(angle), -length * math.cos(angle)],
                         v=[0.1 * k, 0.2 * k], a=[1.0, 2.0], outputs=[angle])
        getattr(frame, "lambda").append(9.81 + k)
        frame.residuals.position.append(1e-12 * t)
        frame.residuals.velocity.append(-2e-12)
        frame.residuals.dynamics = 1e-15
        frame.residuals.constraint = 2e-15
        frames.append(frame)
    return frames


NAMES = Names(("x", "y"), ("rod",), ("angle",))


def certificate(bound):
    cert = pb.Certificate()
    cert.constraints.add(name="rod", position_bound=bound)
    cert.position_bound = bound
    return cert


def test_frames_become_named_arrays():
    frames = pendulum_frames()
    traj = Trajectory.from_frames(frames, NAMES)
    assert len(traj) == 40 and traj.q.shape == (40, 2)
    assert traj.multipliers.shape == (40, 1) and traj.outputs.shape == (40, 1)
    np.testing.assert_array_equal(traj.t, [f.t for f in frames])
    np.testing.assert_array_equal(traj.q[:, 1], [f.q[1] for f in frames])
    np.testing.assert_array_equal(traj.multipliers[:, 0],
                                  [f.multipliers[0] for f in frames])
    assert traj.names == NAMES
    assert traj.units["v_x"] == "[x]/s" and traj.units["lambda_rod"] == "[E]/[rod]"
    # The multipliers alias is the proto's lambda field.
    assert list(frames[3].multipliers) == list(getattr(frames[3], "lambda"))


def test_names_that_do_not_fit_become_positional():
    traj = Trajectory.from_frames(pendulum_frames(3), Names(("only_one",)))
    assert traj.names.coordinates == ("q0", "q1")
    assert traj.names.constraints == ("c0",) and traj.names.outputs == ("y0",)


def test_names_from_a_description():
    spec = pb.SimulationSpec()
    spec.system.coordinates.extend(["x", "y"])
    spec.system.constraints.add(name="rod", expression="x^2+y^2-1")
    spec.system.outputs.add(name="angle", expression="atan2(x,-y)")
    assert Names.from_spec(spec) == NAMES


def test_csv_has_names_and_units_and_reads_back_exactly(tmp_path):
    traj = Trajectory.from_frames(pendulum_frames(), NAMES)
    path = tmp_path / "run.csv"
    traj.to_csv(path)
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    assert header == [
        "step", "t [s]", "x [x]", "y [y]", "v_x [x]/s", "v_y [y]/s", "a_x [x]/s^2",
        "a_y [y]/s^2", "lambda_rod [E]/[rod]", "g_rod [rod]", "gdot_rod [rod]/s",
        "dynamics_residual [E]/[q]", "constraint_residual [g]/s^2", "angle"]
    column = header.index("y [y]")
    read = np.array([float(r[column]) for r in rows[1:]])
    np.testing.assert_array_equal(read, traj.q[:, 1])  # 17 digits: exact


def test_to_pandas_labels_the_columns():
    pd = pytest.importorskip("pandas")
    frame = Trajectory.from_frames(pendulum_frames(), NAMES).to_pandas()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns[:4]) == ["step", "t", "x", "y"]
    assert frame.attrs["units"]["gdot_rod"] == "[rod]/s"
    assert frame["lambda_rod"].iloc[-1] == 9.81 + 39


def test_plot_writes_png_and_svg(tmp_path):
    pytest.importorskip("matplotlib")
    traj = Trajectory.from_frames(pendulum_frames(), NAMES, certificate(1e-10))
    png, svg = tmp_path / "fig.png", tmp_path / "fig.svg"
    figure = traj.plot(png)
    traj.plot(svg)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    text = svg.read_text()
    assert "<svg" in text and "bound on |g_rod|" in text
    # Three panels: coordinates, multipliers, residuals against the bound.
    assert len(figure.axes) == 3
    residual_axis = figure.axes[2]
    assert residual_axis.get_yscale() == "log"
    bound_lines = [line for line in residual_axis.get_lines()
                   if line.get_label() == "bound on |g_rod|"]
    assert len(bound_lines) == 1 and bound_lines[0].get_ydata()[0] == 1e-10
    # The residual is exactly 0 at t = 0 (as at any consistent start): the
    # axis still spans the residuals (1e-13 .. 2e-12) and the bound, not
    # down to the smallest double.
    low, high = residual_axis.get_ylim()
    assert 1e-15 < low < 1e-13 and 1e-10 <= high < 1e-8, (low, high)


def test_animate_writes_a_gif_with_the_frames(tmp_path):
    pytest.importorskip("matplotlib")
    image = pytest.importorskip("PIL.Image")
    traj = Trajectory.from_frames(pendulum_frames(), NAMES)
    gif = tmp_path / "motion.gif"
    traj.animate([("x", "y")], gif, max_frames=25)
    with image.open(gif) as picture:
        assert picture.n_frames == 25
    with pytest.raises(ValueError, match="'z' is neither a coordinate"):
        traj.animate([("x", "z")], tmp_path / "bad.gif")


def test_plot_without_matplotlib_says_what_to_install(tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from tether_client.plotting import plot_trajectory\n"
            "try:\n    plot_trajectory(None)\nexcept ImportError as e:\n    print(e)\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(PACKAGE_ROOT, "src"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert "python3-matplotlib" in out and "tether-client[plot]" in out


def test_a_bad_jsonl_line_is_named(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text('{"step":"0","t":0,"q":[1]}\n{"nonsense": 1}\n')
    with pytest.raises(ValueError, match=r"run.jsonl:2: not a Frame"):
        Trajectory.from_jsonl(path)
