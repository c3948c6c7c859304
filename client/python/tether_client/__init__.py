"""Python client for the Tether simulation service (tether.v1.Simulator).

A thin wrapper over the generated gRPC stub. Messages are the generated
protobuf classes, re-exported here as ``tether_client.pb`` (simulation.proto
and simulator.proto share one namespace below), e.g. ``pb.SimulationSpec``.

    from tether_client import Client, load_spec
    client = Client("127.0.0.1:50051")
    spec = load_spec("examples/circle_pendulum.json")
    session = client.create_session(spec)
    stream = client.run(session.id, until_time=2.0, every=100)
    for frame in stream:
        print(frame.t, frame.residuals.position)
    print(stream.certificate.position_bound)

Over TLS (tls_ca; tls_cert and tls_key for mTLS) with a bearer token (token
or token_file), the options of the C++ client's ConnectOptions and of
``tether --server`` (see Client; a bad one raises ConnectOptionError):

    client = Client("sim.example:443", tls_ca="ca.crt",
                    token_file="/run/secrets/tether-token")
    client = Client.from_env("sim.example:443")  # TETHER_TLS_CA, ...

Errors are raised as TetherError (a grpc.RpcError): ``code`` is the
grpc.StatusCode, ``message`` the server's message, ``field_violations`` the
google.rpc.BadRequest (field, description) pairs, field being the request
path such as "spec.system.constraints[0].expression".

The generated modules live in the git-ignored folder tether_client/tether/
(made by client/python/generate.sh; made on first import when missing).
Use /usr/bin/python3 on Debian: it sees python3-grpcio and python3-protobuf.
"""

import collections
import ipaddress
import os
import queue
import re
import subprocess
import sys
import threading
import warnings

_HERE = os.path.dirname(os.path.abspath(__file__))
_GENERATED = os.path.join(_HERE, "tether", "v1", "simulator_pb2_grpc.py")


def _ensure_generated():
    """Generates the stubs when missing or older than the .proto files."""
    proto_dir = os.path.join(_HERE, "..", "..", "..", "proto", "tether", "v1")
    protos = [os.path.join(proto_dir, name)
              for name in ("simulation.proto", "simulator.proto")]
    stale = not os.path.exists(_GENERATED) or any(
        os.path.exists(p) and os.path.getmtime(p) > os.path.getmtime(_GENERATED)
        for p in protos)
    if not stale:
        return
    script = os.path.join(_HERE, "..", "generate.sh")
    result = subprocess.run(["bash", script], capture_output=True, text=True)
    if result.returncode != 0 or not os.path.exists(_GENERATED):
        raise ImportError("tether_client: generating the gRPC stubs failed "
                          "(run client/python/generate.sh):\n" + result.stderr)


_ensure_generated()
# The generated modules import "tether.v1.simulation_pb2": their output root
# must be on sys.path.
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import grpc  # noqa: E402
from google.protobuf import json_format  # noqa: E402

from tether.v1 import simulation_pb2, simulator_pb2  # noqa: E402
from tether.v1 import simulator_pb2_grpc  # noqa: E402


class _Messages:
    """Every message and enum of tether.v1 in one namespace."""

    def __init__(self, *modules):
        for module in modules:
            for name in dir(module):
                if not name.startswith("_"):
                    setattr(self, name, getattr(module, name))


pb = _Messages(simulation_pb2, simulator_pb2)

__all__ = ["Client", "ConnectOptionError", "CoSimulation", "RunStream",
           "TetherError", "is_loopback", "load_spec", "parse_spec", "pb",
           "LocalServer"]

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


# --- errors -----------------------------------------------------------------

def _read_varint(data, pos):
    value, shift = 0, 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data):
    """(number, wire_type, value) of a protobuf message's fields."""
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _read_varint(data, pos)
        elif wire_type == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire_type == 2:
            length, pos = _read_varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire_type == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError("unsupported wire type %d" % wire_type)
        yield number, wire_type, value


def _strings(data, number):
    return [bytes(v) for n, w, v in _fields(data) if n == number and w == 2]


def decode_field_violations(status_details):
    """google.rpc.BadRequest field violations in a serialized google.rpc.Status.

    Decoded from the wire format (Debian ships no googleapis Python modules):
    Status.details = 3 (Any: type_url = 1, value = 2), BadRequest
    .field_violations = 1 (field = 1, description = 2).
    """
    violations = []
    try:
        for any_bytes in _strings(status_details, 3):
            type_url = b"".join(_strings(any_bytes, 1)).decode()
            if not type_url.endswith("google.rpc.BadRequest"):
                continue
            for value in _strings(any_bytes, 2):
                for violation in _strings(value, 1):
                    field = b"".join(_strings(violation, 1)).decode()
                    description = b"".join(_strings(violation, 2)).decode()
                    violations.append((field, description))
    except (ValueError, UnicodeDecodeError):
        pass
    return violations


