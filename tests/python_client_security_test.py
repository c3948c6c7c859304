#!/usr/bin/python3
"""The Python client's TLS, mTLS and bearer-token options (Client's tls_ca,
tls_cert, tls_key, tls_server_name, token, token_file,
allow_plaintext_token and Client.from_env): against real tether-servers on
free loopback ports serving TLS, mTLS and tokens (certificates made at test
time by tests/support/make_pki.sh), against a fake server in this process
that records the `authorization` metadata of every call (plaintext on
loopback and over TLS), and the options' own checks, where grpc's channel
constructors are replaced so that no channel is made and nothing is sent.

Usage: /usr/bin/python3 tests/python_client_security_test.py
           --server-binary build/bin/tether-server [--source-dir .]
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
import warnings
from unittest import mock

import grpc

ARGS = None
# Tokens that must never show in a message (the tokens file's rule: at least
# 16 printable non-space characters).
ACME_TOKEN = "s3cr3t-T0ken.py_acme_42"
LAB_TOKEN = "s3cr3t-T0ken.py_lab_4242"
UNKNOWN_TOKEN = "s3cr3t-T0ken.py_nobody_1"

tether_client = None
WORK = None
PKI = None
TOKENS_FILE = None


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-binary", required=True)
    parser.add_argument("--source-dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".."))
    args, rest = parser.parse_known_args()
    args.source_dir = os.path.abspath(args.source_dir)
    return args, rest


def setUpModule():
    global tether_client, WORK, PKI, TOKENS_FILE
    # A developer's settings must not leak in: the client's TETHER_TLS_*,
    # TETHER_CLIENT_TLS_* and TETHER_TOKEN* (from_env) and the server's
    # TETHER_* (LocalServer's child inherits the environment; TETHER_TLS_CERT
    # is also the client's, deprecated).
    for name in list(os.environ):
        if name.startswith("TETHER_"):
            del os.environ[name]
    sys.path.insert(0, os.path.join(ARGS.source_dir, "client", "python", "src"))
    import tether_client
    WORK = tempfile.mkdtemp(prefix="tether-py-security-")
    PKI = os.path.join(WORK, "pki")
    os.mkdir(PKI)
    script = os.path.join(ARGS.source_dir, "tests", "support", "make_pki.sh")
    result = subprocess.run(["sh", script, PKI])
    if result.returncode != 0:
        with open(os.path.join(PKI, "openssl.log")) as log:
            raise RuntimeError("make_pki.sh failed:\n" + log.read())
    TOKENS_FILE = write("tokens", "# tenant token\nacme %s\nlab %s\n" % (
        ACME_TOKEN, LAB_TOKEN))
    os.chmod(TOKENS_FILE, 0o600)  # the server refuses a tokens file others can read


def tearDownModule():
    if WORK:
        shutil.rmtree(WORK, ignore_errors=True)


def write(name, text):
    path = os.path.join(WORK, name)
    with open(path, "w", newline="") as f:
        f.write(text)
    return path


def pki(name):
    return os.path.join(PKI, name)


def localhost(address):
    """"localhost:PORT" for a server's "127.0.0.1:PORT" (the name its
    certificate carries)."""
    return "localhost" + address[address.rindex(":"):]


def start_server(testcase, *args):
    """A tether-server on 127.0.0.1:0 with ``args``, stopped after the
    class; its log goes to a file shown when it fails to start."""
    log = os.path.join(WORK, "server-%s.log" % testcase.__name__)
    server = tether_client.LocalServer(binary=ARGS.server_binary,
                                       extra_args=list(args), log_path=log)
    try:
        server.start()
    except RuntimeError:
        with open(log) as f:
            raise RuntimeError("tether-server did not start:\n" + f.read())
    testcase.addClassCleanup(server.stop)
    return server


class Case(unittest.TestCase):

    def assertCode(self, code, call, *args, **kwargs):
        """Calls ``call`` (which must raise TetherError ``code``) and returns
        the error; the tokens are not in its message."""
        with self.assertRaises(tether_client.TetherError) as raised:
            call(*args, **kwargs)
        error = raised.exception
        self.assertEqual(error.code, code, str(error))
        self.assertNoToken(str(error))
        return error

    def assertNoToken(self, text):
        for token in (ACME_TOKEN, LAB_TOKEN, UNKNOWN_TOKEN):
            self.assertNotIn(token, text)

    def spec(self, name="circle_pendulum.json"):
        return tether_client.load_spec(
            os.path.join(ARGS.source_dir, "examples", name))

    def run_and_cosimulate(self, client):
        """Unary, server-streaming and bidirectional calls through
        ``client``: a session is created, run, co-simulated and deleted."""
        session = client.create_session(self.spec("pendulum_force_input.json"))
        try:
            self.assertEqual(client.get_session(session.id).id, session.id)
            self.assertIn(session.id, [s.id for s in client.list_sessions()])
            frames = client.run(session.id, steps=10, every=5).frames()
            self.assertEqual([f.step for f in frames], [0, 5, 10])
            with client.cosimulate(session.id) as cosim:
                frame, _ = cosim.step(0.01, {"Fx": 1.0})
            self.assertGreater(frame.t, 0.0)
        finally:
            client.delete_session(session.id)


# --- against tether-server with TLS and mTLS ----------------------------------

class TlsTest(Case):

    @classmethod
    def setUpClass(cls):
        server = start_server(cls, "--tls-cert", pki("server.crt"),
                              "--tls-key", pki("server.key"))
        cls.ip_address = server.address
        cls.address = localhost(server.address)

    def client(self, address=None, **options):
        client = tether_client.Client(address or self.address, timeout=20,
                                      **options)
        self.addCleanup(client.close)
        return client

    def test_right_ca_connects_by_name_and_by_address(self):
        client = self.client(tls_ca=pki("ca.crt"))
        self.assertTrue(client.tls)
        self.assertEqual(client.health(), "SERVING")
        self.run_and_cosimulate(client)
        # By IP address: the certificate names 127.0.0.1 too, and
        # tls_server_name is the name checked instead.
        self.assertEqual(self.client(self.ip_address,
                                     tls_ca=pki("ca.crt")).health(),
                         "SERVING")
        self.assertEqual(self.client(self.ip_address, tls_ca=pki("ca.crt"),
                                     tls_server_name="localhost").health(),
                         "SERVING")

    def test_wrong_ca_fails_naming_the_handshake_and_the_ca_file(self):
        client = self.client(tls_ca=pki("wrong-ca.crt"))
        for call in (client.health, client.list_sessions):
            error = self.assertCode(grpc.StatusCode.UNAVAILABLE, call)
            self.assertIn("the TLS handshake with %s failed" % self.address,
                          error.message)
            self.assertIn("signed by the CA in " + pki("wrong-ca.crt"),
                          error.message)
            self.assertIn("certificate verify failed", error.message)
        error = self.assertCode(grpc.StatusCode.UNAVAILABLE,
                                lambda: client.run("x", steps=1).frames())
        self.assertIn("TLS handshake", error.message)

    def test_wrong_server_name_is_named(self):
        client = self.client(tls_ca=pki("ca.crt"),
                             tls_server_name="elsewhere.example")
        error = self.assertCode(grpc.StatusCode.UNAVAILABLE, client.health)
        self.assertIn("issued for the name 'elsewhere.example'", error.message)

    def test_a_plaintext_client_of_a_tls_server_is_told_so(self):
        client = self.client()
        self.assertFalse(client.tls)
        error = self.assertCode(grpc.StatusCode.UNAVAILABLE,
                                client.list_sessions)
        self.assertIn("if it serves TLS, this plaintext client cannot talk "
                      "to it", error.message)

    def test_from_env(self):
        client = tether_client.Client.from_env(
            self.address, environ={"TETHER_TLS_CA": pki("ca.crt")},
            timeout=20)
        self.addCleanup(client.close)
        self.assertTrue(client.tls)
        self.assertEqual(client.timeout, 20)
        self.assertEqual(len(client.list_sessions()), 0)
        # A keyword overrides its variable.
        client = tether_client.Client.from_env(
            self.address, environ={"TETHER_TLS_CA": pki("wrong-ca.crt")},
            tls_ca=pki("ca.crt"))
        self.addCleanup(client.close)
        self.assertEqual(client.health(), "SERVING")
        client = tether_client.Client.from_env(
            self.address, environ={"TETHER_TLS_CA": pki("wrong-ca.crt")})
        self.addCleanup(client.close)
        self.assertCode(grpc.StatusCode.UNAVAILABLE, client.health)


class MutualTlsTest(Case):

    @classmethod
    def setUpClass(cls):
        server = start_server(cls, "--tls-cert", pki("server.crt"),
                              "--tls-key", pki("server.key"),
                              "--tls-client-ca", pki("ca.crt"))
        cls.address = localhost(server.address)

    def client(self, **options):
        client = tether_client.Client(self.address, timeout=20, **options)
        self.addCleanup(client.close)
        return client

    def test_with_a_client_certificate(self):
        client = self.client(tls_ca=pki("ca.crt"), tls_cert=pki("client.crt"),
                             tls_key=pki("client.key"))
        self.assertEqual(client.health(), "SERVING")
        self.run_and_cosimulate(client)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            client = tether_client.Client.from_env(self.address, environ={
                "TETHER_TLS_CA": pki("ca.crt"),
                "TETHER_CLIENT_TLS_CERT": pki("client.crt"),
                "TETHER_CLIENT_TLS_KEY": pki("client.key")})
        self.assertEqual([str(w.message) for w in caught], [])
        self.addCleanup(client.close)
        self.assertEqual(client.list_sessions(), [])

    def test_the_servers_variables_are_deprecated_for_the_client(self):
        """TETHER_TLS_CERT and TETHER_TLS_KEY are tether-server's: the
        client's only when no TETHER_CLIENT_TLS_* is set, with a warning."""
        with self.assertWarns(DeprecationWarning) as warned:
            client = tether_client.Client.from_env(self.address, environ={
                "TETHER_TLS_CA": pki("ca.crt"),
                "TETHER_TLS_CERT": pki("client.crt"),
                "TETHER_TLS_KEY": pki("client.key")})
        self.addCleanup(client.close)
        self.assertEqual(str(warned.warning),
                         "TETHER_TLS_CERT is deprecated for clients: use "
                         "TETHER_CLIENT_TLS_CERT (TETHER_TLS_CERT is "
                         "tether-server's own certificate)")
        self.assertEqual(warned.filename, __file__)
        self.assertEqual(client.list_sessions(), [])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tether_client.Client.from_env(self.address, environ={
                "TETHER_TLS_CERT": pki("client.crt"),
                "TETHER_TLS_KEY": pki("client.key")}).close()
        self.assertEqual(
            [(w.category, str(w.message)) for w in caught],
            [(DeprecationWarning, "TETHER_TLS_CERT is deprecated for "
              "clients: use TETHER_CLIENT_TLS_CERT (TETHER_TLS_CERT is "
              "tether-server's own certificate)"),
             (DeprecationWarning, "TETHER_TLS_KEY is deprecated for "
              "clients: use TETHER_CLIENT_TLS_KEY (TETHER_TLS_KEY is "
              "tether-server's own private key)")])
        # Both set: the new ones win (here the old are a certificate the
        # server refuses), and the warning says so.
        with self.assertWarns(DeprecationWarning) as warned:
            client = tether_client.Client.from_env(self.address, environ={
                "TETHER_TLS_CA": pki("ca.crt"),
                "TETHER_TLS_CERT": pki("wrong-ca.crt"),
                "TETHER_TLS_KEY": pki("wrong-ca.key"),
                "TETHER_CLIENT_TLS_CERT": pki("client.crt"),
                "TETHER_CLIENT_TLS_KEY": pki("client.key")})
        self.addCleanup(client.close)
        self.assertEqual(str(warned.warning),
                         "TETHER_TLS_CERT is deprecated for clients and "
                         "ignored: TETHER_CLIENT_TLS_CERT is set and wins "
                         "(TETHER_TLS_CERT is tether-server's own "
                         "certificate)")
        self.assertEqual(client.list_sessions(), [])

    def test_without_a_client_certificate(self):
        """Health stays open to probes; every tether.v1 call is refused."""
        client = self.client(tls_ca=pki("ca.crt"))
        self.assertEqual(client.health(), "SERVING")
        error = self.assertCode(grpc.StatusCode.UNAUTHENTICATED,
                                client.list_sessions)
        self.assertIn("no client certificate", error.message)

    def test_with_a_client_certificate_of_another_ca(self):
        client = self.client(tls_ca=pki("ca.crt"),
                             tls_cert=pki("wrong-ca.crt"),
                             tls_key=pki("wrong-ca.key"))
        error = self.assertCode(grpc.StatusCode.UNAVAILABLE,
                                client.list_sessions)
        self.assertIn("accept the client certificate " + pki("wrong-ca.crt"),
                      error.message)


