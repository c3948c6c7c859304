#!/usr/bin/env python3
"""A co-simulation master loop: steps a tether session in lockstep
(CoSimulate, FMI doStep style) and sets an input every communication step.

The slave is examples/pendulum_force_input.json: a pendulum hanging at rest
with a horizontal force input Fx on the bob (generalized_forces ["Fx", "0"])
and outputs angle = atan2(x, -y) and omega = d(angle)/dt. The master is a PD
controller that swings the pendulum to --target radians:
  Fx = m g tan(target) + kp (target - angle) - kd omega
(the first term holds the pendulum at the target in equilibrium). Each step
prints t, angle, the force applied over the step, and the rod's position
residual |e| with the step certificate's bound on it.

Usage:
  /usr/bin/python3 examples/python/cosim_loop.py [--server ADDR]
      [--steps N] [--communication-step H] [--target RAD]
Without --server it starts build/bin/tether-server on a free loopback port
and stops it at the end.
"""

import argparse
import math
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
try:
    import tether_client  # noqa: F401  (installed: pip install ./client/python)
except ImportError:  # not installed: this checkout's copy
    sys.path.insert(0, os.path.join(ROOT, "client", "python", "src"))
# Without --server-binary: this checkout's build when there is one, else
# $TETHER_SERVER or tether-server on PATH.
CHECKOUT_SERVER = os.path.join(ROOT, "build", "bin", "tether-server")

from tether_client import Client, LocalServer, TetherError, load_spec  # noqa: E402


def control(frame, outputs, target, kp, kd, mass=1.0, gravity=9.81):
    angle = frame.outputs[outputs.index("angle")]
    omega = frame.outputs[outputs.index("omega")]
    return mass * gravity * math.tan(target) + kp * (target - angle) - kd * omega


def run(address, args):
    spec = load_spec(args.spec)
    client = Client.from_env(address, timeout=120)
    session = client.create_session(spec, display_name="cosim_loop")
    outputs = list(session.outputs)
    try:
        # The force for the first step comes from the initial state.
        frame = client.evaluate(spec).frame
        print("%8s %10s %10s %12s %12s" % ("t", "angle", "Fx", "|e|", "bound"))
        with client.cosimulate(session.id) as cosim:
            for k in range(args.steps):
                force = control(frame, outputs, args.target, args.kp, args.kd)
                frame, certificate = cosim.step(args.communication_step,
                                                {"Fx": force})
                if (k + 1) % args.print_every == 0 or k + 1 == args.steps:
                    print("%8.3f %10.5f %10.4f %12.3e %12.3e" % (
                        frame.t, frame.outputs[outputs.index("angle")], force,
                        abs(frame.residuals.position[0]),
                        certificate.position_bound))
        angle = frame.outputs[outputs.index("angle")]
        print("final angle %.4f rad (target %.4f), t = %.3f" % (
            angle, args.target, frame.t))
        return angle
    finally:
        client.delete_session(session.id)
        client.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", help="tether-server address HOST:PORT "
                        "(default: start build/bin/tether-server)")
    parser.add_argument("--server-binary", help="tether-server to start when "
                        "--server is not given")
    parser.add_argument("--spec", default=os.path.join(
        ROOT, "examples", "pendulum_force_input.json"))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--communication-step", type=float, default=0.01)
    parser.add_argument("--target", type=float, default=0.5,
                        help="target angle, rad (default 0.5)")
    parser.add_argument("--kp", type=float, default=40.0)
    parser.add_argument("--kd", type=float, default=12.0)
    parser.add_argument("--print-every", type=int, default=10)
    args = parser.parse_args()

    server = None
    address = args.server
    try:
        if address is None:
            server = LocalServer(binary=args.server_binary or (
                CHECKOUT_SERVER if os.path.exists(CHECKOUT_SERVER) else None))
            address = server.start()
        run(address, args)
    except TetherError as error:
        print("cosim_loop: %s" % error, file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
