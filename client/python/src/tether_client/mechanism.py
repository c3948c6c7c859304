"""A mechanism builder: bodies, joints, loop closures, springs, dampers and
actuators in Python, producing the ``tether.v1.Mechanism`` message and a
whole ``SimulationSpec`` (docs/MECHANISMS.md has the frames and
conventions).

    from tether_client.mechanism import Mechanism
    m = Mechanism(gravity=(0, 0, -9.81))
    m.add_body("world")
    m.add_body("arm", mass=1.0, com=(0.25, 0, 0), inertia=(1e-4, 0.02, 0.02))
    m.add_joint("shoulder", "revolute", "world", "arm", axis=(0, 1, 0),
                damping=0.1, actuator="shoulder_torque", q0=0.3)
    spec = m.spec(step_size=1e-3)        # RK4, the initial state from q0/v0
    m.write_json("arm.json", spec)       # the description file

Each ``add_*`` checks what it is given at once and raises MechanismError
naming the element and its field path as the server would report it
(``system.mechanism.joints[1].axis (joint 'elbow'): expected a finite axis
of non-zero length, found (0, 0, 0)``). The server remains the authority:
``Client.validate`` or ``tether validate`` run every check, including those
that need the compiled expressions.

The URDF reader (``tether_client.urdf``) builds its messages with this
module's helpers (joint types, poses, initial state, the spec's defaults).
"""

from __future__ import annotations

import math
import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from google.protobuf import json_format

from tether_client.messages import pb

__all__ = ["JOINT_TYPES", "LOOP_TYPES", "Mechanism", "MechanismError", "initial_coordinates",
           "set_pose", "set_vector", "spec_defaults"]

#: Joint types by their URDF (lower-case) names.
JOINT_TYPES: Dict[str, int] = {
    "revolute": pb.Joint.REVOLUTE, "continuous": pb.Joint.CONTINUOUS,
    "prismatic": pb.Joint.PRISMATIC, "fixed": pb.Joint.FIXED,
    "spherical": pb.Joint.SPHERICAL, "floating": pb.Joint.FLOATING}

#: Loop closure types: "point" (POINT_TO_POINT), "distance", "point_on_axis".
LOOP_TYPES: Dict[str, int] = {
    "point": pb.LoopClosure.POINT_TO_POINT, "point_to_point": pb.LoopClosure.POINT_TO_POINT,
    "distance": pb.LoopClosure.DISTANCE, "point_on_axis": pb.LoopClosure.POINT_ON_AXIS}

# The engine's limits (server/engine/internal/mechanism/tree.cc).
MAX_ELEMENTS = 1000
MAX_NAME_BYTES = 128
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

Vector = Sequence[float]


class MechanismError(ValueError):
    """An element the engine would reject; the message names its field path
    and the element."""


def set_vector(message: Any, values: Vector) -> None:
    """Sets a Vector3 message's x, y, z."""
    message.x, message.y, message.z = (float(v) for v in values)


def set_pose(message: Any, xyz: Vector = (0, 0, 0), rpy: Vector = (0, 0, 0)) -> None:
    """Sets a Pose message: URDF's <origin xyz rpy>, the translation in the
    outer frame, then R = Rz(yaw) Ry(pitch) Rx(roll). Zero vectors are left
    unset, as the URDF reader writes them."""
    if any(xyz):
        set_vector(message.xyz, xyz)
    if any(rpy):
        set_vector(message.rpy, rpy)


def joint_coordinate_names(joint: Any) -> List[str]:
    """The coordinates a joint adds, named as the engine names them."""
    n = joint.name
    if joint.type == pb.Joint.SPHERICAL:
        return [n + "_qw", n + "_qx", n + "_qy", n + "_qz"]
    if joint.type == pb.Joint.FLOATING:
        return [n + "_x", n + "_y", n + "_z", n + "_qw", n + "_qx", n + "_qy", n + "_qz"]
    return [] if joint.type == pb.Joint.FIXED else [n]


def initial_coordinates(joint_type: int) -> List[float]:
    """A joint's coordinates at its joint frame: zeros, the identity
    quaternion (qw = 1) for spherical and floating joints."""
    coordinates: Dict[int, List[float]] = {
        pb.Joint.FIXED: [], pb.Joint.SPHERICAL: [1.0, 0.0, 0.0, 0.0],
        pb.Joint.FLOATING: [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]}
    return coordinates.get(joint_type, [0.0])


