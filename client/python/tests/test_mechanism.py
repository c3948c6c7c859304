"""tether_client.mechanism: what the builder writes and what it refuses
(no server; tests/mechanism_examples_test.py runs its examples through the
engine and against independent solutions)."""

import math

import pytest

from tether_client import pb
from tether_client.mechanism import Mechanism, MechanismError


def pendulum(**joint):
    m = Mechanism(gravity=(0, 0, -9.81))
    m.add_body("world")
    m.add_body("arm", mass=2.0, com=(0.5, 0, 0), inertia=(1e-3, 0.17, 0.17))
    m.add_joint("hinge", "revolute", "world", "arm", axis=(0, 1, 0), **joint)
    return m


def test_the_spec_carries_the_mechanism_inputs_state_and_integrator():
    m = pendulum(stiffness=3.0, rest=0.1, damping=0.2, actuator="torque", q0=0.4, v0=-1.0)
    m.add_body("tip", mass=0.1, inertia=(1e-5, 1e-5, 1e-5))
    m.add_joint("weld", "fixed", "arm", "tip", xyz=(1, 0, 0))
    m.add_body("bob", mass=1.0, inertia=(1e-2, 1e-2, 1e-2))
    m.add_joint("ball", "spherical", "tip", "bob", v0=(0, 0.5, 0, 0))
    assert m.coordinates == ["hinge", "ball_qw", "ball_qx", "ball_qy", "ball_qz"]
    spec = m.spec(step_size=2e-3, outputs={"tip_z": "tip_pz"})
    mech = spec.system.mechanism
    assert [b.name for b in mech.bodies] == ["world", "arm", "tip", "bob"]
    hinge = mech.joints[0]
    assert (hinge.type, hinge.parent, hinge.child) == (pb.Joint.REVOLUTE, "world", "arm")
    assert (hinge.axis.x, hinge.axis.y, hinge.axis.z) == (0, 1, 0)
    assert (hinge.spring.stiffness, hinge.spring.rest, hinge.damping) == (3.0, 0.1, 0.2)
    assert hinge.actuator_input == "torque"
    assert mech.joints[1].origin.xyz.x == 1 and not mech.joints[1].HasField("axis")
    assert mech.bodies[1].inertial_origin.xyz.x == 0.5 and mech.bodies[1].inertia.iyy == 0.17
    assert mech.gravity.z == -9.81
    assert [(i.name, i.default_value) for i in spec.system.inputs] == [("torque", 0.0)]
    assert list(spec.initial.q) == [0.4, 1, 0, 0, 0] and list(spec.initial.v) == [-1, 0, 0.5, 0, 0]
    assert (spec.system.baumgarte.alpha, spec.system.baumgarte.beta) == (10, 10)  # a quaternion's norm
    assert [(o.name, o.expression) for o in spec.system.outputs] == [
        ("energy", "mechanism_T + mechanism_V"), ("tip_z", "tip_pz")]
    assert spec.integrator.method == pb.IntegratorSpec.RK4 and spec.integrator.step_size == 2e-3


def test_inertia_in_urdf_order_or_as_a_matrix():
    m = Mechanism()
    a = m.add_body("a", mass=1, inertia=(0.05, 0.004, -0.003, 0.06, 0.002, 0.03), inertia_rpy=(0.1, 0, 0))
    b = m.add_body("b", mass=1, inertia=[[0.05, 0.004, -0.003], [0.004, 0.06, 0.002], [-0.003, 0.002, 0.03]])
    for body in (a, b):
        i = body.inertia
        assert (i.ixx, i.ixy, i.ixz, i.iyy, i.iyz, i.izz) == (0.05, 0.004, -0.003, 0.06, 0.002, 0.03)
    assert a.inertial_origin.rpy.x == 0.1 and not b.HasField("inertial_origin")


def test_loop_closures():
    m = Mechanism()
    m.add_body("ground")
    m.add_body("crank", mass=1, inertia=(1, 1, 1))
    m.add_body("slider", mass=1, inertia=(1, 1, 1))
    m.add_joint("turn", "revolute", "ground", "crank", axis=(0, 0, 1))
    m.add_joint("slide", "prismatic", "ground", "slider")
    pin = m.add_loop("rod", "distance", "crank", (0.2, 0, 0), "slider", distance=0.5, gains=(5, 5))
    assert (pin.type, pin.distance, pin.gains.alpha) == (pb.LoopClosure.DISTANCE, 0.5, 5)
    rail = m.add_loop("rail", "point_on_axis", "ground", (0, 0, 0), "slider", axis=(1, 0, 0), plane_normal=(0, 0, 1))
    assert rail.type == pb.LoopClosure.POINT_ON_AXIS and rail.axis.x == 1 and rail.plane_normal.z == 1
    spec = m.spec()
    assert len(spec.system.mechanism.loop_closures) == 2
    assert spec.system.baumgarte.alpha == 10  # the default with a loop closure
    assert spec.initial.q == [0, 0] and spec.initial.v == [0, 0]


