"""Client: a connection to a tether-server and its calls."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import grpc

from tether_client import credentials as _cred
from tether_client._proto.grpc.health.v1 import health_pb2, health_pb2_grpc
from tether_client._proto.tether.v1 import (ensemble_pb2, simulation_pb2, simulator_pb2,
                                            simulator_pb2_grpc)
from tether_client.credentials import ConnectOptionError
from tether_client.ensemble import EnsembleResult, ensemble_spec
from tether_client.errors import TetherError, call
from tether_client.results import Names
from tether_client.routing import routing_metadata
from tether_client.streams import CoSimulation, EnsembleStream, RunStream

__all__ = ["Client", "DEFAULT_MAX_MESSAGE_BYTES", "RETRY_POLICY"]

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024

_SIMULATOR = "tether.v1.Simulator"

#: gRPC's retry policy (service config) for the calls that may be repeated
#: safely when the server could not be reached (UNAVAILABLE): at most 5
#: attempts, waiting a random time in [0, b] before each retry with b =
#: 0.1, 0.2, 0.4, 0.8 s (at most 1.5 s in all; the call's timeout, when given,
#: bounds the whole). They are the calls that only read (Validate, Evaluate,
#: GetSession, ListSessions, ListSnapshots, ExportSession, Health), the one
#: that sets values (UpdateSession), and the two that create a session
#: (CreateSession, ImportSession): an attempt that failed UNAVAILABLE either
#: never reached a server or reached one that then went away with its
#: sessions in memory (with --state-dir, a session it had written can
#: survive as an idle duplicate, which idle expiry removes). Run,
#: CoSimulate, the snapshot calls that change a session, and the deletes are
#: never retried: their first attempt may have taken effect.
RETRY_POLICY: Dict[str, Any] = {
    "maxAttempts": 5,
    "initialBackoff": "0.1s",
    "maxBackoff": "0.8s",
    "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"],
}
_RETRIED = ("Validate", "Evaluate", "GetSession", "ListSessions",
            "ListSnapshots", "ExportSession", "UpdateSession",
            "CreateSession", "ImportSession")


def _service_config(wait_for_ready: bool) -> str:
    retried = [{"service": _SIMULATOR, "method": m} for m in _RETRIED]
    retried.append({"service": "grpc.health.v1.Health", "method": "Check"})
    configs: List[Dict[str, Any]] = [
        {"name": retried, "retryPolicy": RETRY_POLICY}]
    if wait_for_ready:
        configs[0]["waitForReady"] = True
        configs.append({"name": [{"service": _SIMULATOR}], "waitForReady": True})
    return json.dumps({"methodConfig": configs})


# How soon a channel tries again to connect after its server went away
# (gRPC's defaults: 1 s, growing to 120 s): 0.1 s, growing to 1 s, so a
# restarted server is found within the retry policy's 1.5 s.
_RECONNECT_OPTIONS: List[Tuple[str, Any]] = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
]

PathLike = Union[str, "os.PathLike[str]"]


class Client:
    """A connection to a tether-server at ``address`` ("host:port", or any
    gRPC target).

    ``timeout`` (seconds, None = no deadline) applies to each unary call
    (retries included) and to each whole stream.

    Unreachable servers: the calls RETRY_POLICY lists are retried on
    UNAVAILABLE (at most 1.5 s of waiting), so the first of them after a
    server restart succeeds; with ``wait_for_ready`` every call waits for
    the server to be reachable (up to its timeout: without one, forever)
    instead of failing UNAVAILABLE at once. ``wait_until_ready(t)`` waits
    for a connection explicitly.

    Transport security, as the C++ client's ConnectOptions and ``tether
    --server`` (Client.from_env takes them from TETHER_* variables). When any
    of ``tls_ca``, ``tls_cert`` or ``tls_server_name`` is set the channel
    uses TLS (``tls`` is True); when none is, plaintext.

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

    Runs' and co-simulations' results (RunStream.result(),
    CoSimulation.trajectory()) name their columns after the session's
    coordinates, constraints and outputs (from the Session the server
    returned, or one GetSession per session).
    """

    def __init__(self, address: str, timeout: Optional[float] = None,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, *,
                 tls_ca: Optional[PathLike] = None,
                 tls_cert: Optional[PathLike] = None,
                 tls_key: Optional[PathLike] = None,
                 tls_server_name: Optional[str] = None,
                 token: Optional[str] = None,
                 token_file: Optional[PathLike] = None,
                 allow_plaintext_token: bool = False,
                 wait_for_ready: bool = False,
                 _names: Optional[Dict[str, str]] = None) -> None:
        self.address = address
        self.timeout = timeout
        names = {"allow_plaintext_token": "allow_plaintext_token=True"}
        names.update(_names or {})

        def name(option: str) -> str:
            return names.get(option, option)

        ca, cert, key_path, token_path = (_cred.fspath_or_empty(p) for p in (
            tls_ca, tls_cert, tls_key, token_file))
        server_name = tls_server_name or ""
        if bool(cert) != bool(key_path):
            if cert:
                raise ConnectOptionError(name("tls_key"), name("tls_key") + (
                    ": missing; a client certificate needs its private key"))
            raise ConnectOptionError(name("tls_cert"), name("tls_cert") + (
                ": missing; a client private key needs its certificate chain"))

        token_option = name("token")
        if token and token_path:
            raise ConnectOptionError(
                name("token_file"), "%s: set either %s or %s, not both" % (
                    name("token_file"), name("token"), name("token_file")))
        if token:
            if not isinstance(token, str):
                raise ConnectOptionError(token_option,
                                         token_option + ": expected a str")
            _cred.check_token(token_option, token_option, token)
        elif token_path:
            token_option = name("token_file")
            token = _cred.read_token_file(token_option, token_path)

        self.tls = bool(ca or cert or server_name)
        self._tls_ca = ca
        self._tls_cert = cert
        self._tls_server_name = server_name
        self._reached = False  # a call has succeeded on this channel
        self._names: Dict[str, Names] = {}
        options: List[Tuple[str, Any]] = [
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.enable_retries", 1),
            ("grpc.service_config", _service_config(wait_for_ready)),
        ] + _RECONNECT_OPTIONS
        if not self.tls:
            if (token and not allow_plaintext_token
                    and not _cred.is_loopback(address)):
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
                                                      _cred.BearerToken(token))
        else:
            root = _cred.read_pem(name("tls_ca"), ca) if ca else None
            chain = private_key = None
            if cert:
                chain = _cred.read_pem(name("tls_cert"), cert)
                private_key = _cred.read_pem(name("tls_key"), key_path)
                _cred.check_key_pair(name("tls_cert"), cert, name("tls_key"), key_path,
                                     chain)
            if server_name:
                options.append(("grpc.ssl_target_name_override", server_name))
            channel_credentials = grpc.ssl_channel_credentials(
                root_certificates=root, private_key=private_key,
                certificate_chain=chain)
            if token:
                channel_credentials = grpc.composite_channel_credentials(
                    channel_credentials, grpc.access_token_call_credentials(token))
            self.channel = grpc.secure_channel(address, channel_credentials,
                                               options=options)
        self.stub = simulator_pb2_grpc.SimulatorStub(self.channel)
        self._health = health_pb2_grpc.HealthStub(self.channel)

    @classmethod
    def from_env(cls, address: str, environ: Optional[Mapping[str, str]] = None,
                 **kwargs: Any) -> "Client":
        """A Client whose connection options not given as keywords come from
        the variables `tether --server` reads: TETHER_TLS_CA,
        TETHER_CLIENT_TLS_CERT, TETHER_CLIENT_TLS_KEY,
        TETHER_TLS_SERVER_NAME, TETHER_TOKEN, TETHER_TOKEN_FILE and
        TETHER_ALLOW_PLAINTEXT_TOKEN ("true" or "false"), in ``environ``
        (default os.environ). An empty variable is unset; a token or
        token_file keyword overrides both token variables; setting both is
        an error. Other keywords (timeout, max_message_bytes,
        wait_for_ready) are Client's. A ConnectOptionError names the
        variable the bad option came from ("TETHER_TLS_CA /x.crt: cannot
        read it: ...").

        TETHER_TLS_CERT and TETHER_TLS_KEY are tether-server's own
        certificate and key; as the client's they are deprecated: read only
        when neither TETHER_CLIENT_TLS_CERT nor TETHER_CLIENT_TLS_KEY is
        set, and a DeprecationWarning for each one set (used or ignored)."""
        names = _cred.options_from_env(
            os.environ if environ is None else environ, kwargs)
        return cls(address, _names=names, **kwargs)

    # --- errors ---------------------------------------------------------------

    def _explain(self, error: TetherError) -> TetherError:
        """``error``, a failed TLS handshake (or a plaintext client of a TLS
        server) explained, as the C++ client does."""
        if error.code != grpc.StatusCode.UNAVAILABLE:
            return error
        m = error.message
        # gRPC's words (1.51): "Ssl handshake failed: SSL_ERROR_SSL: ...
        # certificate verify failed" when this side rejects the server's
        # chain, "Peer name NAME is not in peer certificate" when the name
        # does not match; "Socket closed" when the server drops the
        # connection, as a TLS 1.3 server that rejects the client's
        # certificate does right after the handshake, or as a TLS server
        # does to a plaintext client.
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
        elif not self.tls and dropped and not self._reached:
            # Only while no call has succeeded here: once one has, the
            # server speaks plaintext and a dropped connection is the
            # server going away (a restart), not TLS.
            explained = ("the server at %s closed the connection (if it "
                         "serves TLS, this plaintext client cannot talk to "
                         "it: give tls_ca, the CA of its certificate)"
                         % self.address)
        else:
            return error
        return TetherError(error.code, "%s [gRPC: %s]" % (explained, m),
                           error.field_violations, error.error_subjects)

    def _tls_checks(self) -> str:
        """What a failed TLS handshake checked, for its message."""
        checks = "is the server's certificate signed by "
        checks += ("the CA in " + self._tls_ca if self._tls_ca else
                   "a CA of gRPC's default roots (no CA file given)")
        checks += " and issued for the name '%s'" % (
            self._tls_server_name or _cred.target_host(self.address))
        if self._tls_cert:
            checks += (", and does the server accept the client certificate "
                       "%s?" % self._tls_cert)
        else:
            checks += (", and does the server require a client certificate "
                       "(none given)?")
        return checks

    def _unary(self, method: Any, request: Any, timeout: Optional[float] = None) -> Any:
        session_id = getattr(request, "session_id", "")
        response = call(method, request, self._explain,
                        timeout=self.timeout if timeout is None else timeout,
                        metadata=routing_metadata(session_id))
        self._reached = True
        return response

    def _names_of(self, session_id: str) -> Optional[Names]:
        """The names of the session's coordinates, constraints and outputs:
        remembered, or asked for once (GetSession); None when the session
        cannot be read (the call that follows will say why)."""
        if session_id not in self._names:
            try:
                self._remember(self.get_session(session_id))
            except TetherError:
                return None
        return self._names[session_id]

    def _remember(self, session: Any) -> None:
        self._names[session.id] = Names(tuple(session.coordinates),
                                        tuple(session.constraints),
                                        tuple(session.outputs))

    # --- the connection -----------------------------------------------------------

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def wait_until_ready(self, timeout: float) -> None:
        """Waits until the channel is connected; TetherError
        DEADLINE_EXCEEDED after ``timeout`` s."""
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise TetherError(grpc.StatusCode.DEADLINE_EXCEEDED,
                              "no connection to %s within %g s" % (
                                  self.address, timeout)) from None

    def health(self, service: str = "", timeout: float = 3.0) -> str:
        """grpc.health.v1 Check: "SERVING", "NOT_SERVING", ... (raises
        TetherError when the server cannot be reached)."""
        response = self._unary(self._health.Check,
                               health_pb2.HealthCheckRequest(service=service),
                               timeout)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)

    # --- descriptions -------------------------------------------------------------

    def validate(self, spec: Any) -> Any:
        """ValidationReport of ``spec`` (an invalid spec is report.valid ==
        False, not an error)."""
        return self._unary(self.stub.Validate,
                           simulator_pb2.ValidateRequest(spec=spec)).report

    def evaluate(self, spec: Any, state: Any = None,
                 inputs: Optional[Mapping[str, float]] = None) -> Any:
        """EvaluateResponse (frame + warnings) at ``state`` or the spec's
        initial state. As arrays: Trajectory.from_frames([response.frame],
        Names.from_spec(spec))."""
        request = simulator_pb2.EvaluateRequest(spec=spec, inputs=inputs or {})
        if state is not None:
            request.state.CopyFrom(state)
        return self._unary(self.stub.Evaluate, request)

    # --- sessions -------------------------------------------------------------------

    def create_session(self, spec: Any, display_name: str = "") -> Any:
        """A new session of ``spec``; the Session."""
        session = self._unary(self.stub.CreateSession,
                              simulator_pb2.CreateSessionRequest(
                                  spec=spec, display_name=display_name))
        self._remember(session)
        return session

    def get_session(self, session_id: str, frame: bool = False) -> Any:
        """The Session; with ``frame``, also its frame at the current state
        (``session.frame``: t, q, v, a, multipliers, residuals, outputs; one
        evaluation on the server, refused FAILED_PRECONDITION while a Run
        or CoSimulate holds the session; absent when the session FAILED)."""
        view = (simulator_pb2.SESSION_VIEW_FULL if frame
                else simulator_pb2.SESSION_VIEW_BASIC)
        return self._unary(self.stub.GetSession, simulator_pb2.GetSessionRequest(
            session_id=session_id, view=view))

    def resume(self, session_id: str, timeout: float = 10.0) -> Any:
        """The Session once it is served again after its replica went away
        (deploy/README.md, "Several replicas"): GetSession retried while the
        answer is UNAVAILABLE (no replica or store reachable, a replica
        draining) or ABORTED (another replica's lease has not expired yet),
        for at most ``timeout`` seconds. The Session's ``step`` and ``state``
        are its durable state, where a new Run or CoSimulate continues bit
        for bit; frames received after it are recomputed identically."""
        deadline = time.monotonic() + timeout
        delay = 0.02
        while True:
            try:
                return self.get_session(session_id)
            except TetherError as error:
                retry = error.code in (grpc.StatusCode.UNAVAILABLE,
                                       grpc.StatusCode.ABORTED)
                if not retry or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    def list_sessions(self, page_size: int = 100) -> List[Any]:
        """Every session, following the page tokens."""
        sessions: List[Any] = []
        request = simulator_pb2.ListSessionsRequest(page_size=page_size)
        while True:
            response = self._unary(self.stub.ListSessions, request)
            sessions.extend(response.sessions)
            if not response.next_page_token:
                return sessions
            request.page_token = response.next_page_token

    def delete_session(self, session_id: str) -> None:
        self._unary(self.stub.DeleteSession,
                    simulator_pb2.DeleteSessionRequest(session_id=session_id))
        self._names.pop(session_id, None)

    def update_session(self, session_id: str,
                       parameters: Optional[Mapping[str, float]] = None,
                       input_defaults: Optional[Mapping[str, float]] = None,
                       baumgarte: Any = None,
                       constraint_gains: Optional[Mapping[str, Any]] = None,
                       inputs: Optional[Mapping[str, float]] = None,
                       state: Any = None, certificate: Any = None) -> Any:
        """Changes an idle session (keeping its id, step and snapshots);
        ``baumgarte`` and each ``constraint_gains`` value are (alpha, beta)
        pairs or Baumgarte messages; ``certificate`` a CertificateOptions
        (e.g. ``CertificateOptions(disabled=True)``), the certificate of
        every later Run and CoSimulate step. The Session."""
        request = simulator_pb2.UpdateSessionRequest(
            session_id=session_id, parameters=parameters or {},
            input_defaults=input_defaults or {}, inputs=inputs or {})

        def gains(value: Any) -> Any:
            if isinstance(value, simulation_pb2.Baumgarte):
                return value
            alpha, beta = value
            return simulation_pb2.Baumgarte(alpha=alpha, beta=beta)

        if baumgarte is not None:
            request.baumgarte.CopyFrom(gains(baumgarte))
        for gain_name, value in (constraint_gains or {}).items():
            request.constraint_gains[gain_name].CopyFrom(gains(value))
        if state is not None:
            request.state.CopyFrom(state)
        if certificate is not None:
            request.certificate.CopyFrom(certificate)
        return self._unary(self.stub.UpdateSession, request)

    def run(self, session_id: str, steps: int = 0,
            until_time: Optional[float] = None, every: Optional[int] = None,
            frames_per_message: int = 0, include_certificate: bool = True,
            output_interval: Optional[float] = None) -> RunStream:
        """A RunStream over the frames; its ``certificate`` is set at the
        end, ``result()`` gives them as arrays.

        ``every`` K writes the frames of steps K, 2K, ... counted from the
        start of this Run (and the last); it defaults to 1, or to 0 (no
        per-step frames but the last) with an ``output_interval`` (s),
        which adds frames at t0 + k * output_interval (interpolated inside
        steps, evaluated there)."""
        if every is None:
            every = 0 if output_interval is not None else 1
        # Unsigned fields: a negative number is a ValueError naming the
        # argument (protobuf's own says only "Value out of range").
        for name, value in (("steps", steps), ("every", every),
                            ("frames_per_message", frames_per_message)):
            if int(value) < 0:
                raise ValueError("%s: expected an integer >= 0, found %d" % (name, int(value)))
        request = simulator_pb2.RunRequest(
            session_id=session_id, steps=steps, every=every,
            frames_per_message=frames_per_message,
            include_certificate=include_certificate)
        if until_time is not None:
            request.until_time = until_time
        if output_interval is not None:
            request.output_interval = output_interval
        return RunStream(self.stub.Run(request, timeout=self.timeout,
                                       metadata=routing_metadata(session_id)),
                         self._explain, lambda: self._names_of(session_id))

    def run_ensemble(self, template: Any, until_time: float,
                     values: Optional[Mapping[str, Any]] = None,
                     sweeps: Optional[Mapping[str, Tuple[float, float, int]]] = None,
                     random: Optional[Mapping[str, Tuple[str, float, float]]] = None,
                     count: Optional[int] = None, seed: int = 0, include_certificate: bool = True,
                     output_interval: Optional[float] = None, reduce: bool = False,
                     progress: Any = None, functions: str = "exact") -> EnsembleResult:
        """Runs every instance of an ensemble of ``template`` (a
        SimulationSpec, or a session id: its description from its current
        state) to ``until_time``; the results as numpy arrays
        (EnsembleResult), in instance order.

        ``values``: name -> array of N values (N explicit instances);
        ``sweeps``: name -> (start, stop, count), a grid; ``random``: name ->
        ("uniform", a, b) or ("normal", mu, sigma), ``count`` draws per grid
        point under ``seed`` (ensemble.ensemble_spec). A name is a parameter,
        a coordinate (initial q), der(coordinate) (initial v) or an input.
        With ``output_interval`` (s), each instance's frames at t0 + k *
        output_interval and its last step, as Trajectories
        (``result.trajectories``), or with ``reduce`` their mean, standard
        deviation, min and max over the instances per output time
        (``result.reduction``, an EnsembleReduction; no frames are sent).
        ``progress(done, total)`` is called per
        message. ``functions``: "exact" (default: the C library's sin, cos,
        exp, ..., every instance a plain run's bits) or "fast" (vectorised on
        the lane path, within the bound docs/ENSEMBLES.md states; rows say
        which in ``result.fast_functions``). An instance that fails numerically is a row with ``ok``
        False and its error."""
        return self.stream_ensemble(
            template, until_time, values=values, sweeps=sweeps, random=random, count=count,
            seed=seed, include_certificate=include_certificate,
            output_interval=output_interval, reduce=reduce, progress=progress,
            functions=functions).result()

    def stream_ensemble(self, template: Any, until_time: float,
                        values: Optional[Mapping[str, Any]] = None,
                        sweeps: Optional[Mapping[str, Tuple[float, float, int]]] = None,
                        random: Optional[Mapping[str, Tuple[str, float, float]]] = None,
                        count: Optional[int] = None, seed: int = 0, include_certificate: bool = True,
                        output_interval: Optional[float] = None, reduce: bool = False,
                        progress: Any = None, functions: str = "exact") -> EnsembleStream:
        """run_ensemble's call as a stream (EnsembleStream): the instance
        results as they arrive, in instance order, so that a large ensemble
        need not be held whole; the same arguments. ``result()`` gives what
        run_ensemble returns."""
        request = simulator_pb2.RunEnsembleRequest(
            ensemble=ensemble_spec(values, sweeps, random, count, seed),
            until_time=until_time, include_certificate=include_certificate,
            reduce=reduce, functions=_ensemble_functions(functions))
        if output_interval is not None:
            request.output_interval = output_interval
        if isinstance(template, str):
            request.session_id = template
            names = self._names_of(template)
        else:
            request.spec.CopyFrom(template)
            names = Names.from_spec(template)
        return EnsembleStream(self.stub.RunEnsemble(request, timeout=self.timeout), seed=seed,
                              explain=self._explain, names=names, progress=progress)

    def cosimulate(self, session_id: str,
                   write_through: Optional[bool] = None) -> CoSimulation:
        """A CoSimulation (lockstep stream) on the session. ``write_through``
        (servers with --session-store): each step acknowledged only once its
        state is in the shared store (True), or not (False); None: the
        server's --write-through."""
        return CoSimulation(self.stub, session_id, timeout=self.timeout,
                            explain=self._explain,
                            names=lambda: self._names_of(session_id),
                            write_through=write_through)

    # --- snapshots, export and import --------------------------------------------

    def create_snapshot(self, session_id: str, label: str = "") -> Any:
        """Saves the session's complete state server-side; the Snapshot."""
        return self._unary(self.stub.CreateSnapshot,
                           simulator_pb2.CreateSnapshotRequest(
                               session_id=session_id, label=label))

    def list_snapshots(self, session_id: str) -> Any:
        """ListSnapshotsResponse: the snapshots (oldest first) and the bound."""
        return self._unary(self.stub.ListSnapshots,
                           simulator_pb2.ListSnapshotsRequest(session_id=session_id))

    def restore_snapshot(self, session_id: str, snapshot_id: int) -> Any:
        """Rolls the session back to a snapshot; the Session."""
        return self._unary(self.stub.RestoreSnapshot,
                           simulator_pb2.RestoreSnapshotRequest(
                               session_id=session_id, snapshot_id=snapshot_id))

    def delete_snapshot(self, session_id: str, snapshot_id: int) -> None:
        self._unary(self.stub.DeleteSnapshot, simulator_pb2.DeleteSnapshotRequest(
            session_id=session_id, snapshot_id=snapshot_id))

    def export_session(self, session_id: str, snapshot_id: int = 0) -> bytes:
        """The session's description and state as portable bytes; with a
        snapshot_id, that snapshot's (allowed while a stream runs)."""
        return self._unary(self.stub.ExportSession,
                           simulator_pb2.ExportSessionRequest(
                               session_id=session_id, snapshot_id=snapshot_id)).data

    def import_session(self, data: bytes, display_name: str = "") -> Any:
        """A new session from export_session's bytes; the Session."""
        session = self._unary(self.stub.ImportSession,
                              simulator_pb2.ImportSessionRequest(
                                  data=data, display_name=display_name))
        self._remember(session)
        return session


def _ensemble_functions(functions: str) -> "ensemble_pb2.EnsembleFunctions":
    """RunEnsembleRequest.functions for "exact" or "fast"."""
    known = {"exact": ensemble_pb2.ENSEMBLE_FUNCTIONS_EXACT,
             "fast": ensemble_pb2.ENSEMBLE_FUNCTIONS_FAST}
    if functions not in known:
        raise ValueError(f"functions: expected 'exact' or 'fast', found {functions!r}")
    return known[functions]
