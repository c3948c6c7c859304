"""Pictures from the command line: ``tether plot`` and ``tether animate``
(the C++ CLI runs this module), or ``python3 -m tether_client`` /
``tether-plot`` with the same arguments.

    tether plot RUN.jsonl [--spec SPEC.json] --output FIG.png|FIG.svg
    tether animate RUN.jsonl [--spec SPEC.json] --point X,Y [--point X,Y ...]
                   [--link A,B ...] --output MOTION.gif

RUN.jsonl is ``tether run``'s output (its default format). The names of
coordinates, constraints and outputs come from the description (--spec);
without it they are q0.., c0.., y0... Exit status as the C++ CLI's: 0 ok,
1 a file that cannot be read or written or a missing dependency, 2 bad
input (bad usage, a run file that is not tether run's output, a name that
is not in it); the message on standard error.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional, Sequence, Tuple

__all__ = ["main"]


def _pair(text: str) -> Tuple[str, str]:
    parts = text.split(",")
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise argparse.ArgumentTypeError(
            "expected two names separated by a comma (x,y), found '%s'" % text)
    return parts[0].strip(), parts[1].strip()


def _link(text: str) -> Tuple[int, int]:
    def end(part: str) -> int:
        part = part.strip()
        if part == "origin":
            return -1
        try:
            return int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(
                "a link end is a point's index (0 for the first --point) or "
                "'origin', found '%s'" % part) from None
    parts = text.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(
            "expected two point indices separated by a comma (0,1), found '%s'" % text)
    return end(parts[0]), end(parts[1])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tether", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    plot = commands.add_parser(
        "plot", help="draw the coordinates, multipliers and residuals against the bound")
    animate = commands.add_parser("animate", help="animate a planar mechanism")
    for p in (plot, animate):
        p.add_argument("run", help="tether run's JSON-lines output")
        p.add_argument("--spec", help="the description (JSON), for names")
        p.add_argument("-o", "--output", required=True,
                       help="the file to write (.png, .svg, .pdf; .gif or .mp4 to animate)")
    plot.add_argument("--title")
    animate.add_argument("--point", action="append", type=_pair, required=True,
                         metavar="X,Y", help="a point: its x and y coordinate or output")
    animate.add_argument("--link", action="append", type=_link, metavar="A,B",
                         help="a bar between points A and B (indices, or 'origin'); "
                         "default: a chain from the origin through the points")
    animate.add_argument("--max-frames", type=int, default=200)
    animate.add_argument("--fps", type=int, default=25)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        from tether_client.results import Trajectory
        traj = Trajectory.from_jsonl(args.run, spec=args.spec)
        # An empty file drew an empty figure, and a --spec of another model
        # labelled the columns wrongly; both are errors saying so.
        if len(traj) == 0:
            raise ValueError("%s: no frames (expected the JSON lines of tether run)" % args.run)
        if args.spec:
            from tether_client.messages import load_spec
            system = load_spec(args.spec).system
            # (A mechanism's coordinates and constraints are generated:
            # only the expanded description lists them.)
            if not system.HasField("mechanism"):
                for what, count, width in (
                        ("coordinates", len(system.coordinates), traj.q.shape[1]),
                        ("constraints", len(system.constraints), traj.multipliers.shape[1]),
                        ("outputs", len(system.outputs), traj.outputs.shape[1])):
                    if count != width:
                        raise ValueError("--spec %s: it has %d %s, the run's frames %d: expected "
                                         "the description the run was made from"
                                         % (args.spec, count, what, width))
        if args.command == "plot":
            traj.plot(args.output, title=args.title)
            print("tether: wrote %s (%d frames)" % (args.output, len(traj)), file=sys.stderr)
        else:
            links: Optional[List[Tuple[int, int]]] = args.link
            traj.animate(args.point, args.output, links=links,
                         max_frames=args.max_frames, fps=args.fps)
            print("tether: wrote %s" % args.output, file=sys.stderr)
    except (OSError, ImportError) as error:
        print("tether %s: %s" % (args.command, error), file=sys.stderr)
        return 1
    except ValueError as error:  # json's and the decoder's errors too
        print("tether %s: %s" % (args.command, error), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