@pytest.mark.parametrize("make, expected", [
    (lambda m: m.add_body("2arm"), "system.mechanism.bodies[2].name: expected a body name that is an identifier"),
    (lambda m: m.add_body("arm", mass=1, inertia=(1, 1, 1)),
     "system.mechanism.bodies[2].name: duplicate body name 'arm' (also at index 1)"),
    (lambda m: m.add_body("x", mass=-1), "system.mechanism.bodies[2] (body 'x').mass: expected a finite mass >= 0"),
    (lambda m: m.add_body("x", mass=1, inertia=(0, 1, 1)), "(body 'x').inertia: the inertia of body 'x' (mass 1) "
     "is not positive definite"),
    (lambda m: m.add_body("x", inertia=(1, 1, 1)), "(body 'x').inertia: a body of mass 0 (a massless frame)"),
    (lambda m: m.add_body("x", mass=1, inertia=[[1, 0.1, 0], [0, 1, 0], [0, 0, 1]]), "must be symmetric"),
    (lambda m: m.add_body("x", mass=1, com=(0, math.nan, 0), inertia=(1, 1, 1)),
     "(body 'x').inertial_origin.xyz: expected 3 finite numbers"),
    (lambda m: m.add_joint("j", "planar", "world", "arm"),
     "system.mechanism.joints[1] (joint 'j').type: expected revolute, continuous, prismatic, fixed, spherical"),
    (lambda m: m.add_joint("hinge", "revolute", "world", "arm"), "joints[1].name: duplicate joint name 'hinge'"),
    (lambda m: m.add_joint("j", "revolute", "world", "hand"), "(joint 'j').child: no body named 'hand'"),
    (lambda m: m.add_joint("j", "revolute", "arm", "arm"), "a joint's child must differ from its parent 'arm'"),
    (lambda m: m.add_joint("j", "revolute", "world", "arm"),
     "(joint 'j').child: body 'arm' is already the child of joint 'hinge' (joints[0])"),
    (lambda m: m.add_joint("j", "revolute", "arm", "world"),
     "(joint 'j').child: body 'world' is an ancestor of 'arm': the joint would close a cycle"),
    (lambda m: (m.add_body("b", mass=1, inertia=(1, 1, 1)), m.add_joint("j", "prismatic", "arm", "b", axis=(0, 0, 0))),
     "(joint 'j').axis: expected a finite axis of non-zero length, found (0, 0, 0)"),
    (lambda m: (m.add_body("b", mass=1, inertia=(1, 1, 1)), m.add_joint("j", "fixed", "arm", "b", damping=1)),
     "(joint 'j').damping: dampers act on one-coordinate joints only"),
    (lambda m: (m.add_body("b", mass=1, inertia=(1, 1, 1)), m.add_joint("j", "spherical", "arm", "b", actuator="u")),
     "(joint 'j').actuator_input: actuators act on one-coordinate joints only"),
    (lambda m: (m.add_body("b", mass=1, inertia=(1, 1, 1)), m.add_joint("j", "revolute", "arm", "b", stiffness=-1)),
     "(joint 'j').spring: expected a finite stiffness >= 0"),
    (lambda m: (m.add_body("b", mass=1, inertia=(1, 1, 1)), m.add_joint("j", "spherical", "arm", "b", q0=(1, 1, 0, 0))),
     "(joint 'j') q0: expected a unit quaternion"),
    (lambda m: (m.add_body("b", mass=1, inertia=(1, 1, 1)), m.add_joint("j", "revolute", "arm", "b", q0=(1, 2))),
     "(joint 'j') q0: expected 1 finite numbers"),
    (lambda m: m.add_loop("l", "point", "arm", (0, 0, 0), "hand"),
     "system.mechanism.loop_closures[0] (loop closure 'l').body_b: no body named 'hand'"),
    (lambda m: m.add_loop("l", "distance", "world", (0, 0, 0), "arm"),
     "(loop closure 'l').distance: expected a finite distance > 0, found 0"),
    (lambda m: m.add_loop("l", "point_on_axis", "world", (0, 0, 0), "arm", axis=(0, 0, 1), plane_normal=(0, 0, 2)),
     "(loop closure 'l').plane_normal: the plane's normal must not be parallel to the axis"),
    (lambda m: m.add_loop("l", "hinge", "world", (0, 0, 0), "arm"),
     "(loop closure 'l').type: expected point, distance or point_on_axis"),
    (lambda m: (m.add_body("loose", mass=1, inertia=(1, 1, 1)), m.spec()),
     "system.mechanism.bodies[2] (body 'loose'): bodies 'world', 'loose' are no joint's child"),
])
def test_errors_name_the_element_and_field(make, expected):
    m = pendulum()
    with pytest.raises(MechanismError) as e:
        make(m)
    assert expected in str(e.value)