def spec_defaults(spec: Any, step_size: float = 1e-3, energy_output: bool = True) -> None:
    """What `tether urdf` and the builder write around a mechanism: RK4 at
    ``step_size``, gains alpha = beta = 10 when there is a quaternion and no
    gains were set, and an output ``energy = mechanism_T + mechanism_V``."""
    mech = spec.system.mechanism
    quaternions = any(j.type in (pb.Joint.SPHERICAL, pb.Joint.FLOATING) for j in mech.joints)
    if quaternions and not spec.system.HasField("baumgarte"):
        spec.system.baumgarte.alpha = spec.system.baumgarte.beta = 10
    if energy_output:
        # "energy", unless a joint (a coordinate) or an output has that name:
        # the frames' columns would be two of one name (as tether urdf).
        taken = {j.name for j in mech.joints} | {o.name for o in spec.system.outputs}
        name = "energy"
        while name in taken:
            name += "_"
        out = spec.system.outputs.add()
        out.name, out.expression = name, "mechanism_T + mechanism_V"
    spec.integrator.method = pb.IntegratorSpec.RK4
    spec.integrator.step_size = step_size


def _num(x: float) -> str:
    return "%.17g" % x


def _vec(values: Any, what: str, field: str, count: int = 3) -> Tuple[float, ...]:
    try:
        v = tuple(float(x) for x in values)
    except (TypeError, ValueError):
        raise MechanismError("%s: expected %d numbers, found %r" % (field, count, values)) from None
    if len(v) != count or not all(math.isfinite(x) for x in v):
        raise MechanismError("%s: expected %d finite numbers (%s), found %r" % (field, count, what, values))
    return v


def _type(kind: Union[str, int], table: Dict[str, int], where: str, expected: str) -> int:
    """A type by its name (any case) or its pb enum value."""
    if isinstance(kind, str) and kind.lower() in table:
        return table[kind.lower()]
    if not isinstance(kind, str) and kind in table.values():
        return int(kind)
    raise MechanismError("%s.type: expected %s, found %r" % (where, expected, kind))


def _inertia_matrix(inertia: Any, field: str) -> np.ndarray:
    """3 numbers (principal, diagonal), 6 (URDF's ixx ixy ixz iyy iyz izz)
    or a symmetric 3x3 matrix."""
    try:
        a = np.array(inertia, dtype=float)
    except (TypeError, ValueError):
        raise MechanismError("%s: expected 3, 6 or 3x3 numbers, found %r" % (field, inertia)) from None
    if a.shape == (3,):
        m = np.diag(a)
    elif a.shape == (6,):
        xx, xy, xz, yy, yz, zz = a
        m = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    elif a.shape == (3, 3):
        m = a
    else:
        raise MechanismError("%s: expected 3 (ixx, iyy, izz), 6 (ixx, ixy, ixz, iyy, iyz, izz) or 3x3 "
                             "numbers, found shape %s" % (field, a.shape))
    if not np.all(np.isfinite(m)):
        raise MechanismError("%s: expected finite entries, found %r" % (field, inertia))
    if not np.array_equal(m, m.T):
        raise MechanismError("%s: a 3x3 inertia must be symmetric, found %r" % (field, inertia))
    return m