def _text(data, number):
    return b"".join(_strings(data, number)).decode()


def decode_error_subjects(status_details):
    """What a NOT_FOUND, FAILED_PRECONDITION or RESOURCE_EXHAUSTED is about.

    (detail, type, name, description) tuples from the google.rpc.ResourceInfo
    (resource_type = 1, resource_name = 2, description = 4),
    PreconditionFailure (violations = 1: type = 1, subject = 2,
    description = 3) and QuotaFailure (violations = 1: subject = 1,
    description = 2) details of a serialized google.rpc.Status; ``detail`` is
    "ResourceInfo", "PreconditionFailure" or "QuotaFailure", ``type`` is empty
    for a QuotaFailure.
    """
    subjects = []
    try:
        for any_bytes in _strings(status_details, 3):
            type_url = _text(any_bytes, 1)
            for value in _strings(any_bytes, 2):
                if type_url.endswith("google.rpc.ResourceInfo"):
                    subjects.append(("ResourceInfo", _text(value, 1),
                                     _text(value, 2), _text(value, 4)))
                elif type_url.endswith("google.rpc.PreconditionFailure"):
                    for v in _strings(value, 1):
                        subjects.append(("PreconditionFailure", _text(v, 1),
                                         _text(v, 2), _text(v, 3)))
                elif type_url.endswith("google.rpc.QuotaFailure"):
                    for v in _strings(value, 1):
                        subjects.append(("QuotaFailure", "", _text(v, 1),
                                         _text(v, 2)))
    except (ValueError, UnicodeDecodeError):
        pass
    return subjects


class TetherError(grpc.RpcError):
    """A failed call: the server's status code, message, field violations
    and error subjects (decode_error_subjects)."""

    def __init__(self, code, message, field_violations=(), error_subjects=()):
        super().__init__(message)
        self.code = code
        self.message = message
        self.field_violations = list(field_violations)
        self.error_subjects = list(error_subjects)

    @classmethod
    def from_rpc_error(cls, error):
        code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
        message = error.details() if hasattr(error, "details") else str(error)
        violations = []
        subjects = []
        trailers = error.trailing_metadata() if hasattr(
            error, "trailing_metadata") else None
        for key, value in trailers or ():
            if key == "grpc-status-details-bin":
                violations = decode_field_violations(value)
                subjects = decode_error_subjects(value)
        return cls(code, message or "", violations, subjects)

    def __str__(self):
        name = self.code.name if isinstance(self.code, grpc.StatusCode) else str(self.code)
        lines = ["%s: %s" % (name, self.message)]
        for field, description in self.field_violations:
            line = "%s: %s" % (field, description)
            if line not in self.message:
                lines.append("  " + line)
        return "\n".join(lines)


def _unchanged(error):
    return error


def _call(method, request, explain=_unchanged, **kwargs):
    try:
        return method(request, **kwargs)
    except grpc.RpcError as error:
        raise explain(TetherError.from_rpc_error(error)) from None


# --- specs ------------------------------------------------------------------

def parse_spec(text):
    """A SimulationSpec from its protobuf JSON mapping (camelCase or
    original field names; unknown fields are an error)."""
    return json_format.Parse(text, simulation_pb2.SimulationSpec())


def load_spec(path):
    """Reads a description file (JSON) into a SimulationSpec."""
    with open(path, encoding="utf-8") as f:
        return parse_spec(f.read())


# --- streams ----------------------------------------------------------------

class RunStream:
    """The frames of a Run, in order; ``certificate`` once iteration ends.

    Iterating raises TetherError when the run ends with an error (a run
    that fails numerically first yields every frame it computed, then raises
    ABORTED). ``cancel()`` stops it early.
    """

    def __init__(self, call, explain=_unchanged):
        self._call = call
        self._explain = explain
        self.certificate = None

    def __iter__(self):
        try:
            for response in self._call:
                yield from response.frames
                if response.HasField("certificate"):
                    self.certificate = response.certificate
        except grpc.RpcError as error:
            raise self._explain(TetherError.from_rpc_error(error)) from None

    def frames(self):
        """Every frame as a list (runs the stream to its end)."""
        return list(self)

    def cancel(self):
        self._call.cancel()


