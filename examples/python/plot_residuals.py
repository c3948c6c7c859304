#!/usr/bin/env python3
"""Plots how Baumgarte feedback pulls an inconsistent start back to the
constraint, against the residual certificate's bounds.

Runs examples/circle_pendulum_inconsistent.json (a pendulum started off the
circle, q = (1.01, 0), with a velocity that is not tangent, alpha = beta = 2)
through a tether-server and writes a PNG of |e(t)|, the position residual of
each frame, on a log scale, with:
  - the certificate's position_bound (a bound on |e| over the whole window)
    and final_position_bound (a bound on |e(t_end)|);
  - the analytic envelope for critical damping alpha = beta = w (docs/MATH.md section 10)
      |e(t)| <= (|e0| + t |w0 + w e0|) e^{-wt} + delta/w^2 [1 - (1 + wt) e^{-wt}]
    with e0, w0 the certificate's initial residuals and delta its
    defect_bound. The certificate reports |e0| and |w0| without signs, so
    |w0 + w e0| is bounded by |w0| + w |e0|.

Usage (Debian's python3, which sees python3-grpcio and python3-matplotlib):
  /usr/bin/python3 examples/python/plot_residuals.py [--server ADDR]
      [--spec FILE] [--until T] [--every K] [--output out/residuals.png]
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


def envelope(t, e0, w0, omega, delta):
    """Critical-damping bound on |e(t)| (t measured from the window start)."""
    decay = math.exp(-omega * t)
    homogeneous = (e0 + t * (w0 + omega * e0)) * decay
    forced = delta / omega ** 2 * (1.0 - (1.0 + omega * t) * decay)
    return homogeneous + forced


def simulate(address, spec, until, every):
    client = Client.from_env(address, timeout=120)
    session = client.create_session(spec, display_name="plot_residuals")
    try:
        stream = client.run(session.id, until_time=until, every=every)
        frames = stream.frames()
        return session, frames, stream.certificate
    finally:
        client.delete_session(session.id)
        client.close()


def plot(frames, certificate, constraint_names, output):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5))
    t_start, t_end = certificate.t_start, certificate.t_end
    times = [f.t for f in frames]
    envelope_holds = True
    for i, c in enumerate(certificate.constraints):
        name = c.name or (constraint_names[i] if i < len(constraint_names) else "c%d" % i)
        residual = [abs(f.residuals.position[i]) for f in frames]
        points = [(t, r) for t, r in zip(times, residual) if r > 0]
        axes.semilogy([p[0] for p in points], [p[1] for p in points], "o-",
                      color="tab:blue", linewidth=0.8, markersize=3,
                      markevery=max(1, len(points) // 60),
                      label="|e(t)| %s (frames)" % name)
        axes.hlines(c.position_bound, t_start, t_end, colors="tab:red",
                    linestyles=":", label="position_bound %.3g" % c.position_bound)
        axes.plot([t_end], [c.final_position_bound], "v", color="tab:red",
                  label="final_position_bound %.3g" % c.final_position_bound)
        if c.alpha > 0 and math.isclose(c.alpha, c.beta, rel_tol=1e-12):
            omega = c.alpha
            e0 = c.initial_position_residual
            w0 = c.initial_velocity_residual
            delta = c.defect_bound
            grid = [t_start + (t_end - t_start) * k / 400 for k in range(401)]
            axes.semilogy(grid, [envelope(t - t_start, e0, w0, omega, delta)
                                 for t in grid],
                          "--", color="tab:green", linewidth=1.5,
                          label="envelope, w = %g, delta = %.2g" % (omega, delta))
            # Allow for rounding in the last digits of tiny residuals.
            for t, r in zip(times, residual):
                if r > envelope(t - t_start, e0, w0, omega, delta) * (1 + 1e-9) + 1e-15:
                    envelope_holds = False
        else:
            print("note: %s has alpha != beta (%g, %g); the critical-damping "
                  "envelope is not drawn" % (name, c.alpha, c.beta))
    axes.set_xlabel("t [s]")
    axes.set_ylabel("|position residual| [constraint units]")
    axes.set_title("Baumgarte drift from an inconsistent start: "
                   "consistent=%s verified=%s stable=%s" % (
                       certificate.initial_consistent,
                       certificate.feedback_verified, certificate.step_stable),
                   fontsize=9)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8, loc="lower left")
    figure.tight_layout()
    directory = os.path.dirname(os.path.abspath(output))
    os.makedirs(directory, exist_ok=True)
    figure.savefig(output, dpi=110)
    plt.close(figure)
    return envelope_holds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", help="tether-server address HOST:PORT "
                        "(default: start build/bin/tether-server)")
    parser.add_argument("--server-binary", help="tether-server to start when "
                        "--server is not given")
    parser.add_argument("--spec", default=os.path.join(
        ROOT, "examples", "circle_pendulum_inconsistent.json"))
    parser.add_argument("--until", type=float, default=6.0,
                        help="end time, s (default 6)")
    parser.add_argument("--every", type=int, default=10,
                        help="emit every k-th step (default 10)")
    parser.add_argument("--output", default=os.path.join(ROOT, "out", "residuals.png"))
    args = parser.parse_args()

    spec = load_spec(args.spec)
    server = None
    address = args.server
    try:
        if address is None:
            server = LocalServer(binary=args.server_binary or (
                CHECKOUT_SERVER if os.path.exists(CHECKOUT_SERVER) else None))
            address = server.start()
        session, frames, certificate = simulate(address, spec, args.until,
                                                args.every)
    except TetherError as error:
        print("plot_residuals: %s" % error, file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.stop()
    if certificate is None or not frames:
        print("plot_residuals: the server sent no certificate or no frames",
              file=sys.stderr)
        return 1

    holds = plot(frames, certificate, list(session.constraints), args.output)
    print("frames: %d, t = %g .. %g" % (len(frames), certificate.t_start,
                                        certificate.t_end))
    print("initial residuals: |e0| = %.3g, |e0'| = %.3g (consistent: %s)" % (
        certificate.initial_position_residual,
        certificate.initial_velocity_residual, certificate.initial_consistent))
    print("max |e| = %.3g <= position_bound = %.3g; final_position_bound = %.3g"
          % (certificate.max_position_residual, certificate.position_bound,
             certificate.final_position_bound))
    print("analytic envelope %s every frame" % ("bounds" if holds else
                                                 "is EXCEEDED at some"))
    print("plot written to %s" % os.path.abspath(args.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
