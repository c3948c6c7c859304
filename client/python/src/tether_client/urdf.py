"""URDF -> a runnable SimulationSpec with a mechanism, the Python twin of
`tether urdf` (client/urdf/urdf_import.cc, docs/MECHANISMS.md): one body per
link, one joint per joint (one coordinate per non-fixed joint, named after
it, in file order), gravity 9.81 m/s^2 along -z of the root link, the initial
state zero (a floating joint at the identity quaternion), RK4 at h = 1e-3 and
an output `energy`. <limit> is not enforced (a warning), <dynamics damping>
becomes a damper, visual/collision/material/transmission/gazebo are ignored
(one note).

    from tether_client.urdf import load_urdf
    spec, warnings = load_urdf("robot.urdf")

Read with expat, hardened like the C++ reader: at most 16 MiB, elements
nested at most 32 deep, no DOCTYPE (so no entity declarations). Errors raise
UrdfError naming the file, line and element ("arm.urdf:12: <link
name='fore'>: missing <inertial>"). The mechanism's own checks (cycles,
masses, inertias) are the engine's: validate the spec to get them.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any, Dict, List, Set, Tuple, Union
from xml.parsers import expat

from tether_client.mechanism import JOINT_TYPES, initial_coordinates, spec_defaults
from tether_client.messages import pb

MAX_BYTES = 16 << 20
MAX_DEPTH = 32
MAX_TAGS = 250000  # '<' in the file: as the C++ reader (kMaxUrdfTags)
MAX_ELEMENTS = 1000


class UrdfError(ValueError):
    """A URDF file that cannot be imported; the message lists every error."""


class _Element:
    __slots__ = ("tag", "attrs", "line", "children")

    def __init__(self, tag, attrs, line):
        self.tag, self.attrs, self.line, self.children = tag, attrs, line, []

    def first(self, tag):
        return next((c for c in self.children if c.tag == tag), None)


def _parse(data, source):
    if len(data) > MAX_BYTES:
        raise UrdfError("%s: the file has %d bytes, more than the limit of %d" % (source, len(data), MAX_BYTES))
    tags = data.count(b"<")
    if tags > MAX_TAGS:
        raise UrdfError("%s: the file has %d tags ('<'), more than the limit of %d (a URDF of 1000 links has "
                        "about 25000)" % (source, tags, MAX_TAGS))
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise UrdfError("%s: a DOCTYPE or ENTITY declaration: not accepted (URDF needs none, and entities "
                        "are not expanded)" % source)
    parser = expat.ParserCreate()
    stack, root = [], []

    def start(tag, attrs):
        if len(stack) >= MAX_DEPTH:
            raise UrdfError("%s: line %d: elements nested more than %d deep"
                            % (source, parser.CurrentLineNumber, MAX_DEPTH))
        e = _Element(tag, attrs, parser.CurrentLineNumber)
        (stack[-1].children if stack else root).append(e)
        stack.append(e)

    def end(tag):
        stack.pop()

    parser.StartElementHandler, parser.EndElementHandler = start, end
    try:
        parser.Parse(data, True)
    except expat.ExpatError as e:
        raise UrdfError("%s: line %d: not well-formed XML: %s" % (source, e.lineno, expat.ErrorString(e.code)))
    if not root or root[0].tag != "robot":
        raise UrdfError("%s: expected the root element <robot>" % source)
    return root[0]


# What URDF has in the elements this reader reads (the URDF XML
# specification's <joint> and <inertial>), and the attributes of those it
# takes numbers from; as the C++ reader (client/urdf/urdf_import.cc).
_JOINT_CHILDREN = ("origin", "parent", "child", "axis", "calibration", "dynamics", "limit", "mimic",
                   "safety_controller")
_INERTIAL_CHILDREN = ("origin", "mass", "inertia")
_JOINT_ATTRIBUTES = {"origin": ("xyz", "rpy"), "parent": ("link",), "child": ("link",),
                     "axis": ("xyz",), "dynamics": ("damping", "friction")}


def _list(words):
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0]


def _identifier(name):
    r = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return "_" + r if not r or r[0].isdigit() else r


def load_urdf(path: "Union[str, os.PathLike[str]]") -> Tuple[Any, List[str]]:
    """(SimulationSpec, warnings) from a URDF file."""
    with open(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    return parse_urdf(data, os.fspath(path))


def parse_urdf(data: Union[str, bytes], source: str = "urdf") -> Tuple[Any, List[str]]:
    """(SimulationSpec, warnings) from URDF text (bytes or str)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    robot = _parse(data, source)
    errors: List[str] = []
    warnings: List[str] = []
    ignored: Set[str] = set()
    renamed: List[Any] = []
    limited: List[str] = []

    def where(e):
        n = e.attrs.get("name")
        return "%s:%d: <%s%s>" % (source, e.line, e.tag, " name='%s'" % n if n is not None else "")

    def error(e, msg):
        errors.append(where(e) + ": " + msg)

    checks: List[str] = []  # warnings of check_children() and check_attributes(), in file order

    def check_children(e, known):
        # One not in `known` (a typo, or an extension this reader does not
        # read) is a warning; a second of a kind URDF has once an error.
        seen: Dict[str, int] = {}
        for c in e.children:
            if c.tag not in known:
                checks.append("warning: %s: not an element URDF reads in <%s> (expected %s); not read"
                              % (where(c), e.tag, _list(known)))
            elif c.tag in seen:
                error(c, "a second <%s> in <%s> (the first is at line %d); expected one"
                      % (c.tag, e.tag, seen[c.tag]))
            else:
                seen[c.tag] = c.line

    def check_attributes(e, known):
        for a in e.attrs:
            if a not in known:
                checks.append("warning: %s: attribute '%s' is not one URDF reads there (expected %s); "
                              "not read" % (where(e), a, _list(known)))

    def numbers(e, attr, count):
        text = e.attrs.get(attr)
        if text is None:
            return None
        try:
            v = [float(x) for x in text.split()]
        except ValueError:
            v = None
        if v is None or len(v) != count or not all(math.isfinite(x) for x in v):
            error(e, "attribute %s='%s': expected %d finite number%s" % (attr, text, count, "" if count == 1 else "s"))
            return None
        return v

    def origin(parent, pose):
        o = parent.first("origin")
        if o is None:
            return
        xyz, rpy = numbers(o, "xyz", 3), numbers(o, "rpy", 3)
        if xyz:
            pose.xyz.x, pose.xyz.y, pose.xyz.z = xyz
        if rpy:
            pose.rpy.x, pose.rpy.y, pose.rpy.z = rpy

    spec = pb.SimulationSpec()
    mech = spec.system.mechanism
    mech.gravity.z = -9.81
    links: Dict[str, Any] = {}
    joints: List[Any] = []
    ids: Dict[str, Set[str]] = {"link": set(), "joint": set()}

    def name_of(e, kind):
        n = e.attrs.get("name")
        if n is None:
            error(e, "missing attribute 'name'")
            return ""
        if n == "":
            error(e, "the name is empty; expected a name (URDF requires one)")
            return ""
        i = _identifier(n)
        if i != n:
            renamed.append("'%s' -> %s" % (n, i))
        if i in ids[kind]:
            error(e, "the name '%s' (identifier %s) is used twice" % (n, i))
        ids[kind].add(i)
        return i

    types = {t: JOINT_TYPES[t] for t in ("revolute", "continuous", "prismatic", "fixed", "floating")}
    for e in robot.children:
        if e.tag == "link":
            if len(links) >= MAX_ELEMENTS:
                raise UrdfError(where(e) + ": more than %d links" % MAX_ELEMENTS)
            b = mech.bodies.add()
            b.name = name_of(e, "link")
            links[e.attrs.get("name")] = e
            ignored.update("<%s>" % c.tag for c in e.children if c.tag != "inertial")
            inertials = [c for c in e.children if c.tag == "inertial"]
            if len(inertials) > 1:
                error(inertials[1], "a second <inertial> in <link> (the first is at line %d); expected one"
                      % inertials[0].line)
            inertial = e.first("inertial")
            if inertial is not None:
                check_children(inertial, _INERTIAL_CHILDREN)
                if inertial.first("origin") is not None:
                    check_attributes(inertial.first("origin"), ("xyz", "rpy"))
                origin(inertial, b.inertial_origin)
                m, i = inertial.first("mass"), inertial.first("inertia")
                if m is not None:
                    check_attributes(m, ("value",))
                if i is not None:
                    check_attributes(i, ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
                if m is None:
                    error(inertial, "missing <mass value=...>")
                elif numbers(m, "value", 1):
                    b.mass = numbers(m, "value", 1)[0]
                if i is None:
                    error(inertial, "missing <inertia ixx=... ixy=... ixz=... iyy=... iyz=... izz=...>")
                else:
                    for attr in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
                        v = numbers(i, attr, 1)
                        if v is None and attr not in i.attrs:
                            error(i, "missing attribute '%s'" % attr)
                        elif v:
                            setattr(b.inertia, attr, v[0])
        elif e.tag == "joint":
            if len(joints) >= MAX_ELEMENTS:
                raise UrdfError(where(e) + ": more than %d joints" % MAX_ELEMENTS)
            joints.append(e)
            check_children(e, _JOINT_CHILDREN)
            check_attributes(e, ("name", "type"))
            for tag, known in _JOINT_ATTRIBUTES.items():
                if e.first(tag) is not None:
                    check_attributes(e.first(tag), known)
            j = mech.joints.add()
            j.name = name_of(e, "joint")
            t = e.attrs.get("type", "")
            if t not in types:
                error(e, "joint type '%s' %s" % (t, "is not supported (build it from two prismatic and one revolute "
                                                  "joint)" if t == "planar" else
                                                  ": expected revolute, continuous, prismatic, fixed or floating"))
            else:
                j.type = types[t]
            for which in ("parent", "child"):
                pc = e.first(which)
                if pc is None or "link" not in pc.attrs:
                    error(e, "missing <%s link=...>" % which)
                    continue
                setattr(j, which, _identifier(pc.attrs["link"]))
            origin(e, j.origin)
            j.axis.x = 1  # URDF's default axis
            a = e.first("axis")
            if a is not None:
                v = numbers(a, "xyz", 3)
                if v:
                    j.axis.x, j.axis.y, j.axis.z = v
                    if not any(v) and t in ("revolute", "continuous", "prismatic"):
                        error(a, "the axis has length zero")
            if e.first("limit") is not None and t not in ("fixed", "continuous"):
                limited.append(j.name)
            d = e.first("dynamics")
            if d is not None:
                v = numbers(d, "damping", 1)
                if v and v[0] != 0:
                    # A damper acts on a one-coordinate joint; on a fixed or
                    # floating joint it is ignored with a note (the C++ reader
                    # does the same).
                    if t in ("revolute", "continuous", "prismatic"):
                        j.damping = v[0]
                    else:
                        ignored.add("<dynamics damping> on a %s joint" % t)
                f = numbers(d, "friction", 1)
                if f and f[0] != 0:
                    ignored.add("<dynamics friction>")
            if e.first("mimic") is not None:
                error(e.first("mimic"), "<mimic> is not supported")
        elif e.tag != "mujoco":
            ignored.add("<%s>" % e.tag)
    if not errors:
        children = {}
        for e in joints:
            for which in ("parent", "child"):
                link = e.first(which).attrs["link"]
                if link not in links:
                    error(e.first(which), "no link named '%s'" % link)
            children[e.first("child").attrs["link"]] = e
        for name, l in links.items():
            j = children.get(name)
            if j is None and l.first("inertial") is not None:
                warnings.append("note: the root link '%s' does not move: its <inertial> (and that of links fixed "
                                "to it) is not simulated" % name)
            if l.first("inertial") is None and j is not None and j.attrs.get("type") != "fixed":
                error(l, "missing <inertial>: the link moves on joint '%s' and needs a mass and an inertia (only "
                         "the root and links on fixed joints may omit it)" % j.attrs.get("name"))
    if errors:
        raise UrdfError("URDF %s: %d error%s\n  %s" % (source, len(errors), "" if len(errors) == 1 else "s",
                                                     "\n  ".join(errors)))
    for j in mech.joints:
        spec.initial.q.extend(initial_coordinates(j.type))
    spec.initial.v.extend([0] * len(spec.initial.q))
    spec_defaults(spec)
    warnings.extend(checks)
    if limited:
        warnings.append("joint limits are not enforced (<limit> read only for documentation): " + ", ".join(limited))
    if ignored:
        warnings.append("note: ignored (no geometry, contact, friction or transmission model): " +
                        " ".join(sorted(ignored)))
    if renamed:
        warnings.append("note: names made identifiers: " + " ".join(renamed))
    return spec, warnings