class CoSimulation:
    """A lockstep CoSimulate stream (FMI doStep style). Use as a context
    manager or call close(); step() advances by exactly
    ``communication_step`` with ``inputs`` held over the step and returns
    (frame, certificate) at the new time."""

    _END = object()

    def __init__(self, stub, session_id, timeout=None, explain=_unchanged):
        self.session_id = session_id
        self._explain = explain
        self._requests = queue.Queue()
        self._first = True
        self._closed = False
        self._responses = stub.CoSimulate(self._request_iterator(),
                                          timeout=timeout)

    def _request_iterator(self):
        while True:
            request = self._requests.get()
            if request is self._END:
                return
            yield request

    def step(self, communication_step, inputs=None):
        response = self.exchange(simulator_pb2.CoSimulateRequest(
            communication_step=communication_step, inputs=inputs or {}))
        return response.frame, response.certificate

    def try_step(self, communication_step, inputs=None):
        """A step with FMI Discard semantics (ON_FAILURE_DISCARD): returns
        the CoSimulateResponse; when ``response.discarded`` the step failed
        numerically and was undone (the session is at
        ``response.last_successful_time``, ``response.discard_reason`` says
        why) and the stream goes on."""
        return self.exchange(simulator_pb2.CoSimulateRequest(
            communication_step=communication_step, inputs=inputs or {},
            on_failure=simulator_pb2.CoSimulateRequest.ON_FAILURE_DISCARD))

    def save_snapshot(self, label=""):
        """Saves a snapshot of the session now (inside the stream); returns
        the Snapshot."""
        return self.exchange(simulator_pb2.CoSimulateRequest(
            save_snapshot=True, snapshot_label=label)).snapshot

    def restore_snapshot(self, snapshot_id):
        """Puts the session back to a snapshot (inside the stream); returns
        the frame at the restored state."""
        return self.exchange(simulator_pb2.CoSimulateRequest(
            restore_snapshot_id=snapshot_id)).frame

    def exchange(self, request):
        """Sends one CoSimulateRequest as it is and returns its
        CoSimulateResponse (the session id is filled in on the first)."""
        if self._closed:
            raise TetherError(grpc.StatusCode.FAILED_PRECONDITION,
                              "the co-simulation stream is closed")
        if self._first:
            request.session_id = self.session_id
            self._first = False
        self._requests.put(request)
        try:
            response = next(self._responses)
        except StopIteration:
            self._closed = True
            raise TetherError(grpc.StatusCode.INTERNAL,
                              "the server ended the co-simulation stream") from None
        except grpc.RpcError as error:
            self._closed = True
            raise self._explain(TetherError.from_rpc_error(error)) from None
        return response

    def close(self):
        """Half-closes the stream and waits for the server to end it."""
        if self._closed:
            return
        self._closed = True
        self._requests.put(self._END)
        try:
            for _ in self._responses:
                pass
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.CANCELLED:
                error = TetherError.from_rpc_error(error)
                raise self._explain(error) from None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.close()
        else:
            self._closed = True
            self._requests.put(self._END)
            self._responses.cancel()
        return False


# --- connection options: TLS, mTLS, a bearer token ---------------------------

# A token file is one token: anything larger is the wrong file.
_MAX_TOKEN_FILE_BYTES = 16 * 1024
_MAX_PEM_BYTES = 4 * 1024 * 1024

# Client.from_env's variables, the ones `tether --server` reads.
_OPTION_VARIABLES = (
    ("tls_ca", "TETHER_TLS_CA"),
    ("tls_cert", "TETHER_CLIENT_TLS_CERT"),
    ("tls_key", "TETHER_CLIENT_TLS_KEY"),
    ("tls_server_name", "TETHER_TLS_SERVER_NAME"),
    ("token", "TETHER_TOKEN"),
    ("token_file", "TETHER_TOKEN_FILE"),
)
_ALLOW_PLAINTEXT_TOKEN_VARIABLE = "TETHER_ALLOW_PLAINTEXT_TOKEN"
# tether-server's own certificate and key, which clients once read as
# theirs: field, the old variable, what the server means by it. Read (with
# a DeprecationWarning) only when neither TETHER_CLIENT_TLS_* is set, so a
# pair is never half the client's and half the server's.
_DEPRECATED_VARIABLES = (
    ("tls_cert", "TETHER_TLS_CERT", "certificate"),
    ("tls_key", "TETHER_TLS_KEY", "private key"),
)


class ConnectOptionError(ValueError):
    """A bad connection option of Client (or Client.from_env), raised before
    any channel is made. The message starts with the option's name (or the
    TETHER_* variable it came from) and names the file, e.g. "tls_ca
    /etc/tether/ca.crt: cannot read it: No such file or directory";
    ``option`` is that name. The token is never part of it."""

    def __init__(self, option, message):
        super().__init__(message)
        self.option = option


