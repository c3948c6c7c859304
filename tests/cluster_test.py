#!/usr/bin/python3
"""Sessions shared by replicas (--session-store redis://): real
redis-server, tether-server replicas and (FailoverThroughProxyTest)
HAProxy started by scripts/local-cluster.sh, all on free loopback ports,
driven with the Python client (client/python). Every process is ended when
the test ends, also when it fails.

  - fencing: the owner of a session is paused (SIGSTOP) past its lease
    (its liveness key lapses, and with it every lease it holds),
    another replica takes the session over from the store and goes on;
    the first, resumed, has its write refused and gives the session up;
    the store holds the new owner's state, and the frames of the whole
    sequence are bit-identical to an uninterrupted run;
  - write-through per stream (CoSimulateRequest.write_through) over the
    server's --write-through, and refused without a store;
  - a store that goes away: calls fail UNAVAILABLE naming it, and succeed
    again, with nothing lost, when it is back;
  - compiled models cached by description: a second session of the same
    description loads without compiling;
  - tenants across replicas: another tenant's session is NOT_FOUND on
    every replica, and a tenant's max_sessions caps its sessions in the
    store, made through both replicas together;
  - the proxy's health check (deploy/haproxy.cfg): its raw HTTP/2 bytes
    are the ones made here, and a replica answers them SERVING;
  - failover through the proxy: the replica running a CoSimulate stream is
    killed (SIGKILL); the client resumes through the proxy from the
    session's durable step (write-through: the last acknowledged one), and
    every frame from there on is bit-identical to an uninterrupted run; the
    time from the kill to the next frame is printed;
  - tokens revoked without a restart: two replicas share a tokens file
    (swapped by symlink, as a Kubernetes Secret volume does); a token
    removed from it is refused (UNAUTHENTICATED, "revoked") by both within
    the reload interval, the other tenant's token keeps working (also on a
    stream opened before), and bad or empty contents keep the tokens in
    force;
  - ListSessions through the proxy: a tenant's sessions in the store,
    whichever replica created or runs them, with the replica holding each;
    another tenant's never; DeleteSession of a session no replica holds;
  - the store's listing keeps each page within 3/4 of --max-message-bytes,
    on the replica that holds the sessions and on one that does not;
  - drain through the proxy: a replica with an open Run gets SIGTERM; the
    Run ends within the grace with its frames, the session is stored at the
    step the replica stopped at and continues elsewhere bit for bit.

Usage: /usr/bin/python3 tests/cluster_test.py --server-binary BIN [--source-dir DIR]
"""

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

ARGS = None
H = 0.01  # the communication step: ten of the example's RK4 steps


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-binary", required=True)
    parser.add_argument("--source-dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".."))
    args, rest = parser.parse_known_args()
    args.source_dir = os.path.abspath(args.source_dir)
    return args, rest


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def health_check_bytes():
    """What deploy/haproxy.cfg's tcp-check sends: an HTTP/2 client preface,
    an empty SETTINGS, HEADERS (HPACK literals, no Huffman) and DATA of
    grpc.health.v1.Health/Check {service: "tether.v1.Simulator"}."""
    def literal(index, value):  # without indexing, indexed name (< 15)
        return bytes([index, len(value)]) + value.encode()

    def frame(kind, flags, stream, payload):
        return (len(payload).to_bytes(3, "big") + bytes([kind, flags])
                + stream.to_bytes(4, "big") + payload)

    headers = (b"\x83" + b"\x86"  # :method POST, :scheme http (static table)
               + literal(4, "/grpc.health.v1.Health/Check") + literal(1, "localhost")
               + b"\x0f\x10" + bytes([16]) + b"application/grpc"  # content-type (31)
               + b"\x00\x02te\x08trailers")
    service = b"tether.v1.Simulator"
    message = bytes([0x0A, len(service)]) + service
    data = b"\x00" + len(message).to_bytes(4, "big") + message
    return (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"")
            + frame(1, 4, 1, headers) + frame(0, 1, 1, data))


def key(frame):
    """A frame's numbers, compared exactly (floats are equal bit for bit
    here: none is NaN)."""
    return (frame.t, tuple(frame.q), tuple(frame.v), tuple(frame.a))