def test_the_docs_example_builds_the_cart_pole_example(tmp_path, monkeypatch):
    """docs/MECHANISMS.md's Python block runs and writes the mechanism of
    examples/cart_pole.json (examples/python/mechanisms/cart_pole.py)."""
    import os
    import re

    from conftest import REPOSITORY
    from tether_client import load_spec
    with open(os.path.join(REPOSITORY, "docs", "MECHANISMS.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "docs/MECHANISMS.md", "exec"), {})
    written = load_spec(tmp_path / "cart_pole.json")
    example = load_spec(os.path.join(REPOSITORY, "examples", "cart_pole.json"))
    for body in example.system.mechanism.bodies:  # the example computes m l^2/12
        if body.HasField("inertia"):
            for attr in ("ixx", "iyy", "izz"):
                setattr(body.inertia, attr, round(getattr(body.inertia, attr), 12))
    assert written.system.mechanism == example.system.mechanism
    assert written.system.inputs == example.system.inputs and written.initial == example.initial


def test_the_slider_crank_picture_script_draws_from_a_run(server_binary, tmp_path):
    """examples/python/slider_crank_picture.py (docs/images/slider_crank_mechanism.png)
    still runs: a short run, a small PNG."""
    import os
    import subprocess
    import sys

    from conftest import REPOSITORY
    out = tmp_path / "picture.png"
    done = subprocess.run([sys.executable, os.path.join(REPOSITORY, "examples", "python", "slider_crank_picture.py"),
                           "--server-binary", server_binary, "--until", "0.3", "--output", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert 5000 < out.stat().st_size < 60000
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_urdf_damping_on_a_joint_without_one_rate_is_ignored_with_a_note():
    # As the C++ reader (tether urdf): MuJoCo's reader takes such files.
    from tether_client.urdf import parse_urdf
    inertial = ('<inertial><mass value="1"/>'
                '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>')
    urdf = ('<?xml version="1.0"?><robot name="r"><link name="base"/>'
            '<link name="arm">' + inertial + '</link><link name="tip">' + inertial + '</link>'
            '<joint name="j" type="revolute"><parent link="base"/><child link="arm"/>'
            '<axis xyz="0 1 0"/><dynamics damping="0.2"/></joint>'
            '<joint name="mount" type="fixed"><parent link="arm"/><child link="tip"/>'
            '<dynamics damping="0.5"/></joint></robot>')
    spec, warnings = parse_urdf(urdf)
    joints = {j.name: j for j in spec.system.mechanism.joints}
    assert joints["j"].damping == 0.2
    assert joints["mount"].damping == 0
    assert any("<dynamics damping> on a fixed joint" in w for w in warnings), warnings


def test_urdf_elements_and_attributes_it_does_not_read_are_warnings_as_in_the_cli():
    # A typo inside <joint> or <inertial> changed the robot without a word
    # (the centre of mass at the link's origin, the axis x, the rotation
    # zero); each is a warning naming the line, in the C++ reader's words. A
    # second <axis> is an error, and a joint named energy moves the energy
    # output to energy_ (found by an audit).
    import pytest
    from tether_client.urdf import UrdfError, parse_urdf
    inertia = '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>'
    urdf = ('<?xml version="1.0"?>\n<robot name="r">\n<link name="base"/>\n'
            '<link name="a"><inertial><orgin xyz="0.5 0 0"/><mass value="1" units="kg"/>' + inertia +
            '</inertial></link>\n'
            '<joint name="energy" type="revolute"><parent link="base"/><child link="a"/>'
            '<axes xyz="0 1 0"/><origin rpY="1 0 0"/></joint>\n</robot>\n')
    spec, warnings = parse_urdf(urdf, "t.urdf")
    assert warnings[:4] == [
        "warning: t.urdf:4: <orgin>: not an element URDF reads in <inertial> (expected origin, mass "
        "or inertia); not read",
        "warning: t.urdf:4: <mass>: attribute 'units' is not one URDF reads there (expected value); "
        "not read",
        "warning: t.urdf:5: <axes>: not an element URDF reads in <joint> (expected origin, parent, "
        "child, axis, calibration, dynamics, limit, mimic or safety_controller); not read",
        "warning: t.urdf:5: <origin>: attribute 'rpY' is not one URDF reads there (expected xyz or "
        "rpy); not read"], warnings
    assert [o.name for o in spec.system.outputs] == ["energy_"]
    with pytest.raises(UrdfError, match=r"t\.urdf:5: <axis>: a second <axis> in <joint> \(the first "
                                        r"is at line 5\)"):
        parse_urdf(urdf.replace('<axes xyz="0 1 0"/>', '<axis xyz="0 1 0"/><axis xyz="1 0 0"/>'),
                   "t.urdf")
    with pytest.raises(UrdfError, match=r"the name is empty"):
        parse_urdf(urdf.replace('name="energy"', 'name=""'), "t.urdf")