def _read_file(option, path, limit):
    """The bytes of ``path`` (the value of ``option``), at most ``limit``."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as error:
        raise ConnectOptionError(option, "%s %s: cannot read it: %s" % (
            option, path, error.strerror or error)) from None
    if len(data) > limit:
        raise ConnectOptionError(option, "%s %s: larger than %d bytes" % (
            option, path, limit))
    return data


def _read_pem(option, path):
    """A PEM file: readable and with at least one "-----BEGIN " line."""
    pem = _read_file(option, path, _MAX_PEM_BYTES)
    if b"-----BEGIN " not in pem:
        raise ConnectOptionError(option, "%s %s: not a PEM file (no "
                                 "-----BEGIN line)" % (option, path))
    return pem


def _check_token(option, described, token):
    """Raises unless ``token`` is non-empty visible ASCII (as an HTTP/2 header
    value allows and a bearer token is), never showing it; ``described`` is
    "token" or "token_file PATH"."""
    if not token:
        raise ConnectOptionError(option, described + ": the token is empty")
    for offset, char in enumerate(token):
        if not "\x21" <= char <= "\x7e":
            raise ConnectOptionError(
                option, "%s: the token has a space, a control or a "
                "non-ASCII byte at offset %d; expected visible ASCII"
                % (described, offset))


def _target_host(target):
    """The host of a gRPC target: "dns:///host:port",
    "dns://authority/host:port", "ipv4:a.b.c.d:port", "ipv6:[::1]:port",
    "host:port", "[::1]:port", "host"."""
    if target.startswith("dns:"):
        target = target[4:]
        if target.startswith("//"):
            slash = target.find("/", 2)
            target = "" if slash < 0 else target[slash + 1:]
    elif target.startswith(("ipv4:", "ipv6:")):
        target = target[5:].split(",")[0]  # the first of a list
    if target.startswith("["):
        close = target.find("]")
        return target if close < 0 else target[1:close]
    colon = target.find(":")
    if colon < 0:
        return target
    # A bare IPv6 address has several colons and no port.
    if target.find(":", colon + 1) >= 0:
        return target
    return target[:colon]


def is_loopback(address):
    """Whether the gRPC target ``address`` is on this machine: localhost,
    127.0.0.0/8, ::1 (or ::ffff:127.x.y.z), a unix socket. Looks nothing up:
    any other name is not loopback."""
    if address.startswith(("unix:", "unix-abstract:")):
        return True
    host = _target_host(address)
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


class _CallDetails(
        collections.namedtuple("_CallDetails", (
            "method", "timeout", "metadata", "credentials", "wait_for_ready",
            "compression")),
        grpc.ClientCallDetails):
    pass


class _BearerToken(grpc.UnaryUnaryClientInterceptor,
                   grpc.UnaryStreamClientInterceptor,
                   grpc.StreamUnaryClientInterceptor,
                   grpc.StreamStreamClientInterceptor):
    """Adds `authorization: Bearer <token>` to every call of a plaintext
    channel (over TLS the token is the channel's call credentials)."""

    def __init__(self, token):
        self._metadata = (("authorization", "Bearer " + token),)

    def _intercept(self, continuation, details, request):
        details = _CallDetails(
            details.method, details.timeout,
            tuple(details.metadata or ()) + self._metadata,
            details.credentials, getattr(details, "wait_for_ready", None),
            getattr(details, "compression", None))
        return continuation(details, request)

    intercept_unary_unary = _intercept
    intercept_unary_stream = _intercept
    intercept_stream_unary = _intercept
    intercept_stream_stream = _intercept


# --- client -----------------------------------------------------------------

_HEALTH_NAMES = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING",
                 3: "SERVICE_UNKNOWN"}


