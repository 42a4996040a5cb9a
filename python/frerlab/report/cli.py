"""`frerlab report RESULTS_DIR... [-o report.html] [--images DIR] [--line-rate RATE]`."""

from __future__ import annotations

import argparse
from pathlib import Path

from frerlab.cli_output import add_json, add_output, emit
from frerlab.errors import UsageError
from frerlab.names import output_dir, output_file, shown
from frerlab.report import write_report
from frerlab.units import rate_bps

EXAMPLES = """examples:
  frerlab report results/quick                       report.html beside you, images in report-images/
  frerlab report frer-runs ctl-runs -o cmp.html      two result sets compared (the second against the first)
  frerlab report imported --line-rate 1Gbps          seed-style imports, with the 1 GbE line-rate curve
  frerlab report results/attack-suite                an attack suite: its settings, harm table and figure
  frerlab report results/quick --json                the page, images and figures as JSON
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", help="an HTML page and PNG/SVG figures from stored results",
        description="Builds one self-contained HTML report (works offline: zoom, hover, legend toggles, sortable "
                    "tables) and a PNG and SVG of every figure from results directories: campaigns (bench run), "
                    "imports, fail-over runs, simulator runs, attack runs and attack suites. Nothing is re-run.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, nargs="+", metavar="RESULTS_DIR",
                        help="results directories; with several, each is compared with the first")
    add_output(parser, "the page (default report.html)", default=Path("report.html"))
    parser.add_argument("--images", type=Path, help="where the PNG and SVG files go (default: beside the page, "
                                                    "in <page name>-images/)")
    parser.add_argument("--line-rate", help="the line rate for the theoretical throughput curve when the results do "
                                            "not carry it (imports), e.g. 1Gbps")
    add_json(parser, "the page, the images directory and the figures")
    parser.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    output_file(args.output, "-o/--output")
    images = output_dir(args.images or args.output.with_name(f"{args.output.stem}-images"), "--images")
    if images.resolve() == args.output.resolve():
        raise UsageError(f"--images {shown(str(images))} is the page itself: give a directory of its own for the images")
    line = None
    if args.line_rate:
        try:
            line = rate_bps(args.line_rate)
        except ValueError as err:
            raise UsageError(f"--line-rate: {err}") from None
        if line == 0:
            raise UsageError("--line-rate 0 is out of range: give the link's rate, e.g. 1Gbps")
    drawn = write_report(args.results, args.output, images, line)
    emit(args, {"page": args.output, "images": images, "figures": [{"id": f.id, "title": f.title} for f in drawn]},
         f"report: {args.output} ({len(drawn)} figures; images in {images})")
    return 0