class Cluster:
    """Processes of one test: a redis-server and tether-server replicas,
    each ended by close() (registered as the test's cleanup)."""

    def __init__(self, test):
        self.dir = tempfile.mkdtemp(prefix="tether-cluster-test-")
        self.procs = []
        self.files = []
        self.redis_port = free_port()
        self.redis = None
        test.addCleanup(self.close)

    @property
    def store(self):
        return "redis://127.0.0.1:%d" % self.redis_port

    def start_redis(self):
        # Append-only with an fsync per write, so a restart finds every
        # acknowledged record (test_store_unreachable).
        log = self.open_log("redis")
        self.redis = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port),
             "--save", "", "--appendonly", "yes", "--appendfsync", "always",
             "--dir", self.dir], stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(self.redis)
        wait_until(lambda: self.redis_cli("ping") == "PONG", 10, "redis-server")

    def stop_redis(self):
        self.redis.terminate()
        self.redis.wait(10)

    def redis_cli(self, *args):
        r = subprocess.run(["redis-cli", "-p", str(self.redis_port)] + list(args),
                           capture_output=True)
        return r.stdout.decode(errors="replace").strip()

    def start_replica(self, name, *extra, env=None):
        port = free_port()
        log = self.open_log(name)
        p = subprocess.Popen(
            [ARGS.server_binary, "--listen", "127.0.0.1:%d" % port,
             "--session-store", self.store, "--workers", "1",
             "--shutdown-grace", "1"] + list(extra),
            stdout=log, stderr=subprocess.STDOUT,
            env=dict(os.environ, **(env or {})))
        self.procs.append(p)
        wait_until(lambda: "listening on" in self.log(name), 10, name)
        p.log_name = name
        return p, "127.0.0.1:%d" % port

    def open_log(self, name):
        f = open(os.path.join(self.dir, name + ".log"), "ab")
        self.files.append(f)
        return f

    def log(self, name):
        with open(os.path.join(self.dir, name + ".log"), errors="replace") as f:
            return f.read()

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                    p.kill()
                except ProcessLookupError:
                    pass
                p.wait(10)
        for f in self.files:
            f.close()
        if os.environ.get("TETHER_KEEP_CLUSTER_LOGS"):
            print("logs kept in", self.dir, file=sys.stderr)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


class ClusterTestCase(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(ARGS.source_dir, "client", "python", "src"))
        global tether_client, grpc
        import grpc
        import tether_client
        cls.spec = tether_client.load_spec(
            os.path.join(ARGS.source_dir, "examples", "circle_pendulum.json"))

    def started(self, client, steps):
        """A new session, a CoSimulate stream on it and the frames of its
        first `steps` steps."""
        session = client.create_session(self.spec)
        cosim = client.cosimulate(session.id)
        return session, cosim, [key(cosim.step(H)[0]) for _ in range(steps)]

    def reference(self, client, steps):
        """The frames of `steps` steps of an uninterrupted stream."""
        session, cosim, frames = self.started(client, steps)
        cosim.close()
        client.delete_session(session.id)
        return frames


