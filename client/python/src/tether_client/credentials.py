"""Connection options: TLS, mTLS and a bearer token, checked before any
channel is made (the options of the C++ client's ConnectOptions and of
``tether --server``), and the TETHER_* variables Client.from_env reads."""

from __future__ import annotations

import collections
import ipaddress
import os
import ssl
import warnings
from typing import Any, Dict, Mapping, Optional, Tuple

import grpc

__all__ = ["ConnectOptionError", "is_loopback", "target_host"]

# A token file is one token: anything larger is the wrong file.
_MAX_TOKEN_FILE_BYTES = 16 * 1024
_MAX_PEM_BYTES = 4 * 1024 * 1024

# Client.from_env's variables, the ones `tether --server` reads.
OPTION_VARIABLES: Tuple[Tuple[str, str], ...] = (
    ("tls_ca", "TETHER_TLS_CA"),
    ("tls_cert", "TETHER_CLIENT_TLS_CERT"),
    ("tls_key", "TETHER_CLIENT_TLS_KEY"),
    ("tls_server_name", "TETHER_TLS_SERVER_NAME"),
    ("token", "TETHER_TOKEN"),
    ("token_file", "TETHER_TOKEN_FILE"),
)
ALLOW_PLAINTEXT_TOKEN_VARIABLE = "TETHER_ALLOW_PLAINTEXT_TOKEN"
# tether-server's own certificate and key, which clients once read as
# theirs: field, the old variable, what the server means by it. Read (with
# a DeprecationWarning) only when neither TETHER_CLIENT_TLS_* is set, so a
# pair is never half the client's and half the server's.
DEPRECATED_VARIABLES: Tuple[Tuple[str, str, str], ...] = (
    ("tls_cert", "TETHER_TLS_CERT", "certificate"),
    ("tls_key", "TETHER_TLS_KEY", "private key"),
)


class ConnectOptionError(ValueError):
    """A bad connection option of Client (or Client.from_env), raised before
    any channel is made. The message starts with the option's name (or the
    TETHER_* variable it came from) and names the file, e.g. "tls_ca
    /etc/tether/ca.crt: cannot read it: No such file or directory";
    ``option`` is that name. The token is never part of it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


def read_file(option: str, path: str, limit: int) -> bytes:
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


def read_pem(option: str, path: str) -> bytes:
    """A PEM file: readable and with at least one "-----BEGIN " line."""
    pem = read_file(option, path, _MAX_PEM_BYTES)
    if b"-----BEGIN " not in pem:
        raise ConnectOptionError(option, "%s %s: not a PEM file (no "
                                 "-----BEGIN line)" % (option, path))
    return pem


def check_key_pair(cert_option: str, cert: str, key_option: str, key: str,
                   chain: bytes) -> None:
    """That the private key in ``key`` belongs to the first certificate of
    the chain in ``cert`` (``chain``: its bytes), with the ssl module's
    OpenSSL. gRPC finds a mismatch only when it builds the handshake, and
    then reports an "empty address list" naming neither file. An encrypted
    key is refused, not asked for (gRPC cannot use one either)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_cert_chain(cert, key, password=lambda: b"")
    except ssl.SSLError as error:
        if getattr(error, "reason", None) == "KEY_VALUES_MISMATCH":
            raise ConnectOptionError(key_option, (
                "%s %s: the private key does not belong to the certificate in "
                "%s; expected that certificate's key") % (key_option, key, cert)) from None
        if b"-----BEGIN CERTIFICATE-----" not in chain:
            raise ConnectOptionError(cert_option, (
                "%s %s: no PEM certificate could be read from it; expected a "
                "certificate chain") % (cert_option, cert)) from None
        raise ConnectOptionError(key_option, (
            "%s %s: no PEM private key could be read from it (an encrypted key "
            "is not supported); expected the private key of %s") % (
                key_option, key, cert)) from None
    except OSError as error:  # a file changed since it was read
        raise ConnectOptionError(key_option, "%s %s: cannot read it: %s" % (
            key_option, key, error.strerror or error)) from None