class Client:
    """A connection to a tether-server at ``address`` ("host:port", or any
    gRPC target).

    ``timeout`` (seconds, None = no deadline) applies to each unary call and
    to each whole stream.

    Transport security, as the C++ client's ConnectOptions and ``tether
    --server`` (Client.from_env takes them from TETHER_* variables). When any
    of ``tls_ca``, ``tls_cert`` or ``tls_server_name`` is set the channel
    uses TLS (``tls`` is True); when none is, plaintext, as without options.

    - ``tls_ca``: PEM file of the root certificates that sign the server's
      certificate; None: gRPC's default roots (the system's).
    - ``tls_cert``, ``tls_key``: PEM files of this client's certificate chain
      and private key, for a server that requires client certificates
      (mTLS); both or neither.
    - ``tls_server_name``: the name checked against the server's certificate
      instead of the host of the address.
    - ``token``: every call (Health included) carries the metadata
      `authorization: Bearer <token>`. Over TLS it is the channel's call
      credentials; over plaintext, metadata added to each call, and then
      only to a loopback address (is_loopback) unless
      ``allow_plaintext_token``: a token sent in plaintext can be read and
      replayed by anyone on the path. Visible ASCII only.
    - ``token_file``: the token read from this file instead (trailing CR/LF
      stripped), so it does not show in the program; not both.
    - ``allow_plaintext_token``: allows a token over plaintext to a
      non-loopback address (say, behind a service mesh that encrypts the
      hop).

    The files are read here; connecting is lazy (the first call connects).
    A bad option raises ConnectOptionError naming the option and the file,
    before any channel is made. A failed TLS handshake is a TetherError
    UNAVAILABLE whose message says so and names the CA file and the name
    checked.
    """

    def __init__(self, address, timeout=None,
                 max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES, *, tls_ca=None,
                 tls_cert=None, tls_key=None, tls_server_name=None, token=None,
                 token_file=None, allow_plaintext_token=False, _names=None):
        self.address = address
        self.timeout = timeout
        names = {"allow_plaintext_token": "allow_plaintext_token=True"}
        names.update(_names or {})

        def name(field):
            return names.get(field, field)

        tls_ca, tls_cert, tls_key, token_file = (
            os.fspath(path) if path else ""
            for path in (tls_ca, tls_cert, tls_key, token_file))
        tls_server_name = tls_server_name or ""
        if bool(tls_cert) != bool(tls_key):
            if tls_cert:
                raise ConnectOptionError(name("tls_key"), name("tls_key") + (
                    ": missing; a client certificate needs its private key"))
            raise ConnectOptionError(name("tls_cert"), name("tls_cert") + (
                ": missing; a client private key needs its certificate chain"))

        token_option = name("token")
        if token and token_file:
            raise ConnectOptionError(
                name("token_file"), "%s: set either %s or %s, not both" % (
                    name("token_file"), name("token"), name("token_file")))
        if token:
            if not isinstance(token, str):
                raise ConnectOptionError(token_option,
                                         token_option + ": expected a str")
            _check_token(token_option, token_option, token)
        elif token_file:
            token_option = name("token_file")
            data = _read_file(token_option, token_file, _MAX_TOKEN_FILE_BYTES)
            # latin-1 maps each byte to one character: offsets are bytes.
            token = data.rstrip(b"\r\n").decode("latin-1")
            _check_token(token_option, "%s %s" % (token_option, token_file),
                         token)

        self.tls = bool(tls_ca or tls_cert or tls_server_name)
        self._tls_ca = tls_ca
        self._tls_cert = tls_cert
        self._tls_server_name = tls_server_name
        options = [
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes),
        ]
        if not self.tls:
            if (token and not allow_plaintext_token
                    and not is_loopback(address)):
                raise ConnectOptionError(token_option, (
                    "%s: refusing to send a bearer token in plaintext to %s, "
                    "which is not a loopback address (anyone on the path "
                    "could read and replay it): use TLS (%s), or %s when the "
                    "hop is protected otherwise") % (
                        token_option, address, name("tls_ca"),
                        name("allow_plaintext_token")))
            self.channel = grpc.insecure_channel(address, options=options)
            if token:
                self.channel = grpc.intercept_channel(self.channel,
                                                      _BearerToken(token))
        else:
            root = _read_pem(name("tls_ca"), tls_ca) if tls_ca else None
            chain = key = None
            if tls_cert:
                chain = _read_pem(name("tls_cert"), tls_cert)
                key = _read_pem(name("tls_key"), tls_key)
            if tls_server_name:
                options.append(("grpc.ssl_target_name_override",
                                tls_server_name))
            credentials = grpc.ssl_channel_credentials(
                root_certificates=root, private_key=key,
                certificate_chain=chain)
            if token:
                credentials = grpc.composite_channel_credentials(
                    credentials, grpc.access_token_call_credentials(token))
            self.channel = grpc.secure_channel(address, credentials,
                                               options=options)
        self.stub = simulator_pb2_grpc.SimulatorStub(self.channel)

    @classmethod
    def from_env(cls, address, environ=None, **kwargs):
        """A Client whose connection options not given as keywords come from
        the variables `tether --server` reads: TETHER_TLS_CA,
        TETHER_CLIENT_TLS_CERT, TETHER_CLIENT_TLS_KEY,
        TETHER_TLS_SERVER_NAME, TETHER_TOKEN, TETHER_TOKEN_FILE and
        TETHER_ALLOW_PLAINTEXT_TOKEN ("true" or "false"), in ``environ``
        (default os.environ). An empty variable is unset; a token or
        token_file keyword overrides both token variables; setting both is
        an error. Other keywords (timeout, max_message_bytes) are Client's.
        A ConnectOptionError names the variable the bad option came from
        ("TETHER_TLS_CA /x.crt: cannot read it: ...").

        TETHER_TLS_CERT and TETHER_TLS_KEY are tether-server's own
        certificate and key; as the client's they are deprecated: read only
        when neither TETHER_CLIENT_TLS_CERT nor TETHER_CLIENT_TLS_KEY is
        set, and a DeprecationWarning for each one set (used or ignored)."""
        environ = os.environ if environ is None else environ

        def env(variable):
            return environ.get(variable) or None

        names = {}
        for field, variable in _OPTION_VARIABLES:
            if kwargs.get(field) is None:
                names[field] = variable
        token_given = (kwargs.get("token") is not None
                       or kwargs.get("token_file") is not None)
        if (not token_given and env("TETHER_TOKEN")
                and env("TETHER_TOKEN_FILE")):
            raise ConnectOptionError("TETHER_TOKEN", "TETHER_TOKEN, "
                                     "TETHER_TOKEN_FILE: set one, not both")
        winner = next((variable for field, variable in _OPTION_VARIABLES
                       if field in ("tls_cert", "tls_key") and env(variable)),
                      None)
        for field, variable in _OPTION_VARIABLES:
            if kwargs.get(field) is not None:
                continue
            if field.startswith("token") and token_given:
                names[field] = field
                continue
            for old_field, old, what in _DEPRECATED_VARIABLES:
                if old_field != field or env(old) is None:
                    continue
                if winner is None:
                    message = "%s is deprecated for clients: use %s" % (
                        old, variable)
                    variable = old  # read below, and named in errors
                    names[field] = old
                else:
                    message = ("%s is deprecated for clients and ignored: "
                               "%s is set and wins" % (
                                   old, variable if env(variable)
                                   else winner))
                warnings.warn("%s (%s is tether-server's own %s)" % (
                    message, old, what), DeprecationWarning, stacklevel=2)
            value = env(variable)
            if value is not None:
                kwargs[field] = value
        if kwargs.get("allow_plaintext_token") is None:
            kwargs.pop("allow_plaintext_token", None)
            variable = _ALLOW_PLAINTEXT_TOKEN_VARIABLE
            names["allow_plaintext_token"] = variable + "=true"
            value = env(variable)
            if value is not None:
                if value not in ("true", "false"):
                    raise ConnectOptionError(variable, "%s: expected true or "
                                             "false, found '%s'" % (variable,
                                                                    value))
                kwargs["allow_plaintext_token"] = value == "true"
        return cls(address, _names=names, **kwargs)

    def _explain(self, error):
        """``error`` (a TetherError), a failed TLS handshake (or a plaintext
        client of a TLS server) explained, as the C++ client does."""
        if error.code != grpc.StatusCode.UNAVAILABLE:
            return error
        m = error.message
        # gRPC's words (1.51): "Ssl handshake failed: SSL_ERROR_SSL: ...
        # certificate verify failed" when this side rejects the server's
        # chain, "Peer name NAME is not in peer certificate" when the name
        # does not match; "Socket closed" when the server drops the
        # connection, as a TLS 1.3 server that rejects the client's
        # certificate does right after the handshake.
        handshake = any(word in m for word in ("andshake", "SSL", "TLS",
                                               "certificate"))
        dropped = "Socket closed" in m or "reset by peer" in m
        if self.tls and handshake:
            explained = "the TLS handshake with %s failed: %s" % (
                self.address, self._tls_checks())
        elif self.tls and dropped:
            explained = ("the server at %s closed the connection during or "
                         "right after the TLS handshake: %s" % (
                             self.address, self._tls_checks()))
        elif not self.tls and dropped:
            explained = ("the server at %s closed the connection (if it "
                         "serves TLS, this plaintext client cannot talk to "
                         "it: give tls_ca, the CA of its certificate)"
                         % self.address)
        else:
            return error
        return TetherError(error.code, "%s [gRPC: %s]" % (explained, m),
                           error.field_violations, error.error_subjects)

    def _tls_checks(self):
        """What a failed TLS handshake checked, for its message."""
        checks = "is the server's certificate signed by "
        checks += ("the CA in " + self._tls_ca if self._tls_ca else
                   "a CA of gRPC's default roots (no CA file given)")
        checks += " and issued for the name '%s'" % (
            self._tls_server_name or _target_host(self.address))
        if self._tls_cert:
            checks += (", and does the server accept the client certificate "
                       "%s?" % self._tls_cert)
        else:
            checks += (", and does the server require a client certificate "
                       "(none given)?")
        return checks

    def close(self):
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def validate(self, spec):
        """ValidationReport of ``spec`` (an invalid spec is report.valid ==
        False, not an error)."""
        request = simulator_pb2.ValidateRequest(spec=spec)
        return _call(self.stub.Validate, request, self._explain,
                     timeout=self.timeout).report

    def evaluate(self, spec, state=None, inputs=None):
        """EvaluateResponse (frame + warnings) at ``state`` or the spec's
        initial state."""
        request = simulator_pb2.EvaluateRequest(spec=spec, inputs=inputs or {})
        if state is not None:
            request.state.CopyFrom(state)
        return _call(self.stub.Evaluate, request, self._explain,
                     timeout=self.timeout)

    def create_session(self, spec, display_name=""):
        request = simulator_pb2.CreateSessionRequest(
            spec=spec, display_name=display_name)
        return _call(self.stub.CreateSession, request, self._explain,
                     timeout=self.timeout)

    def get_session(self, session_id):
        request = simulator_pb2.GetSessionRequest(session_id=session_id)
        return _call(self.stub.GetSession, request, self._explain,
                     timeout=self.timeout)

    def list_sessions(self, page_size=100):
        """Every session, following the page tokens."""
        sessions = []
        request = simulator_pb2.ListSessionsRequest(page_size=page_size)
        while True:
            response = _call(self.stub.ListSessions, request, self._explain,
                             timeout=self.timeout)
            sessions.extend(response.sessions)
            if not response.next_page_token:
                return sessions
            request.page_token = response.next_page_token

    def delete_session(self, session_id):
        request = simulator_pb2.DeleteSessionRequest(session_id=session_id)
        _call(self.stub.DeleteSession, request, self._explain,
                     timeout=self.timeout)

    def run(self, session_id, steps=0, until_time=None, every=None,
            frames_per_message=0, include_certificate=True,
            output_interval=None):
        """A RunStream over the frames; its ``certificate`` is set at the end.

        ``output_interval`` (s) adds frames at t0 + k * output_interval
        (interpolated inside steps, evaluated there); ``every`` defaults to
        1, or to 0 (no per-step frames but the last) with an
        output_interval."""
        if every is None:
            every = 0 if output_interval is not None else 1
        request = simulator_pb2.RunRequest(
            session_id=session_id, steps=steps, every=every,
            frames_per_message=frames_per_message,
            include_certificate=include_certificate)
        if until_time is not None:
            request.until_time = until_time
        if output_interval is not None:
            request.output_interval = output_interval
        return RunStream(self.stub.Run(request, timeout=self.timeout),
                         self._explain)

    def create_snapshot(self, session_id, label=""):
        """Saves the session's complete state server-side; the Snapshot."""
        request = simulator_pb2.CreateSnapshotRequest(session_id=session_id,
                                                      label=label)
        return _call(self.stub.CreateSnapshot, request, self._explain,
                     timeout=self.timeout)

    def list_snapshots(self, session_id):
        """ListSnapshotsResponse: the snapshots (oldest first) and the bound."""
        request = simulator_pb2.ListSnapshotsRequest(session_id=session_id)
        return _call(self.stub.ListSnapshots, request, self._explain,
                     timeout=self.timeout)

    def restore_snapshot(self, session_id, snapshot_id):
        """Rolls the session back to a snapshot; the Session."""
        request = simulator_pb2.RestoreSnapshotRequest(
            session_id=session_id, snapshot_id=snapshot_id)
        return _call(self.stub.RestoreSnapshot, request, self._explain,
                     timeout=self.timeout)

    def delete_snapshot(self, session_id, snapshot_id):
        request = simulator_pb2.DeleteSnapshotRequest(
            session_id=session_id, snapshot_id=snapshot_id)
        _call(self.stub.DeleteSnapshot, request, self._explain,
              timeout=self.timeout)

    def export_session(self, session_id, snapshot_id=0):
        """The session's description and state as portable bytes; with a
        snapshot_id, that snapshot's (allowed while a stream runs)."""
        request = simulator_pb2.ExportSessionRequest(session_id=session_id,
                                                     snapshot_id=snapshot_id)
        return _call(self.stub.ExportSession, request, self._explain,
                     timeout=self.timeout).data

    def import_session(self, data, display_name=""):
        """A new session from export_session's bytes; the Session."""
        request = simulator_pb2.ImportSessionRequest(data=data,
                                                     display_name=display_name)
        return _call(self.stub.ImportSession, request, self._explain,
                     timeout=self.timeout)

    def update_session(self, session_id, parameters=None, input_defaults=None,
                       baumgarte=None, constraint_gains=None, inputs=None,
                       state=None, certificate=None):
        """Changes an idle session (keeping its id, step and snapshots);
        ``baumgarte`` and each ``constraint_gains`` value are (alpha, beta)
        pairs or Baumgarte messages; ``certificate`` a CertificateOptions
        (e.g. ``CertificateOptions(disabled=True)``), the certificate of
        every later Run and CoSimulate step. The Session."""
        request = simulator_pb2.UpdateSessionRequest(
            session_id=session_id, parameters=parameters or {},
            input_defaults=input_defaults or {}, inputs=inputs or {})

        def gains(value):
            if isinstance(value, simulation_pb2.Baumgarte):
                return value
            alpha, beta = value
            return simulation_pb2.Baumgarte(alpha=alpha, beta=beta)

        if baumgarte is not None:
            request.baumgarte.CopyFrom(gains(baumgarte))
        for name, value in (constraint_gains or {}).items():
            request.constraint_gains[name].CopyFrom(gains(value))
        if state is not None:
            request.state.CopyFrom(state)
        if certificate is not None:
            request.certificate.CopyFrom(certificate)
        return _call(self.stub.UpdateSession, request, self._explain,
                     timeout=self.timeout)

    def cosimulate(self, session_id):
        """A CoSimulation (lockstep stream) on the session."""
        return CoSimulation(self.stub, session_id, timeout=self.timeout,
                            explain=self._explain)

    def health(self, service="", timeout=3.0):
        """grpc.health.v1 Check: "SERVING", "NOT_SERVING", ... (raises
        TetherError when the server cannot be reached)."""
        # HealthCheckRequest {string service = 1}, coded by hand: Debian has
        # no generated grpc.health.v1 module.
        data = service.encode()
        request = b"" if not data else b"\x0a" + _varint(len(data)) + data
        check = self.channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=lambda b: b, response_deserializer=lambda b: b)
        response = _call(check, request, self._explain, timeout=timeout)
        status = 0
        for number, wire_type, value in _fields(response):
            if number == 1 and wire_type == 0:
                status = value
        return _HEALTH_NAMES.get(status, "UNKNOWN")