class SharedStoreTest(ClusterTestCase):

    def test_fencing_after_sigstop(self):
        cluster = Cluster(self)
        cluster.start_redis()
        ttl = "0.5"
        a, a_address = cluster.start_replica("a", "--lease-ttl", ttl, "--write-through", "true")
        b, b_address = cluster.start_replica("b", "--lease-ttl", ttl, "--write-through", "true")
        client_a = tether_client.Client(a_address, timeout=30)
        client_b = tether_client.Client(b_address, timeout=30)
        expected = self.reference(client_b, 31)

        session, cosim_a, frames = self.started(client_a, 10)
        epoch_a = int(cluster.redis_cli("hget", "tether:session:" + session.id, "epoch"))
        # Paused past its lease: B takes the session over at A's last
        # acknowledged step (write-through: none is lost).
        os.kill(a.pid, signal.SIGSTOP)
        time.sleep(float(ttl) * 2.5)
        resumed = client_b.resume(session.id)
        self.assertEqual(resumed.step, 100)
        with client_b.cosimulate(session.id) as cosim_b:
            for _ in range(20):
                frames.append(key(cosim_b.step(H)[0]))
            self.assertEqual(cluster.redis_cli("hget", "tether:session:" + session.id, "epoch"),
                             str(epoch_a + 1))
            # A wakes up: its next step's write is refused (or its renewal
            # found the lease gone first); the stream ends ABORTED.
            os.kill(a.pid, signal.SIGCONT)
            with self.assertRaises(tether_client.TetherError) as refused:
                for _ in range(3):
                    cosim_a.step(H)
            self.assertEqual(refused.exception.code, grpc.StatusCode.ABORTED)
            self.assertIn("lease", str(refused.exception))
            wait_until(lambda: "session given up" in cluster.log("a"), 5, "A to give up")
            # A noticed its liveness key had lapsed (its leases with it) and
            # renewed it under a new incarnation.
            wait_until(lambda: "this replica's liveness lapsed; now incarnation"
                       in cluster.log("a"), 5, "A's new incarnation")
            # A, asked for the session while B's stream runs it, refuses:
            # B holds the lease.
            with self.assertRaises(tether_client.TetherError) as held:
                client_a.get_session(session.id)
            self.assertEqual(held.exception.code, grpc.StatusCode.ABORTED)
            self.assertIn("owned by another replica", str(held.exception))
            frames.append(key(cosim_b.step(H)[0]))
        self.assertEqual(frames, expected)
        # The store holds B's state: B's epoch, every step B acknowledged.
        self.assertEqual(client_b.get_session(session.id).step, 310)
        self.assertEqual(cluster.redis_cli("hget", "tether:session:" + session.id, "epoch"),
                         str(epoch_a + 1))
        client_a.close()
        client_b.close()

    def test_list_pages_stay_within_the_message_limit(self):
        """A page of the store's listing ends early when its sessions would
        pass 3/4 of --max-message-bytes, both where the sessions are held
        (a: their state now) and where they are not (b: the store's
        summaries); every session is listed once, in creation order."""
        cluster = Cluster(self)
        cluster.start_redis()
        _, a_address = cluster.start_replica("a", "--max-message-bytes", "65536")
        _, b_address = cluster.start_replica("b", "--max-message-bytes", "65536")
        client_a = tether_client.Client(a_address, timeout=30)
        client_b = tether_client.Client(b_address, timeout=30)
        wide = type(self.spec)()
        wide.CopyFrom(self.spec)
        for k in range(100):
            wide.system.coordinates.append("c%d_%s" % (k, "x" * 110))
            wide.system.masses.values.append(1)
            wide.initial.q.append(0)
            wide.initial.v.append(0)
        made = [client_a.create_session(wide).id for _ in range(10)]
        cosim = client_a.cosimulate(made[4])  # held by a
        cosim.step(H)
        from tether_client._proto.tether.v1 import simulator_pb2
        for client in (client_a, client_b):
            seen, token, pages = [], "", 0
            while True:
                page = client._unary(client.stub.ListSessions, simulator_pb2.ListSessionsRequest(
                    page_size=1000, page_token=token))
                self.assertGreaterEqual(len(page.sessions), 1)
                self.assertLessEqual(page.ByteSize(), 65536)
                seen += [s.id for s in page.sessions]
                token = page.next_page_token
                pages += 1
                self.assertLess(pages, 100)
                if not token:
                    break
            self.assertEqual(seen, made)
            self.assertGreaterEqual(pages, 3)  # each session takes about 24 KB
        cosim.close()
        client_a.close()
        client_b.close()

    def test_write_through_per_stream(self):
        """CoSimulateRequest.write_through overrides --write-through for one
        stream: B's listing (the store's summaries) shows every step A
        acknowledged on the stream that asked for it, none of the other's."""
        cluster = Cluster(self)
        cluster.start_redis()
        a, a_address = cluster.start_replica("a")  # --write-through false
        b, b_address = cluster.start_replica("b", "--write-through", "true")
        client_a = tether_client.Client(a_address, timeout=30)
        client_b = tether_client.Client(b_address, timeout=30)
        through = client_a.create_session(self.spec).id
        plain = client_b.create_session(self.spec).id
        with client_a.cosimulate(through, write_through=True) as on, \
                client_a.cosimulate(plain, write_through=False) as off:
            for _ in range(5):
                on.step(H)
                off.step(H)
            steps = {s.id: s.step for s in client_b.list_sessions()}
            self.assertEqual(steps, {through: 50, plain: 0})
        self.assertIn("session=%s from_step=0 write_through=true" % through, cluster.log("a"))
        # Without a store there is nothing to write through to.
        port = free_port()
        log = cluster.open_log("alone")
        alone = subprocess.Popen([ARGS.server_binary, "--listen", "127.0.0.1:%d" % port],
                                 stdout=log, stderr=subprocess.STDOUT)
        cluster.procs.append(alone)
        wait_until(lambda: "listening on" in cluster.log("alone"), 10, "the lone server")
        client = tether_client.Client("127.0.0.1:%d" % port, timeout=30)
        session = client.create_session(self.spec)
        with self.assertRaises(tether_client.TetherError) as refused:
            with client.cosimulate(session.id, write_through=True) as cosim:
                cosim.step(H)
        self.assertEqual(refused.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("write_through", str(refused.exception))
        for c in (client_a, client_b, client):
            c.close()

    def test_proxy_health_check_bytes(self):
        """deploy/haproxy.cfg's health check: its bytes are
        health_check_bytes(), and a replica answers them with SERVING."""
        with open(os.path.join(ARGS.source_dir, "deploy", "haproxy.cfg")) as f:
            cfg = f.read()
        sent = bytes.fromhex(cfg.split("tcp-check send-binary ")[1].split()[0])
        expected = bytes.fromhex(cfg.split("tcp-check expect binary ")[1].split()[0])
        self.assertEqual(sent, health_check_bytes())
        cluster = Cluster(self)
        cluster.start_redis()
        _, address = cluster.start_replica("a")
        host, port = address.split(":")
        received = b""
        with socket.create_connection((host, int(port)), timeout=5) as conn:
            conn.sendall(sent)
            deadline = time.monotonic() + 5
            while expected not in received and time.monotonic() < deadline:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                received += chunk
        self.assertIn(expected, received)

    def test_store_unreachable_then_back(self):
        cluster = Cluster(self)
        cluster.start_redis()
        a, a_address = cluster.start_replica("a", "--lease-ttl", "0.5")
        client = tether_client.Client(a_address, timeout=30)
        session = client.create_session(self.spec)
        client.run(session.id, steps=50).result()
        cluster.stop_redis()
        # Neither a new session nor one this replica does not hold can be
        # served: UNAVAILABLE naming the store.
        with self.assertRaises(tether_client.TetherError) as down:
            client.create_session(self.spec)
        self.assertEqual(down.exception.code, grpc.StatusCode.UNAVAILABLE)
        self.assertIn(cluster.store, str(down.exception))
        # Back on the same port with its append-only file: recovered.
        cluster.start_redis()
        self.assertEqual(client.get_session(session.id).step, 50)
        client.run(session.id, steps=50).result()
        self.assertEqual(client.get_session(session.id).step, 100)
        self.assertIsNotNone(client.create_session(self.spec).id)
        # A restart between two calls: the first call after it succeeds at
        # once, without the client's retries (the replica's connection from
        # before the restart is found closed and replaced; that call failed
        # UNAVAILABLE).
        cluster.stop_redis()
        cluster.start_redis()
        from tether_client._proto.tether.v1 import simulator_pb2, simulator_pb2_grpc
        with grpc.insecure_channel(a_address, options=[("grpc.enable_retries", 0)]) as raw:
            stub = simulator_pb2_grpc.SimulatorStub(raw)
            stub.CreateSession(simulator_pb2.CreateSessionRequest(spec=self.spec), timeout=30)
        client.close()

    def test_a_store_that_comes_back_without_its_data(self):
        # Redis restarted without persistence, or flushed: its identity key
        # goes with the data, so the replicas tell that from another replica
        # having taken their sessions, take their leases again and write
        # the sessions they hold back; no stream fails and no step is lost.
        # (Without the identity the replica gave each session up: ABORTED,
        # "lease lost (none)".)
        cluster = Cluster(self)
        cluster.start_redis()
        ttl = "0.5"
        a, a_address = cluster.start_replica("a", "--lease-ttl", ttl)
        b, b_address = cluster.start_replica("b", "--lease-ttl", ttl)
        client_a = tether_client.Client(a_address, timeout=30)
        client_b = tether_client.Client(b_address, timeout=30)
        expected = self.reference(client_b, 30)
        session, cosim, frames = self.started(client_a, 10)
        # A write-through stream: its next step's write finds the lease gone
        # before the heartbeat notices, and takes it again itself.
        other = client_a.create_session(self.spec)
        through = client_a.cosimulate(other.id, write_through=True)
        other_frames = [key(through.step(H)[0]) for _ in range(10)]
        self.assertEqual(cluster.redis_cli("flushall"), "OK")
        other_frames += [key(through.step(H)[0]) for _ in range(10)]
        frames += [key(cosim.step(H)[0]) for _ in range(10)]
        wait_until(lambda: "came back without its data" in cluster.log("a"), 5,
                   "A to notice the store's new identity")
        wait_until(lambda: cluster.redis_cli("hget", "tether:session:" + session.id,
                                             "tenant") != "", 5, "the session written back")
        frames += [key(cosim.step(H)[0]) for _ in range(10)]
        cosim.close()
        through.close()
        self.assertEqual(frames, expected)
        self.assertEqual(other_frames, expected[:20])
        self.assertNotIn("session given up", cluster.log("a"))
        self.assertNotIn("session given up", cluster.log("b"))
        # B serves both once A hands them back (idle for a lease TTL, at
        # least 1 s), at their last steps.
        self.assertEqual(client_b.resume(session.id).step, 300)
        self.assertEqual(client_b.resume(other.id).step, 200)
        client_a.close()
        client_b.close()

    def test_a_replica_paused_past_its_lease_does_not_win_a_session_back_after_a_flush(self):
        # P runs a session, is paused past its lease TTL; Q takes the session
        # over and acknowledges write-through steps; the store then loses its
        # data and P wakes up. P's liveness was not continuous until the
        # loss, so it must not take the lease again (another replica may have
        # taken it, as Q did): Q writes the session back and goes on, P gives
        # it up. (Before, P took the lease back with its stale state, Q's
        # stream ended ABORTED and Q's acknowledged steps were lost; found by
        # an audit.)
        cluster = Cluster(self)
        cluster.start_redis()
        ttl = "0.5"
        p, p_address = cluster.start_replica("p", "--lease-ttl", ttl, "--write-through", "true")
        q, q_address = cluster.start_replica("q", "--lease-ttl", ttl, "--write-through", "true")
        client_p = tether_client.Client(p_address, timeout=30)
        client_q = tether_client.Client(q_address, timeout=30)
        expected = self.reference(client_q, 40)
        session, cosim_p, frames = self.started(client_p, 10)
        os.kill(p.pid, signal.SIGSTOP)
        time.sleep(float(ttl) * 2.5)
        self.assertEqual(client_q.resume(session.id).step, 100)
        with client_q.cosimulate(session.id) as cosim_q:
            frames += [key(cosim_q.step(H)[0]) for _ in range(10)]
            self.assertEqual(cluster.redis_cli("flushall"), "OK")
            os.kill(p.pid, signal.SIGCONT)
            wait_until(lambda: "came back without its data" in cluster.log("p"), 5,
                       "P to notice the store's new identity")
            wait_until(lambda: "came back without its data" in cluster.log("q"), 5,
                       "Q to notice the store's new identity")
            wait_until(lambda: "session given up" in cluster.log("p"), 5, "P to give it up")
            frames += [key(cosim_q.step(H)[0]) for _ in range(20)]
        self.assertEqual(frames, expected)
        self.assertNotIn("session given up", cluster.log("q"))
        self.assertIn("liveness was not continuous", cluster.log("p"))
        with self.assertRaises(tether_client.TetherError) as refused:
            cosim_p.step(H)
        self.assertEqual(refused.exception.code, grpc.StatusCode.ABORTED)
        self.assertEqual(client_q.get_session(session.id).step, 400)
        client_p.close()
        client_q.close()

    def test_a_tenants_sessions_are_written_back_whatever_its_quota_after_a_flush(self):
        # The store lost its data while A holds both of carol's sessions
        # (max_sessions=2), and carol creates two more through B before A
        # writes hers back: the write-back is not capped (the sessions
        # existed all along; the quota counts what the store holds), so
        # they are in the store again and their streams go on. (Before, A's
        # write-back was refused by the quota and the sessions lived only
        # in A's memory; found by an audit.)
        cluster = Cluster(self)
        cluster.start_redis()
        tokens = {"TETHER_TOKENS": "carol carol-token-0123456789abcde max_sessions=2\n"}
        a, a_address = cluster.start_replica("a", "--lease-ttl", "1", env=tokens)
        b, b_address = cluster.start_replica("b", "--lease-ttl", "1", env=tokens)
        carol_a = tether_client.Client(a_address, timeout=30,
                                       token="carol-token-0123456789abcde")
        carol_b = tether_client.Client(b_address, timeout=30,
                                       token="carol-token-0123456789abcde")
        held = [self.started(carol_a, 5) for _ in range(2)]
        self.assertEqual(cluster.redis_cli("flushall"), "OK")
        made = [carol_b.create_session(self.spec).id for _ in range(2)]
        for session, _, _ in held:
            wait_until(lambda: cluster.redis_cli("hget", "tether:session:" + session.id,
                                                 "tenant") == "carol", 5,
                       "session %s written back" % session.id)
        for _, cosim, frames in held:
            frames.append(key(cosim.step(H)[0]))
            cosim.close()
        self.assertNotIn("not written back", cluster.log("a"))
        self.assertNotIn("session given up", cluster.log("a"))
        listed = {s.id for s in carol_b.list_sessions()}
        self.assertEqual(listed, {s.id for s, _, _ in held} | set(made))
        carol_a.close()
        carol_b.close()

    def test_model_cache_and_tenants_across_replicas(self):
        cluster = Cluster(self)
        cluster.start_redis()
        tokens = {"TETHER_TOKENS": "alice alice-token-0123456789abcdef\n"
                                   "bob bob-token-0123456789abcdef0\n"}
        a, a_address = cluster.start_replica("a", env=tokens)
        b, b_address = cluster.start_replica("b", env=tokens)
        alice_a = tether_client.Client(a_address, timeout=30,
                                       token="alice-token-0123456789abcdef")
        alice_b = tether_client.Client(b_address, timeout=30,
                                       token="alice-token-0123456789abcdef")
        bob_b = tether_client.Client(b_address, timeout=30,
                                     token="bob-token-0123456789abcdef0")
        first = alice_a.create_session(self.spec)
        second = alice_a.create_session(self.spec)
        with self.assertRaises(tether_client.TetherError) as other:
            bob_b.get_session(first.id)
        self.assertEqual(other.exception.code, grpc.StatusCode.NOT_FOUND)
        self.assertEqual(alice_b.get_session(first.id).id, first.id)
        self.assertEqual(alice_b.get_session(second.id).id, second.id)
        # Epoch 1 was A's, writing the new session; B loads under epoch 2.
        log = cluster.log("b")
        self.assertIn("session=%s epoch=2 step=0 model=compiled" % first.id, log)
        self.assertIn("session=%s epoch=2 step=0 model=cached" % second.id, log)
        for c in (alice_a, alice_b, bob_b):
            c.close()

    def test_a_tenants_session_quota_holds_across_replicas(self):
        """max_sessions caps the tenant's sessions in the store: those it
        made through every replica together, not each replica's (a replica
        keeps no session it creates, so its own count never reached it)."""
        cluster = Cluster(self)
        cluster.start_redis()
        tokens = {"TETHER_TOKENS": "carol carol-token-0123456789abcde max_sessions=2\n"
                                   "dave dave-token-0123456789abcdef\n"}
        a, a_address = cluster.start_replica("a", env=tokens)
        b, b_address = cluster.start_replica("b", env=tokens)
        carol_a = tether_client.Client(a_address, timeout=30,
                                       token="carol-token-0123456789abcde")
        carol_b = tether_client.Client(b_address, timeout=30,
                                       token="carol-token-0123456789abcde")
        dave_a = tether_client.Client(a_address, timeout=30,
                                      token="dave-token-0123456789abcdef")
        first = carol_a.create_session(self.spec)
        carol_b.create_session(self.spec)
        for client in (carol_a, carol_b):
            with self.assertRaises(tether_client.TetherError) as refused:
                client.create_session(self.spec)
            self.assertEqual(refused.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertIn("2 sessions in the shared session store", str(refused.exception))
            self.assertIn("max_sessions", str(refused.exception))
        # Another tenant is not counted against it; a deleted session makes
        # room, on any replica.
        dave_a.create_session(self.spec)
        carol_b.delete_session(first.id)
        third = carol_a.create_session(self.spec)
        self.assertEqual(len(carol_b.list_sessions()), 2)
        self.assertEqual(carol_b.get_session(third.id).id, third.id)
        for c in (carol_a, carol_b, dave_a):
            c.close()


class TokensReloadTest(ClusterTestCase):
    """--tokens-file read again while the replicas run (TokensWatcher)."""

    ALICE = "alice-token-0123456789abcdef"
    BOB = "bob-token-0123456789abcdef0"
    CAROL = "carol-token-0123456789abcdef"
    INTERVAL = 0.2  # --tokens-reload-interval

    def publish(self, root, text):
        """Writes `text` as Kubernetes updates a Secret volume: into a new
        directory, then an atomic rename of the ..data symlink to it."""
        self.version = getattr(self, "version", 0) + 1
        version = os.path.join(root, "..v%d" % self.version)
        os.mkdir(version)
        path = os.path.join(version, "tokens")
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o600)
        os.symlink(os.path.basename(version), os.path.join(root, "..data_tmp"))
        os.rename(os.path.join(root, "..data_tmp"), os.path.join(root, "..data"))

    def refused(self, client):
        try:
            client.list_sessions()
            return None
        except tether_client.TetherError as e:
            return e

    def test_revoked_on_every_replica(self):
        cluster = Cluster(self)
        cluster.start_redis()
        root = os.path.join(cluster.dir, "secret")
        os.mkdir(root)
        both = "alice %s\nbob %s\n" % (self.ALICE, self.BOB)
        self.publish(root, both)
        os.symlink("..data/tokens", os.path.join(root, "tokens"))
        tokens = os.path.join(root, "tokens")
        flags = ("--tokens-file", tokens, "--tokens-reload-interval", str(self.INTERVAL))
        a, a_address = cluster.start_replica("a", *flags)
        b, b_address = cluster.start_replica("b", *flags)
        clients = {(who, name): tether_client.Client(address, timeout=30, token=token)
                   for who, token in (("alice", self.ALICE), ("bob", self.BOB),
                                      ("carol", self.CAROL))
                   for name, address in (("a", a_address), ("b", b_address))}
        for c in clients.values():
            self.addCleanup(c.close)
        for name in ("a", "b"):
            self.assertEqual(clients["alice", name].list_sessions(), [])
            self.assertEqual(self.refused(clients["carol", name]).code,
                             grpc.StatusCode.UNAUTHENTICATED)
        # A stream bob opens before the change.
        session = clients["bob", "a"].create_session(self.spec)
        cosim = clients["bob", "a"].cosimulate(session.id)
        cosim.step(H)

        # Alice's token revoked, carol's added.
        start = time.monotonic()
        self.publish(root, "bob %s\ncarol %s\n" % (self.BOB, self.CAROL))
        wait_until(lambda: all(self.refused(clients["alice", n]) is not None
                               for n in ("a", "b")), 5, "alice refused on both replicas")
        elapsed = time.monotonic() - start
        print("token revoked on both replicas after %.2f s (interval %.1f s)"
              % (elapsed, self.INTERVAL), file=sys.stderr)
        # The bound (deploy/README.md): the interval, plus a read and a
        # parse; 2 s of slack for the calls above on a loaded machine.
        self.assertLess(elapsed, self.INTERVAL + 2.0)
        for name in ("a", "b"):
            e = self.refused(clients["alice", name])
            self.assertEqual(e.code, grpc.StatusCode.UNAUTHENTICATED)
            self.assertIn("revoked", e.message)
            self.assertNotIn(self.ALICE, e.message)
            self.assertTrue(clients["bob", name].create_session(self.spec).id)
            self.assertEqual(clients["carol", name].list_sessions(), [])
        # The stream opened before goes on.
        cosim.step(H)

        # Bad contents, then an empty file: the tokens in force stay, an
        # error is logged (naming the line, never the token).
        self.publish(root, "bob %s\ncarol short\n" % self.BOB)
        wait_until(lambda: all("keeping the 2 token(s) in force" in cluster.log(n)
                               for n in ("a", "b")), 5, "the bad file's error in both logs")
        self.publish(root, "# nothing\n")
        wait_until(lambda: all("no tokens" in cluster.log(n) for n in ("a", "b")), 5,
                   "the empty file's error in both logs")
        for name in ("a", "b"):
            self.assertIn("line 2: the token (5 characters) is too short", cluster.log(name))
            self.assertNotIn(self.BOB, cluster.log(name))
            self.assertEqual(clients["carol", name].list_sessions(), [])
            self.assertEqual(self.refused(clients["alice", name]).code,
                             grpc.StatusCode.UNAUTHENTICATED)
        # A good file again: alice back.
        self.publish(root, both)
        wait_until(lambda: all(self.refused(clients["alice", n]) is None for n in ("a", "b")),
                   5, "alice accepted again")
        cosim.step(H)
        cosim.close()


class FailoverThroughProxyTest(ClusterTestCase):
    """Three replicas behind HAProxy (scripts/local-cluster.sh)."""

    def start_cluster(self, *server_flags, replicas=3, env=None):
        d = tempfile.mkdtemp(prefix="tether-local-cluster-")
        script = os.path.join(ARGS.source_dir, "scripts", "local-cluster.sh")
        env = dict(os.environ, TETHER_SERVER=ARGS.server_binary, **(env or {}))
        self.add_replica = lambda: subprocess.run([script, "add", "--dir", d], env=env,
                                                  capture_output=True, text=True)

        def stop():
            subprocess.run([script, "stop", "--dir", d], env=env, check=False)
            if os.environ.get("TETHER_KEEP_CLUSTER_LOGS"):
                print("logs kept in", d, file=sys.stderr)
            else:
                shutil.rmtree(d, ignore_errors=True)

        self.addCleanup(stop)
        out = subprocess.run([script, "start", "--replicas", str(replicas), "--dir", d, "--"]
                             + list(server_flags), env=env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = [l.split() for l in out.stdout.splitlines()]
        proxy = next(l[2] for l in lines if l[0] == "proxy")
        started = [(int(l[1]), l[2]) for l in lines if l[0] == "replica"]
        self.assertEqual(len(started), replicas)
        return d, proxy, started

    def running(self, d, session_id, event, replicas=3):
        """The index of the one replica whose log says `event` for the
        session (e.g. "run started")."""
        found = []
        for k in range(replicas):
            with open(os.path.join(d, "replica-%d.log" % (k + 1)), errors="replace") as f:
                if any(event in line and "session=" + session_id in line for line in f):
                    found.append(k)
        self.assertEqual(len(found), 1, "%s of %s on replicas %s" % (event, session_id, found))
        return found[0]

    def test_sigkill_of_the_replica_running_a_cosimulate_stream(self):
        d, proxy, replicas = self.start_cluster("--write-through", "true", "--lease-ttl", "0.5")
        client = tether_client.Client(proxy, timeout=30)
        expected = self.reference(client, 40)
        session, cosim, frames = self.started(client, 20)

        pid = replicas[self.running(d, session.id, "cosimulation started")][0]
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        with self.assertRaises(tether_client.TetherError):
            cosim.step(H)
        # The client resumes through the proxy at the durable step: with
        # --write-through, every acknowledged step (20 of ten RK4 steps).
        resumed = client.resume(session.id, timeout=20)
        self.assertEqual(resumed.step, 200)
        with client.cosimulate(session.id) as again:
            frames.append(key(again.step(H)[0]))
            failover = time.monotonic() - killed
            for _ in range(19):
                frames.append(key(again.step(H)[0]))
        self.assertEqual(frames, expected)
        print("failover: %.3f s from SIGKILL to the next frame (lease TTL 0.5 s, "
              "HAProxy checks every 0.25 s)" % failover, file=sys.stderr)
        client.close()

    def test_replica_added_while_sessions_run(self):
        d, proxy, replicas = self.start_cluster(replicas=2)
        client = tether_client.Client(proxy, timeout=30)
        expected = self.reference(client, 60)
        running = [self.started(client, 20) for _ in range(2)]
        holders = [self.running(d, s.id, "cosimulation started", 2) for s, _, _ in running]

        out = self.add_replica()
        self.assertEqual(out.returncode, 0, out.stderr)
        kind, pid, address = out.stdout.split()
        self.assertEqual(kind, "replica")
        # The running streams go on where they are, bit for bit.
        for session, cosim, frames in running:
            frames.extend(key(cosim.step(H)[0]) for _ in range(40))
            cosim.close()
            self.assertEqual(frames, expected)
        self.assertEqual([self.running(d, s.id, "cosimulation started", 3)
                          for s, _, _ in running], holders)
        # New sessions: their calls hash over three replicas now, so the new
        # one loads its share (about a third; none of 24 with probability
        # (2/3)^24 < 1e-4).
        ids = []
        for _ in range(24):
            session = client.create_session(self.spec)
            client.run(session.id, steps=10).result()
            ids.append(session.id)
        with open(os.path.join(d, "replica-3.log"), errors="replace") as f:
            loaded = {i for line in f if "session loaded from the" in line
                      for i in ids if "session=" + i + " " in line}
        print("replica added: %d of 24 new sessions ran on it" % len(loaded), file=sys.stderr)
        self.assertGreater(len(loaded), 0)
        self.assertLess(len(loaded), 24)
        client.close()

    def test_list_sessions_across_replicas(self):
        """ListSessions through the proxy (round robin over 3 replicas)
        lists the tenant's sessions in the store, whichever replica created
        or runs them, each with the replica holding it; other tenants'
        never; DeleteSession of a session no replica holds removes it."""
        alice_token, bob_token = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef0"
        d, proxy, replicas = self.start_cluster(env={
            "TETHER_TOKENS": "alice %s\nbob %s\n" % (alice_token, bob_token)})
        alice = tether_client.Client(proxy, timeout=30, token=alice_token)
        bob = tether_client.Client(proxy, timeout=30, token=bob_token)
        ids = [alice.create_session(self.spec, display_name="s%d" % k).id for k in range(5)]
        bob_ids = [bob.create_session(self.spec).id for _ in range(2)]
        # One run (stored at its end), one session held by an open stream.
        alice.run(ids[1], steps=10).result()
        cosim = alice.cosimulate(ids[3])
        cosim.step(H)
        holder = self.running(d, ids[3], "cosimulation started")
        with open(os.path.join(d, "replica-%d.log" % (holder + 1)), errors="replace") as f:
            owner = re.search(r"lease owner id is (\S+)", f.read()).group(1)
        # Three listings (each reaches another replica), two per page.
        for _ in range(3):
            listed = alice.list_sessions(page_size=2)
            self.assertEqual([s.id for s in listed], ids)  # creation order
            self.assertEqual([s.display_name for s in listed], ["s%d" % k for k in range(5)])
            by_id = {s.id: s for s in listed}
            self.assertEqual(by_id[ids[1]].step, 10)
            self.assertEqual(by_id[ids[3]].replica, owner)
            # Created and never loaded since: no replica holds it.
            self.assertEqual(by_id[ids[0]].replica, "")
        self.assertEqual([s.id for s in bob.list_sessions()], bob_ids)
        from tether_client._proto.tether.v1 import simulator_pb2
        with self.assertRaises(tether_client.TetherError) as bad:
            alice._unary(alice.stub.ListSessions, simulator_pb2.ListSessionsRequest(page_token="x"))
        self.assertEqual(bad.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("page_token", str(bad.exception))
        # Deleted where no replica holds it; another tenant cannot.
        with self.assertRaises(tether_client.TetherError) as other:
            bob.delete_session(ids[0])
        self.assertEqual(other.exception.code, grpc.StatusCode.NOT_FOUND)
        alice.delete_session(ids[0])
        alice.delete_session(ids[3])  # held: its stream ends
        self.assertEqual([s.id for s in alice.list_sessions()], [ids[1], ids[2], ids[4]])
        cosim.close()
        alice.close()
        bob.close()

    def test_sigterm_of_a_replica_with_an_open_run(self):
        d, proxy, replicas = self.start_cluster("--lease-ttl", "0.5", "--shutdown-grace", "0.6")
        client = tether_client.Client(proxy, timeout=60)
        session = client.create_session(self.spec)
        frames = []
        run = iter(client.run(session.id, steps=10**8, every=10**5))
        frames.append(key(next(run)))
        holder = self.running(d, session.id, "run started")
        os.kill(replicas[holder][0], signal.SIGTERM)
        # The draining replica ends the Run within its grace (0.6 s), with
        # every frame computed (the last is the state it stores), then
        # UNAVAILABLE; it writes the session and releases its lease.
        with self.assertRaises(tether_client.TetherError) as drained:
            for frame in run:
                frames.append(key(frame))
        self.assertEqual(drained.exception.code, grpc.StatusCode.UNAVAILABLE, str(drained.exception))
        resumed = client.resume(session.id, timeout=20)
        # Nothing computed is lost: the durable step is the one the draining
        # replica stopped at (its log), at or after the last frame.
        with open(os.path.join(d, "replica-%d.log" % (holder + 1)), errors="replace") as f:
            stopped = re.findall(r"run \w+: tenant=\S+ session=%s step=(\d+)" % session.id,
                                 f.read())
        self.assertEqual([resumed.step], [int(x) for x in stopped])
        self.assertGreaterEqual(resumed.state.t, frames[-1][0])
        # Elsewhere, the session continues bit for bit: 3000 steps more
        # equal a session run to the same step in one piece, then on.
        after = [key(f) for f in client.run(session.id, steps=3000, every=1000)]
        reference = client.create_session(self.spec)
        client.run(reference.id, steps=resumed.step, every=10**6).frames()
        expected = [key(f) for f in client.run(reference.id, steps=3000, every=1000)]
        self.assertEqual(after, expected)
        client.close()


def main():
    global ARGS
    ARGS, rest = parse_args()
    for tool in ("redis-server", "redis-cli"):
        if shutil.which(tool) is None:
            print("cluster_test: %s not found (scripts/install-deps.sh installs it)" % tool,
                  file=sys.stderr)
            return 1
    program = unittest.main(argv=[sys.argv[0]] + rest, exit=False)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