# --- against tether-server with tokens ----------------------------------------

class TokensTest(Case):
    """Plaintext to loopback (the token as metadata added to each call)."""

    tls = False

    @classmethod
    def setUpClass(cls):
        args = ["--tokens-file", TOKENS_FILE]
        if cls.tls:
            args += ["--tls-cert", pki("server.crt"),
                     "--tls-key", pki("server.key")]
        server = start_server(cls, *args)
        cls.address = (localhost(server.address) if cls.tls
                       else server.address)

    def client(self, **options):
        if self.tls:
            options.setdefault("tls_ca", pki("ca.crt"))
        client = tether_client.Client(self.address, timeout=20, **options)
        self.addCleanup(client.close)
        self.assertEqual(client.tls, self.tls)
        return client

    def test_a_valid_token_works_on_every_kind_of_call(self):
        client = self.client(token=ACME_TOKEN)
        self.assertEqual(client.health(), "SERVING")
        self.run_and_cosimulate(client)

    def test_a_token_file_loses_its_trailing_newline(self):
        path = write("token_crlf", ACME_TOKEN + "\r\n")
        self.assertEqual(self.client(token_file=path).list_sessions(), [])
        client = tether_client.Client.from_env(
            self.address, environ={"TETHER_TOKEN_FILE": path,
                                   "TETHER_TLS_CA": pki("ca.crt")
                                   if self.tls else ""})
        self.addCleanup(client.close)
        self.assertEqual(client.list_sessions(), [])

    def test_an_unknown_token_is_unauthenticated(self):
        client = self.client(token=UNKNOWN_TOKEN)
        for call, args in ((client.list_sessions, ()),
                           (client.create_session, (self.spec(),)),
                           (client.validate, (self.spec(),)),
                           (lambda: client.run("x", steps=1).frames(), ())):
            error = self.assertCode(grpc.StatusCode.UNAUTHENTICATED,
                                    call, *args)
            self.assertIn("not known", error.message)
        # Health stays open (load balancers carry no token).
        self.assertEqual(client.health(), "SERVING")

    def test_a_missing_token_is_unauthenticated(self):
        client = self.client()
        for call in (client.list_sessions,
                     lambda: client.run("x", steps=1).frames(),
                     lambda: client.cosimulate("x").step(0.01)):
            error = self.assertCode(grpc.StatusCode.UNAUTHENTICATED, call)
            self.assertIn("missing credentials", error.message)
        self.assertEqual(client.health(), "SERVING")
        client = tether_client.Client.from_env(
            self.address, environ={"TETHER_TLS_CA": pki("ca.crt")
                                   if self.tls else ""})
        self.addCleanup(client.close)
        self.assertCode(grpc.StatusCode.UNAUTHENTICATED, client.list_sessions)

    def test_a_tenant_cannot_see_another_tenants_session(self):
        acme = self.client(token=ACME_TOKEN)
        lab = tether_client.Client.from_env(
            self.address, environ={"TETHER_TOKEN": LAB_TOKEN,
                                   "TETHER_TLS_CA": pki("ca.crt")
                                   if self.tls else ""}, timeout=20)
        self.addCleanup(lab.close)
        session = acme.create_session(self.spec(), display_name="acme's")
        try:
            nobody = self.assertCode(grpc.StatusCode.NOT_FOUND,
                                     lab.get_session, "0" * 32)
            for call in (lambda: lab.get_session(session.id),
                         lambda: lab.run(session.id, steps=1).frames(),
                         lambda: lab.cosimulate(session.id).step(0.01),
                         lambda: lab.delete_session(session.id)):
                error = self.assertCode(grpc.StatusCode.NOT_FOUND, call)
                # As for an id nobody has.
                self.assertEqual(error.message.replace(session.id, "0" * 32),
                                 nobody.message)
                self.assertEqual(error.error_subjects, [
                    ("ResourceInfo", "tether.v1.Session", session.id,
                     "no such session")])
            self.assertNotIn(session.id, [s.id for s in lab.list_sessions()])
            # Still there for its tenant, untouched.
            self.assertEqual(acme.get_session(session.id).step, 0)
            self.assertIn(session.id, [s.id for s in acme.list_sessions()])
        finally:
            acme.delete_session(session.id)