class Mechanism:
    """Builds a ``tether.v1.Mechanism`` (bodies, joints, loop closures,
    gravity) and the ``SimulationSpec`` around it. Not thread-safe: one
    thread builds it.

    Add bodies before the joints and loop closures that name them; the one
    body that is no joint's child is the root (the fixed world frame)."""

    def __init__(self, gravity: Optional[Vector] = None) -> None:
        self._m = pb.Mechanism()
        if gravity is not None:
            set_vector(self._m.gravity, _vec(gravity, "m/s^2", "system.mechanism.gravity"))
        self._bodies: Dict[str, int] = {}
        self._joints: Dict[str, int] = {}
        self._loops: Dict[str, int] = {}
        self._parent_of: Dict[str, str] = {}  # child body -> parent body
        self._inputs: Dict[str, float] = {}
        self._q0: Dict[str, List[float]] = {}
        self._v0: Dict[str, List[float]] = {}

    # ---- names
    def _name(self, name: str, kind: str, field: str, seen: Dict[str, int]) -> None:
        if not isinstance(name, str) or not _IDENTIFIER.match(name) or len(name.encode()) > MAX_NAME_BYTES:
            raise MechanismError("%s: expected a %s name that is an identifier of at most %d bytes (a letter "
                                 "or '_', then letters, digits or '_'), found %r" % (
                                     field, kind, MAX_NAME_BYTES, name))
        if name in seen:
            raise MechanismError("%s: duplicate %s name '%s' (also at index %d)" % (field, kind, name, seen[name]))
        if len(seen) >= MAX_ELEMENTS:
            raise MechanismError("%s: at most %d %ss" % (field, MAX_ELEMENTS, kind))

    def _element(self, what: str, repeated: str, name: str, seen: Dict[str, int]) -> str:
        """Checks the name of the next element of system.mechanism.REPEATED;
        the element's description in messages: its field path and name."""
        field = "system.mechanism.%s[%d]" % (repeated, len(seen))
        self._name(name, what, field + ".name", seen)
        return "%s (%s '%s')" % (field, what, name)

    def _two_bodies(self, where: str, first: Tuple[str, str], second: Tuple[str, str], same: str) -> None:
        """Checks that the two (field, body name) pairs name different bodies
        already added."""
        for field, name in (first, second):
            if name not in self._bodies:
                raise MechanismError("%s.%s: no body named '%s' (add bodies before the joints and loop closures "
                                     "that name them)" % (where, field, name))
        if first[1] == second[1]:
            raise MechanismError("%s.%s: %s" % (where, second[0], same))

    # ---- elements
    def add_body(self, name: str, mass: float = 0.0, com: Vector = (0, 0, 0),
                 inertia: Any = (0, 0, 0), inertia_rpy: Vector = (0, 0, 0)) -> Any:
        """A rigid body: ``mass`` (kg), its centre of mass ``com`` (m, body
        frame), and its inertia about the centre of mass (kg m^2) in a frame
        turned by ``inertia_rpy`` from the body frame: 3 numbers (ixx, iyy,
        izz), 6 (ixx, ixy, ixz, iyy, iyz, izz as URDF writes them: matrix
        entries, ixy = I[0][1]) or a 3x3 matrix. A body without mass is a
        frame (the root, or a frame on a fixed joint). Returns the Body
        message."""
        where = self._element("body", "bodies", name, self._bodies)
        m = float(mass)
        if not math.isfinite(m) or m < 0:
            raise MechanismError("%s.mass: expected a finite mass >= 0, found %s" % (where, _num(m)))
        c = _vec(com, "the centre of mass, m", where + ".inertial_origin.xyz")
        rpy = _vec(inertia_rpy, "roll, pitch, yaw in rad", where + ".inertial_origin.rpy")
        inertia_matrix = _inertia_matrix(inertia, where + ".inertia")
        if m == 0:
            if np.any(inertia_matrix != 0):
                raise MechanismError("%s.inertia: a body of mass 0 (a massless frame) must have a zero "
                                     "inertia, found %r" % (where, inertia))
        else:
            moments = np.linalg.eigvalsh(inertia_matrix)  # ascending
            scale = max(abs(moments[2]), 1e-300)
            if not (moments[0] > 1e-12 * scale and moments[2] > 0):
                raise MechanismError("%s.inertia: the inertia of body '%s' (mass %s) is not positive definite: "
                                     "principal moments %s, %s, %s (a body with mass needs all three > 0)" % (
                                         where, name, _num(m), *(_num(x) for x in moments)))
            if moments[0] + moments[1] < moments[2] * (1 - 1e-9):
                raise MechanismError("%s.inertia: the principal moments of body '%s' %s, %s, %s violate the "
                                     "triangle inequality I1 + I2 >= I3: no rigid body has this inertia" % (
                                         where, name, *(_num(x) for x in moments)))
        self._bodies[name] = len(self._m.bodies)
        b = self._m.bodies.add()
        b.name = name
        if m:
            b.mass = m
        set_pose(b.inertial_origin, c, rpy)
        if not b.inertial_origin.ListFields():
            b.ClearField("inertial_origin")
        ixx, ixy, ixz = inertia_matrix[0]
        iyy, iyz, izz = inertia_matrix[1][1], inertia_matrix[1][2], inertia_matrix[2][2]
        for attr, value in (("ixx", ixx), ("ixy", ixy), ("ixz", ixz), ("iyy", iyy), ("iyz", iyz), ("izz", izz)):
            if value:
                setattr(b.inertia, attr, float(value))
        return b

    def add_joint(self, name: str, kind: Union[str, int], parent: str, child: str,
                  xyz: Vector = (0, 0, 0), rpy: Vector = (0, 0, 0), axis: Vector = (1, 0, 0),
                  stiffness: float = 0.0, rest: float = 0.0, damping: float = 0.0,
                  actuator: Optional[str] = None, q0: Union[float, Vector, None] = None,
                  v0: Union[float, Vector, None] = None) -> Any:
        """A joint from ``parent`` to ``child`` (body names): ``kind`` is
        revolute, continuous, prismatic, fixed, spherical or floating (or
        the pb.Joint enum). Its joint frame sits at ``xyz`` (m) turned by
        ``rpy`` (rad) in the parent's frame; at coordinate 0 the child frame
        is the joint frame. A revolute joint turns the child about ``axis``
        (joint frame; URDF's default x) by q rad, counterclockwise when the
        axis points at you; a prismatic one slides it by q m along the axis.
        One-coordinate joints may carry a spring (``stiffness`` N m/rad or
        N/m, towards ``rest``), a damper (``damping`` N m s/rad or N s/m) and
        an actuator: ``actuator`` names a system input (declared here with
        default 0 unless add_input declared it) whose value is the joint's
        torque (N m) or force (N) along the axis. ``q0``, ``v0``: the
        joint's initial coordinates and rates (a number, or 4 or 7 numbers
        for a spherical or floating joint; default its joint frame at rest).
        Returns the Joint message."""
        where = self._element("joint", "joints", name, self._joints)
        jtype = _type(kind, JOINT_TYPES, where, "revolute, continuous, prismatic, fixed, spherical or floating")
        self._two_bodies(where, ("parent", parent), ("child", child),
                         "a joint's child must differ from its parent '%s'" % parent)
        if child in self._parent_of:
            owner = next(j for j in self._m.joints if j.child == child)
            raise MechanismError("%s.child: body '%s' is already the child of joint '%s' (joints[%d]): a body has "
                                 "one parent joint; close loops with add_loop" % (
                                     where, child, owner.name, self._joints[owner.name]))
        ancestor: Optional[str] = parent
        while ancestor is not None:
            if ancestor == child:
                raise MechanismError("%s.child: body '%s' is an ancestor of '%s': the joint would close a cycle; "
                                     "a mechanism is a tree, close loops with add_loop" % (where, child, parent))
            ancestor = self._parent_of.get(ancestor)
        origin_xyz = _vec(xyz, "m", where + ".origin.xyz")
        origin_rpy = _vec(rpy, "rad", where + ".origin.rpy")
        one = jtype in (pb.Joint.REVOLUTE, pb.Joint.CONTINUOUS, pb.Joint.PRISMATIC)
        a = _vec(axis, "the axis", where + ".axis")
        if one and not math.hypot(*a) > 0:
            raise MechanismError("%s.axis: expected a finite axis of non-zero length, found (%s, %s, %s)" % (
                where, *(_num(x) for x in a)))
        k, r, c = float(stiffness), float(rest), float(damping)
        for what, value, unit in (("spring", k or r, "stiffness"), ("damping", c, "damper"),
                                  ("actuator_input", actuator, "actuator")):
            if value and not one:
                raise MechanismError("%s.%s: %ss act on one-coordinate joints only (revolute, continuous, "
                                     "prismatic)" % (where, what, unit))
        if not (math.isfinite(k) and k >= 0 and math.isfinite(r)):
            raise MechanismError("%s.spring: expected a finite stiffness >= 0 and a finite rest value, found "
                                 "%s and %s" % (where, _num(k), _num(r)))
        if not (math.isfinite(c) and c >= 0):
            raise MechanismError("%s.damping: expected a finite damping >= 0, found %s" % (where, _num(c)))
        if actuator is not None and (not isinstance(actuator, str) or not _IDENTIFIER.match(actuator)):
            raise MechanismError("%s.actuator_input: expected an input name (an identifier), found %r" % (
                where, actuator))
        j = pb.Joint(name=name, type=jtype, parent=parent, child=child)
        set_pose(j.origin, origin_xyz, origin_rpy)
        if one:
            set_vector(j.axis, a)
        if k or r:
            j.spring.stiffness, j.spring.rest = k, r
        if c:
            j.damping = c
        if actuator:
            j.actuator_input = actuator
            self._inputs.setdefault(actuator, 0.0)
        n = len(initial_coordinates(jtype))
        q = self._state(q0, n, initial_coordinates(jtype), where + " q0")
        if jtype in (pb.Joint.SPHERICAL, pb.Joint.FLOATING) and abs(math.sqrt(sum(x * x for x in q[-4:])) - 1) > 1e-12:
            raise MechanismError("%s q0: expected a unit quaternion (qw, qx, qy, qz), found %r" % (where, q[-4:]))
        v = self._state(v0, n, [0.0] * n, where + " v0")
        self._m.joints.add().CopyFrom(j)
        self._joints[name] = len(self._m.joints) - 1
        self._parent_of[child] = parent
        self._q0[name], self._v0[name] = q, v
        return self._m.joints[-1]

    @staticmethod
    def _state(value: Union[float, Vector, None], count: int, default: List[float], field: str) -> List[float]:
        if value is None:
            return list(default)
        if count == 0:
            raise MechanismError("%s: a fixed joint has no coordinate" % field)
        values = [value] if isinstance(value, (int, float)) else value
        return list(_vec(values, "the joint's coordinates", field, count))

    def add_loop(self, name: str, kind: Union[str, int], body_a: str, point_a: Vector, body_b: str,
                 point_b: Vector = (0, 0, 0), axis: Optional[Vector] = None, distance: float = 0.0,
                 plane_normal: Optional[Vector] = None, gains: Optional[Tuple[float, float]] = None) -> Any:
        """A loop closure between point A fixed in ``body_a`` (``point_a``, m,
        its frame) and point B fixed in ``body_b``: ``kind`` "point" (B on
        A: a ball joint, or with ``plane_normal`` (body_a's frame) a planar
        pin), "distance" (|B - A| = ``distance`` m, a massless rod) or
        "point_on_axis" (B on the line through A along ``axis``, body_a's
        frame: a slider). ``gains``: its own Baumgarte (alpha, beta), 1/s;
        default the system's. Returns the LoopClosure message.

        Its multipliers are forces in N: for a constraint d.u = 0 (d = B - A,
        u a unit direction), lambda > 0 pushes body_b by -lambda u at B and
        body_a by +lambda u at A; a distance closure's lambda > 0 is tension."""
        where = self._element("loop closure", "loop_closures", name, self._loops)
        ltype = _type(kind, LOOP_TYPES, where, "point, distance or point_on_axis")
        self._two_bodies(where, ("body_a", body_a), ("body_b", body_b),
                         "a loop closure joins two different bodies, found '%s' twice" % body_a)
        lc = pb.LoopClosure(name=name, type=ltype, body_a=body_a, body_b=body_b)
        pa = _vec(point_a, "m", where + ".point_a")
        pbv = _vec(point_b, "m", where + ".point_b")
        if any(pa):
            set_vector(lc.point_a, pa)
        if any(pbv):
            set_vector(lc.point_b, pbv)
        if ltype == pb.LoopClosure.DISTANCE:
            d = float(distance)
            if not (math.isfinite(d) and d > 0):
                raise MechanismError("%s.distance: expected a finite distance > 0, found %s" % (where, _num(d)))
            lc.distance = d
        elif distance:
            raise MechanismError("%s.distance: only a distance closure has a distance" % where)
        ax = None
        if ltype == pb.LoopClosure.POINT_ON_AXIS:
            ax = _vec(axis if axis is not None else (0, 0, 0), "the axis", where + ".axis")
            if not math.hypot(*ax) > 0:
                raise MechanismError("%s.axis: expected a finite axis of non-zero length" % where)
            set_vector(lc.axis, ax)
        elif axis is not None:
            raise MechanismError("%s.axis: only a point_on_axis closure has an axis" % where)
        if plane_normal is not None:
            n = _vec(plane_normal, "the plane's normal", where + ".plane_normal")
            if not math.hypot(*n) > 0:
                raise MechanismError("%s.plane_normal: expected a normal of non-zero length" % where)
            if ax is not None and not np.linalg.norm(np.cross(ax, n)) > 1e-9 * math.hypot(*ax) * math.hypot(*n):
                raise MechanismError("%s.plane_normal: the plane's normal must not be parallel to the axis" % where)
            set_vector(lc.plane_normal, n)
        if gains is not None:
            alpha, beta = _vec(gains, "alpha, beta in 1/s", where + ".gains", 2)
            if alpha < 0 or beta < 0:
                raise MechanismError("%s.gains: expected alpha, beta >= 0, found %r" % (where, gains))
            lc.gains.alpha, lc.gains.beta = alpha, beta
        self._m.loop_closures.add().CopyFrom(lc)
        self._loops[name] = len(self._m.loop_closures) - 1
        return self._m.loop_closures[-1]

    def add_input(self, name: str, default: float = 0.0) -> None:
        """Declares a system input (e.g. an actuator's force) with its value
        until a client sets another one."""
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise MechanismError("system.inputs: expected an input name (an identifier), found %r" % (name,))
        if not math.isfinite(float(default)):
            raise MechanismError("system.inputs (input '%s').default_value: expected a finite number" % name)
        self._inputs[name] = float(default)

    # ---- results
    @property
    def coordinates(self) -> List[str]:
        """The coordinates the engine makes of the joints, in order."""
        return [n for j in self._m.joints for n in joint_coordinate_names(j)]

    def message(self) -> Any:
        """A copy of the ``tether.v1.Mechanism`` built so far, checked for a
        single root body."""
        children = {j.child for j in self._m.joints}
        roots = [b.name for b in self._m.bodies if b.name not in children]
        if not roots:
            raise MechanismError("system.mechanism.bodies: a mechanism needs at least one body (its root, the "
                                 "world frame)")
        if len(roots) > 1:
            raise MechanismError("system.mechanism.bodies[%d] (body '%s'): bodies %s are no joint's child: a "
                                 "mechanism has exactly one root body (the world frame); attach the others "
                                 "with a joint (fixed, floating, ...)" % (
                                     self._bodies[roots[1]], roots[1], ", ".join("'%s'" % r for r in roots[:8])))
        out = pb.Mechanism()
        out.CopyFrom(self._m)
        return out

    def spec(self, step_size: float = 1e-3, baumgarte: Optional[Tuple[float, float]] = None,
             outputs: Optional[Dict[str, str]] = None, energy_output: bool = True) -> Any:
        """The whole ``SimulationSpec``: this mechanism, its inputs, the
        system's Baumgarte ``(alpha, beta)`` (1/s; default 10, 10 when there
        is a quaternion or a loop closure, else none), the ``outputs``
        (name -> expression; they may use the joint coordinates and the
        mechanism's definitions, e.g. ``rod_px``), an output ``energy``
        unless ``energy_output`` is False, the initial state from the
        joints' q0 and v0, and RK4 at ``step_size`` s."""
        spec = pb.SimulationSpec()
        spec.system.mechanism.CopyFrom(self.message())
        for name, value in self._inputs.items():
            spec.system.inputs.add(name=name, default_value=value)
        if baumgarte is None and len(self._m.loop_closures):
            baumgarte = (10.0, 10.0)
        if baumgarte is not None:
            alpha, beta = _vec(baumgarte, "alpha, beta in 1/s", "system.baumgarte", 2)
            spec.system.baumgarte.alpha, spec.system.baumgarte.beta = alpha, beta
        spec_defaults(spec, step_size, energy_output)
        for name, expression in (outputs or {}).items():
            spec.system.outputs.add(name=name, expression=expression)
        for j in self._m.joints:
            spec.initial.q.extend(self._q0[j.name])
            spec.initial.v.extend(self._v0[j.name])
        return spec

    @staticmethod
    def write_json(path: "Union[str, os.PathLike[str]]", spec: Any) -> None:
        """Writes a SimulationSpec as its protobuf JSON mapping (the
        description file `tether run` and ``load_spec`` read)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(json_format.MessageToJson(spec, indent=1))
            f.write("\n")
