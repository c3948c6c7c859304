#!/usr/bin/env python3
"""A co-simulation master with step rejection: it asks for a communication
step, and rejects it when the step failed (FMI Discard: the session stayed
where it was) or when the pendulum's angle moved by more than --max-change
rad over it (the master's own accuracy rule, known only after the step); a
rejected step is rolled back to a snapshot saved before it and retried with
half the step. Accepted steps let the step grow again, up to
--communication-step. Every accepted step's certificate is checked too.

The slave is examples/pendulum_force_input.json, pushed by a force that
jumps to --kick every --kick-every seconds (a discontinuous input the
master must resolve). Each line prints t, the step taken, how many attempts
it took, the angle and the certificate's position bound.

Usage:
  /usr/bin/python3 examples/python/cosim_retry.py [--server ADDR]
      [--until T] [--communication-step H] [--max-change RAD]
Without --server it starts build/bin/tether-server on a free loopback port
and stops it at the end.
"""

import argparse
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


def force(t, args):
    return args.kick if int(t / args.kick_every) % 2 else 0.0


def run(address, args):
    spec = load_spec(args.spec)
    client = Client.from_env(address, timeout=120)
    session = client.create_session(spec, display_name="cosim_retry")
    angle_index = list(session.outputs).index("angle")
    accepted = rejected = 0
    try:
        t, h = spec.initial.t, args.communication_step
        angle = client.evaluate(spec).frame.outputs[angle_index]
        with client.cosimulate(session.id) as cosim:
            while t < args.until - 1e-12:
                h = min(h, args.until - t)
                mark = cosim.save_snapshot("before t=%g" % t)
                attempts = 0
                while True:
                    attempts += 1
                    response = cosim.try_step(h, {"Fx": force(t, args)})
                    new_angle = response.frame.outputs[angle_index]
                    if (not response.discarded
                            and abs(new_angle - angle) <= args.max_change):
                        break
                    rejected += 1
                    # A discarded step left the session where it was; a step
                    # the master rejects went on and must be undone.
                    if not response.discarded:
                        cosim.restore_snapshot(mark.snapshot_id)
                    h /= 2
                    if h < args.min_step:
                        raise TetherError(None, "step below --min-step at t = %g" % t)
                accepted += 1
                t, angle = response.frame.t, new_angle
                bound = response.certificate.position_bound
                if bound > args.tolerance:
                    raise TetherError(None, "certificate bound %.3e above --tolerance "
                                      "at t = %g" % (bound, t))
                print("%8.4f %10.2e %3d %9.4f %12.3e" % (t, h, attempts, angle, bound))
                h = min(2 * h, args.communication_step)
        print("accepted %d, rejected %d, t = %.4f" % (accepted, rejected, t))
        return accepted, rejected
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
    parser.add_argument("--until", type=float, default=1.0)
    parser.add_argument("--communication-step", type=float, default=0.05)
    parser.add_argument("--min-step", type=float, default=1e-6)
    parser.add_argument("--max-change", type=float, default=0.02,
                        help="largest accepted angle change per step, rad")
    parser.add_argument("--tolerance", type=float, default=1e-6,
                        help="largest acceptable certificate position bound")
    parser.add_argument("--kick", type=float, default=20.0)
    parser.add_argument("--kick-every", type=float, default=0.25)
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
        print("cosim_retry: %s" % error, file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