class TlsTokensTest(TokensTest):
    """The same over TLS (the token as the channel's call credentials)."""

    tls = True


# --- what goes on the wire: a fake server that records metadata ---------------

class RecordingServer:
    """A fake tether.v1.Simulator (GetSession, Run, CoSimulate) and
    grpc.health.v1.Health on 127.0.0.1:0, plaintext or TLS, that records
    (method, [authorization values]) of every call."""

    def __init__(self, credentials=None):
        self.calls = []
        self._lock = threading.Lock()
        self._server = grpc.server(
            concurrent.futures.ThreadPoolExecutor(max_workers=4))
        self._server.add_generic_rpc_handlers((_RecordingHandler(self),))
        if credentials is None:
            self.port = self._server.add_insecure_port("127.0.0.1:0")
        else:
            self.port = self._server.add_secure_port("127.0.0.1:0",
                                                     credentials)
        self._server.start()

    def record(self, method, metadata):
        values = [value for key, value in metadata if key == "authorization"]
        with self._lock:
            self.calls.append((method.rsplit("/", 1)[1], values))

    def stop(self):
        self._server.stop(None)


class _RecordingHandler(grpc.GenericRpcHandler):

    def __init__(self, server):
        self._server = server

    def service(self, details):
        self._server.record(details.method, details.invocation_metadata)
        pb = tether_client.pb
        if details.method == "/grpc.health.v1.Health/Check":
            return grpc.unary_unary_rpc_method_handler(
                lambda request, context: b"\x08\x01")  # SERVING
        if details.method == "/tether.v1.Simulator/GetSession":
            return grpc.unary_unary_rpc_method_handler(
                lambda request, context: pb.Session(id=request.session_id),
                request_deserializer=pb.GetSessionRequest.FromString,
                response_serializer=pb.Session.SerializeToString)
        if details.method == "/tether.v1.Simulator/Run":
            def run(request, context):
                yield pb.RunResponse(frames=[pb.Frame(step=7)])
            return grpc.unary_stream_rpc_method_handler(
                run, request_deserializer=pb.RunRequest.FromString,
                response_serializer=pb.RunResponse.SerializeToString)
        if details.method == "/tether.v1.Simulator/CoSimulate":
            def cosimulate(requests, context):
                context.abort(grpc.StatusCode.UNIMPLEMENTED, "fake")
                yield  # a generator, as a streaming handler is
            return grpc.stream_stream_rpc_method_handler(cosimulate)
        return None


