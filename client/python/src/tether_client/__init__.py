"""Python client for the Tether simulation service (tether.v1.Simulator).

    from tether_client import Client, load_spec
    with Client.from_env("127.0.0.1:50051") as client:
        spec = load_spec("examples/circle_pendulum.json")
        session = client.create_session(spec)
        result = client.run(session.id, until_time=2.0).result()
        print(result.t[-1], result.q[-1], result.certificate.position_bound)
        result.to_pandas()            # with pandas installed
        result.plot("pendulum.png")   # with matplotlib installed

Modules: ``client`` (Client), ``streams`` (RunStream, EnsembleStream,
CoSimulation),
``results`` (Trajectory, Names: frames as numpy arrays, pandas, CSV),
``ensemble`` (EnsembleResult: Client.run_ensemble's instances as numpy
arrays), ``plotting`` (pictures), ``errors`` (TetherError), ``credentials``
(ConnectOptionError, TLS and token options), ``messages`` (``pb``, every
tether.v1 message, and the description readers), ``testing``
(LocalServer), ``mechanism`` (Mechanism: bodies, joints and loop closures
into a description), ``urdf`` (load_urdf). The generated protobuf and gRPC modules are private
(``tether_client._proto``); use ``pb``.

A Frame's multipliers are the proto field ``lambda``, a Python keyword:
``frame.multipliers`` is an alias of it (or ``getattr(frame, "lambda")``).
"""

from tether_client.client import DEFAULT_MAX_MESSAGE_BYTES, RETRY_POLICY, Client
from tether_client.credentials import ConnectOptionError, is_loopback
from tether_client.ensemble import EnsembleReduction, EnsembleResult
from tether_client.errors import (TetherError, decode_error_subjects,
                                  decode_field_violations)
from tether_client.messages import load_spec, parse_spec, pb
from tether_client.results import Names, Trajectory
from tether_client.streams import CoSimulation, EnsembleStream, RunStream
from tether_client.testing import LocalServer, default_server_binary

__version__ = "0.1.0"  # the project's version (CMakeLists.txt)

__all__ = ["Client", "CoSimulation", "ConnectOptionError",
           "DEFAULT_MAX_MESSAGE_BYTES", "EnsembleReduction", "EnsembleResult",
           "EnsembleStream",
           "LocalServer", "Names",
           "RETRY_POLICY", "RunStream", "TetherError", "Trajectory",
           "decode_error_subjects", "decode_field_violations",
           "default_server_binary", "is_loopback", "load_spec", "parse_spec",
           "pb"]