def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


# --- a local server for examples and tests -----------------------------------

def default_server_binary():
    """build/bin/tether-server of this checkout (or $TETHER_SERVER)."""
    if os.environ.get("TETHER_SERVER"):
        return os.environ["TETHER_SERVER"]
    root = os.path.abspath(os.path.join(_HERE, "..", "..", ".."))
    return os.path.join(root, "build", "bin", "tether-server")


class LocalServer:
    """Starts ``tether-server --listen 127.0.0.1:0`` and reads the port from
    its "listening on 127.0.0.1:PORT" line; stops it (SIGTERM, then SIGKILL)
    on exit. ``address`` is "127.0.0.1:PORT". The server's log (stderr) goes
    to ``log_path`` when given, else it is discarded."""

    def __init__(self, binary=None, extra_args=(), startup_timeout=30.0,
                 log_path=None):
        self.binary = binary or default_server_binary()
        self.extra_args = list(extra_args)
        self.startup_timeout = startup_timeout
        self.log_path = log_path
        self.process = None
        self.address = None
        self._log = None

    def start(self):
        if not os.path.exists(self.binary):
            raise FileNotFoundError(
                "tether-server not found at %s (build it, or pass --server)"
                % self.binary)
        self._log = (open(self.log_path, "ab") if self.log_path
                     else subprocess.DEVNULL)
        self.process = subprocess.Popen(
            [self.binary, "--listen", "127.0.0.1:0"] + self.extra_args,
            stdout=subprocess.PIPE, stderr=self._log,
            stdin=subprocess.DEVNULL, text=True)
        found = threading.Event()

        def read_stdout():
            for line in self.process.stdout:
                match = re.search(r"listening on (\S+:\d+)", line)
                if match and not found.is_set():
                    self.address = match.group(1)
                    found.set()
            # Keep draining so the server never blocks on a full pipe.

        threading.Thread(target=read_stdout, daemon=True).start()
        if not found.wait(self.startup_timeout):
            self.stop()
            raise RuntimeError("tether-server did not print 'listening on' "
                               "within %.0f s" % self.startup_timeout)
        return self.address

    def stop(self):
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()
        self.process = None
        if self._log not in (None, subprocess.DEVNULL):
            self._log.close()
        self._log = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False