def read_token_file(option: str, path: str) -> str:
    """The token in ``path``: one line, trailing CR/LF stripped."""
    data = read_file(option, path, _MAX_TOKEN_FILE_BYTES)
    # latin-1 maps each byte to one character: offsets are bytes.
    token = data.rstrip(b"\r\n").decode("latin-1")
    check_token(option, "%s %s" % (option, path), token)
    return token


def check_token(option: str, described: str, token: str) -> None:
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


def target_host(target: str) -> str:
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


def is_loopback(address: str) -> bool:
    """Whether the gRPC target ``address`` is on this machine: localhost,
    127.0.0.0/8, ::1 (or ::ffff:127.x.y.z), a unix socket. Looks nothing up:
    any other name is not loopback."""
    if address.startswith(("unix:", "unix-abstract:")):
        return True
    host = target_host(address)
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


class _CallDetails(
        collections.namedtuple("_CallDetails", (
            "method", "timeout", "metadata", "credentials", "wait_for_ready",
            "compression")),
        grpc.ClientCallDetails):
    pass


class BearerToken(grpc.UnaryUnaryClientInterceptor,
                  grpc.UnaryStreamClientInterceptor,
                  grpc.StreamUnaryClientInterceptor,
                  grpc.StreamStreamClientInterceptor):
    """Adds `authorization: Bearer <token>` to every call of a plaintext
    channel (over TLS the token is the channel's call credentials)."""

    def __init__(self, token: str) -> None:
        self._metadata = (("authorization", "Bearer " + token),)

    def _intercept(self, continuation: Any, details: Any, request: Any) -> Any:
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


def options_from_env(environ: Mapping[str, str],
                     kwargs: Dict[str, Any]) -> Dict[str, str]:
    """Fills ``kwargs`` (Client's keywords) with the options not given there
    from the TETHER_* variables in ``environ``; returns the names to use in
    errors for each option (the variable it came from). See
    Client.from_env."""

    def env(variable: str) -> Optional[str]:
        return environ.get(variable) or None

    names: Dict[str, str] = {}
    for field, variable in OPTION_VARIABLES:
        if kwargs.get(field) is None:
            names[field] = variable
    token_given = (kwargs.get("token") is not None
                   or kwargs.get("token_file") is not None)
    if not token_given and env("TETHER_TOKEN") and env("TETHER_TOKEN_FILE"):
        raise ConnectOptionError("TETHER_TOKEN", "TETHER_TOKEN, "
                                 "TETHER_TOKEN_FILE: set one, not both")
    winner = next((variable for field, variable in OPTION_VARIABLES
                   if field in ("tls_cert", "tls_key") and env(variable)),
                  None)
    for field, variable in OPTION_VARIABLES:
        if kwargs.get(field) is not None:
            continue
        if field.startswith("token") and token_given:
            names[field] = field
            continue
        for old_field, old, what in DEPRECATED_VARIABLES:
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
                               old, variable if env(variable) else winner))
            warnings.warn("%s (%s is tether-server's own %s)" % (
                message, old, what), DeprecationWarning, stacklevel=3)
        value = env(variable)
        if value is not None:
            kwargs[field] = value
    if kwargs.get("allow_plaintext_token") is None:
        kwargs.pop("allow_plaintext_token", None)
        variable = ALLOW_PLAINTEXT_TOKEN_VARIABLE
        names["allow_plaintext_token"] = variable + "=true"
        value = env(variable)
        if value is not None:
            if value not in ("true", "false"):
                raise ConnectOptionError(variable, "%s: expected true or "
                                         "false, found '%s'" % (variable,
                                                                value))
            kwargs["allow_plaintext_token"] = value == "true"
    return names


def fspath_or_empty(path: "Optional[os.PathLike[str] | str]") -> str:
    return os.fspath(path) if path else ""