class WireTest(Case):

    def recording(self, tls):
        credentials = None
        if tls:
            with open(pki("server.key"), "rb") as key, \
                    open(pki("server.crt"), "rb") as chain:
                credentials = grpc.ssl_server_credentials(
                    [(key.read(), chain.read())])
        server = RecordingServer(credentials)
        self.addCleanup(server.stop)
        return server

    def call_all(self, server, host="127.0.0.1", **options):
        """Health, GetSession, Run and a CoSimulate step on ``server``;
        returns what it recorded."""
        client = tether_client.Client("%s:%d" % (host, server.port),
                                      timeout=20, **options)
        self.addCleanup(client.close)
        self.assertEqual(client.health(), "SERVING")
        self.assertEqual(client.get_session("abc").id, "abc")
        self.assertEqual([f.step for f in client.run("abc").frames()], [7])
        self.assertCode(grpc.StatusCode.UNIMPLEMENTED,
                        lambda: client.cosimulate("abc").step(0.01))
        calls = list(server.calls)
        del server.calls[:]
        return calls

    def expected(self, values):
        return [(method, values) for method in
                ("Check", "GetSession", "Run", "CoSimulate")]

    def test_plaintext_loopback_carries_the_token_on_every_call(self):
        server = self.recording(tls=False)
        self.assertEqual(self.call_all(server, token=ACME_TOKEN),
                         self.expected(["Bearer " + ACME_TOKEN]))
        path = write("token_lf", ACME_TOKEN + "\n")
        self.assertEqual(self.call_all(server, "localhost", token_file=path),
                         self.expected(["Bearer " + ACME_TOKEN]))

    def test_no_token_no_authorization_metadata(self):
        server = self.recording(tls=False)
        self.assertEqual(self.call_all(server), self.expected([]))
        server = self.recording(tls=True)
        self.assertEqual(self.call_all(server, "localhost",
                                       tls_ca=pki("ca.crt")),
                         self.expected([]))

    def test_over_tls_the_token_is_the_channels_call_credentials(self):
        server = self.recording(tls=True)
        self.assertEqual(self.call_all(server, "localhost",
                                       tls_ca=pki("ca.crt"), token=LAB_TOKEN),
                         self.expected(["Bearer " + LAB_TOKEN]))


