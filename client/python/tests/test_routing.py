"""The routing header (tether_client.routing; deploy/README.md): every call
of a session carries its id in ``tether-session-id``, calls of no session
carry none. Checked on what the client hands to its stub, without a
server."""

import tether_client
from tether_client._proto.tether.v1 import simulator_pb2
from tether_client.routing import ROUTING_HEADER


class RecordingStub:
    """Records each call's method and metadata; answers a Session."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, method):
        def call(request, **kwargs):
            self.calls.append((method, dict(kwargs.get("metadata") or ())))
            if method == "CoSimulate":
                return iter(())
            if method == "ListSessions":
                return simulator_pb2.ListSessionsResponse()
            return simulator_pb2.Session(id="abc")
        return call


def test_session_calls_carry_the_session_id_and_others_none():
    client = tether_client.Client("127.0.0.1:1")
    stub = RecordingStub()
    client.stub = stub
    client.get_session("abc")
    client.create_snapshot("abc")
    client.delete_session("abc")
    client.run("abc", steps=1)
    tether_client.streams.CoSimulation(stub, "abc")
    client.list_sessions()
    client.get_session("a\nforged")  # not a header value: unrouted
    client.get_session("a" * 257)
    assert ROUTING_HEADER == "tether-session-id"
    routed = {ROUTING_HEADER: "abc"}
    assert stub.calls == [("GetSession", routed), ("CreateSnapshot", routed),
                          ("DeleteSession", routed), ("Run", routed),
                          ("CoSimulate", routed), ("ListSessions", {}),
                          ("GetSession", {}), ("GetSession", {})]
    client.close()