# --- the options' own checks: no channel is made, nothing is sent ------------

class _RefusingChannel:
    """Stands in for a grpc channel: every call of it fails the test."""

    def _method(self, *args, **kwargs):
        def call(*args, **kwargs):
            raise AssertionError("a call was made on a channel the options "
                                 "test must not use")
        return call

    unary_unary = unary_stream = stream_unary = stream_stream = _method

    def close(self):
        pass


class OptionsTest(Case):

    def setUp(self):
        # grpc's channel constructors record their target and make no
        # channel: no connection can be attempted, to any address.
        self.channels = []

        def insecure_channel(target, options=None, compression=None):
            self.channels.append(("insecure", target, options))
            return _RefusingChannel()

        def secure_channel(target, credentials, options=None,
                           compression=None):
            self.channels.append(("secure", target, options))
            return _RefusingChannel()

        for name, fake in (("insecure_channel", insecure_channel),
                           ("secure_channel", secure_channel)):
            patcher = mock.patch.object(grpc, name, fake)
            patcher.start()
            self.addCleanup(patcher.stop)

    def assertBad(self, prefix, address="localhost:1", environ=None,
                  **options):
        """Client(address, **options) (from_env when ``environ`` is given)
        raises ConnectOptionError whose message starts with ``prefix``
        without the token, and makes no channel; returns the error."""
        with self.assertRaises(tether_client.ConnectOptionError) as raised:
            if environ is None:
                tether_client.Client(address, **options)
            else:
                tether_client.Client.from_env(address, environ=environ,
                                              **options)
        error = raised.exception
        self.assertIsInstance(error, ValueError)
        self.assertTrue(str(error).startswith(prefix),
                        "%r does not start with %r" % (str(error), prefix))
        self.assertEqual(error.option, prefix.split(" ")[0].split(":")[0]
                         .rstrip(","))
        self.assertNoToken(str(error))
        self.assertNoToken(repr(error))
        self.assertEqual(self.channels, [])
        return error

    def test_no_option_is_the_plain_channel_as_before(self):
        client = tether_client.Client("10.1.2.3:50051")
        self.assertFalse(client.tls)
        # The message limits, then the retry policy and the reconnect
        # backoff every channel has (tether_client.client).
        kind, address, options = self.channels[0]
        self.assertEqual((kind, address), ("insecure", "10.1.2.3:50051"))
        self.assertEqual(options[:3], [
            ("grpc.max_send_message_length", 64 * 1024 * 1024),
            ("grpc.max_receive_message_length", 64 * 1024 * 1024),
            ("grpc.enable_retries", 1)])
        config = json.loads(dict(options)["grpc.service_config"])
        self.assertEqual(config["methodConfig"][0]["retryPolicy"],
                         tether_client.RETRY_POLICY)
        # Not intercepted: the channel is grpc's own.
        self.assertIsInstance(client.channel, _RefusingChannel)

    def test_unreadable_or_unfit_files_name_the_option_and_the_path(self):
        error = self.assertBad("tls_ca /nonexistent/ca.crt: cannot read it",
                               tls_ca="/nonexistent/ca.crt")
        self.assertIn("No such file", str(error))
        not_pem = write("not_pem.crt", "hello\n")
        self.assertBad("tls_ca %s: not a PEM file" % not_pem, tls_ca=not_pem)
        self.assertBad("tls_ca %s: cannot read it" % WORK, tls_ca=WORK)
        self.assertBad("tls_key: missing; a client certificate needs its "
                       "private key", tls_ca=pki("ca.crt"),
                       tls_cert=pki("client.crt"))
        self.assertBad("tls_key /nonexistent/client.key: cannot read",
                       tls_ca=pki("ca.crt"), tls_cert=pki("client.crt"),
                       tls_key="/nonexistent/client.key")
        self.assertBad("tls_cert: missing; a client private key needs its "
                       "certificate chain", tls_key=pki("client.key"))
        # A key of another certificate, a certificate where the key goes, a
        # key where the certificate goes: named before any channel (gRPC
        # said "empty address list", naming neither file).
        self.assertBad("tls_key %s: the private key does not belong to the "
                       "certificate in %s" % (pki("wrong-ca.key"), pki("client.crt")),
                       tls_ca=pki("ca.crt"), tls_cert=pki("client.crt"),
                       tls_key=pki("wrong-ca.key"))
        self.assertBad("tls_key %s: no PEM private key could be read from it"
                       % pki("client.crt"), tls_ca=pki("ca.crt"),
                       tls_cert=pki("client.crt"), tls_key=pki("client.crt"))
        self.assertBad("tls_cert %s: no PEM certificate could be read from it"
                       % pki("client.key"), tls_ca=pki("ca.crt"),
                       tls_cert=pki("client.key"), tls_key=pki("client.key"))
        self.assertBad("token_file /nonexistent/token: cannot read",
                       token_file="/nonexistent/token")
        empty = write("empty_token", "\n")
        self.assertBad("token_file %s: the token is empty" % empty,
                       token_file=empty)
        two_lines = write("two_line_token", ACME_TOKEN + "\nsecond\n")
        self.assertBad("token_file %s: the token has a space, a control or a "
                       "non-ASCII byte at offset %d" % (two_lines,
                                                        len(ACME_TOKEN)),
                       token_file=two_lines)
        big = write("big_token", "x" * (16 * 1024 + 1))
        self.assertBad("token_file %s: larger than 16384 bytes" % big,
                       token_file=big)
        self.assertBad("token_file: set either token or token_file",
                       token=ACME_TOKEN, token_file=two_lines)
        self.assertBad("token: the token has a space", token=ACME_TOKEN + " x")
        self.assertBad("token: the token has a space, a control or a "
                       "non-ASCII byte at offset 3", token="abc\u00e9" +
                       ACME_TOKEN)
        self.assertBad("token: expected a str", token=ACME_TOKEN.encode())

    def test_a_token_goes_in_plaintext_only_to_loopback_unless_allowed(self):
        loopback = ["127.0.0.1:50051", "localhost:50051", "127.3.2.1:1",
                    "[::1]:50051", "ipv4:127.0.0.1:1", "dns:///localhost:50051",
                    "unix:/tmp/tether.sock", "ipv6:[::ffff:127.0.0.1]:1"]
        for address in loopback:
            self.assertTrue(tether_client.is_loopback(address), address)
            tether_client.Client(address, token=ACME_TOKEN)
        self.assertEqual([c[1] for c in self.channels], loopback)
        del self.channels[:]
        for address in ("10.1.2.3:50051", "0.0.0.0:50051", "sim.example:50051",
                        "[2001:db8::1]:50051", "dns:///sim.example:443",
                        "128.0.0.1:1", "192.0.2.1:50051", "localhost.evil:1",
                        "dns://127.0.0.1/sim.example:443"):
            self.assertFalse(tether_client.is_loopback(address), address)
            # Refused before any channel is made (assertBad checks).
            self.assertBad("token: refusing to send a bearer token in "
                           "plaintext to %s, which is not a loopback address"
                           % address, address, token=ACME_TOKEN)
            path = write("token", ACME_TOKEN)
            error = self.assertBad("token_file: refusing", address,
                                   token_file=path)
            self.assertIn("use TLS (tls_ca), or allow_plaintext_token=True",
                          str(error))

        # Allowed: a channel is made (and no call on it), with the token.
        client = tether_client.Client("10.1.2.3:50051", token=ACME_TOKEN,
                                      allow_plaintext_token=True)
        self.assertEqual([c[:2] for c in self.channels],
                         [("insecure", "10.1.2.3:50051")])
        self.assertNotIsInstance(client.channel, _RefusingChannel)
        # Without a token, plaintext anywhere is the caller's choice; with
        # TLS the token goes anywhere.
        tether_client.Client("10.1.2.3:50051")
        tether_client.Client("10.1.2.3:50051", tls_ca=pki("ca.crt"),
                             token=ACME_TOKEN)
        self.assertEqual([c[:2] for c in self.channels[1:]],
                         [("insecure", "10.1.2.3:50051"),
                          ("secure", "10.1.2.3:50051")])

    def test_tls_server_name_is_the_name_checked(self):
        tether_client.Client("127.0.0.1:1", tls_server_name="sim.example")
        self.assertEqual(self.channels[0][0], "secure")
        self.assertIn(("grpc.ssl_target_name_override", "sim.example"),
                      self.channels[0][2])

    def test_from_env_takes_the_variables_tether_takes(self):
        path = write("token", ACME_TOKEN + "\n")
        self.assertBad("TETHER_TOKEN, TETHER_TOKEN_FILE: set one, not both",
                       environ={"TETHER_TOKEN": ACME_TOKEN,
                                "TETHER_TOKEN_FILE": path})
        self.assertBad("TETHER_ALLOW_PLAINTEXT_TOKEN: expected true or false, "
                       "found 'yes'",
                       environ={"TETHER_ALLOW_PLAINTEXT_TOKEN": "yes"})
        self.assertBad("TETHER_TLS_CA /nonexistent/ca.crt: cannot read it",
                       environ={"TETHER_TLS_CA": "/nonexistent/ca.crt"})
        self.assertBad("TETHER_CLIENT_TLS_KEY: missing; a client "
                       "certificate",
                       environ={"TETHER_CLIENT_TLS_CERT": pki("client.crt")})
        self.assertBad("TETHER_CLIENT_TLS_CERT /nonexistent/c.crt: cannot "
                       "read it", environ={
                           "TETHER_CLIENT_TLS_CERT": "/nonexistent/c.crt",
                           "TETHER_CLIENT_TLS_KEY": pki("client.key")})
        # The deprecated server variables: the messages name the variable
        # used; one new variable set and the old pair is ignored.
        with self.assertWarnsRegex(DeprecationWarning,
                                   "^TETHER_TLS_CERT is deprecated for "
                                   "clients: use TETHER_CLIENT_TLS_CERT"):
            self.assertBad("TETHER_TLS_CERT /nonexistent/s.crt: cannot read "
                           "it", environ={
                               "TETHER_TLS_CERT": "/nonexistent/s.crt",
                               "TETHER_TLS_KEY": pki("client.key")})
        with self.assertWarnsRegex(
                DeprecationWarning, "^TETHER_TLS_KEY is deprecated for "
                "clients and ignored: TETHER_CLIENT_TLS_CERT is set and wins"):
            self.assertBad("TETHER_CLIENT_TLS_KEY: missing; a client "
                           "certificate", environ={
                               "TETHER_CLIENT_TLS_CERT": pki("client.crt"),
                               "TETHER_TLS_KEY": pki("client.key")})
        self.assertBad("tls_key: missing; a client certificate",
                       environ={"TETHER_TLS_KEY": pki("client.key")},
                       tls_cert=pki("client.crt"), tls_key="")
        error = self.assertBad("TETHER_TOKEN_FILE: refusing to send a bearer "
                               "token in plaintext to 10.1.2.3:1",
                               "10.1.2.3:1",
                               environ={"TETHER_TOKEN_FILE": path})
        self.assertIn("use TLS (TETHER_TLS_CA), or "
                      "TETHER_ALLOW_PLAINTEXT_TOKEN=true", str(error))
        self.assertBad("TETHER_TOKEN: refusing", "10.1.2.3:1", environ={
            "TETHER_TOKEN": ACME_TOKEN,
            "TETHER_ALLOW_PLAINTEXT_TOKEN": "false"})
        # A token keyword overrides both variables (even both set).
        self.assertBad("token: refusing", "10.1.2.3:1", environ={
            "TETHER_TOKEN": LAB_TOKEN, "TETHER_TOKEN_FILE": path},
            token=ACME_TOKEN)
        self.assertBad("TETHER_TLS_CA /nonexistent/ca.crt", environ={
            "TETHER_TLS_CA": "/nonexistent/ca.crt",
            "TETHER_TOKEN_FILE": "/nonexistent/token"},
            token_file=path)
        # Empty is unset; nothing set is the plain channel.
        client = tether_client.Client.from_env("10.1.2.3:1", environ={
            "TETHER_TLS_CA": "", "TETHER_TOKEN": "", "TETHER_TOKEN_FILE": ""})
        self.assertIsInstance(client.channel, _RefusingChannel)
        self.assertFalse(client.tls)
        # Allowed by the variable, or by the keyword over it.
        tether_client.Client.from_env("10.1.2.3:1", environ={
            "TETHER_TOKEN_FILE": path, "TETHER_ALLOW_PLAINTEXT_TOKEN": "true"})
        tether_client.Client.from_env("10.1.2.3:1", environ={
            "TETHER_TOKEN": ACME_TOKEN,
            "TETHER_ALLOW_PLAINTEXT_TOKEN": "false"},
            allow_plaintext_token=True)
        # The variables' TLS.
        client = tether_client.Client.from_env("10.1.2.3:1", environ={
            "TETHER_TLS_SERVER_NAME": "sim.example",
            "TETHER_TOKEN": ACME_TOKEN})
        self.assertTrue(client.tls)
        self.assertEqual([c[:2] for c in self.channels],
                         [("insecure", "10.1.2.3:1")] * 3
                         + [("secure", "10.1.2.3:1")])
        self.assertIn(("grpc.ssl_target_name_override", "sim.example"),
                      self.channels[-1][2])
        # os.environ by default.
        with mock.patch.dict(os.environ,
                             {"TETHER_TLS_CA": "/nonexistent/os.crt"}):
            with self.assertRaises(tether_client.ConnectOptionError) as raised:
                tether_client.Client.from_env("localhost:1")
            self.assertIn("TETHER_TLS_CA /nonexistent/os.crt",
                          str(raised.exception))


if __name__ == "__main__":
    ARGS, rest = parse_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
