"""Command line: ``python -m scansnap reproduce <figure-id>`` and ``python -m scansnap claims``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from scansnap import claims, experiments, profiles, recipes

__all__ = ["main"]


def _figure_ids() -> list[str]:
    """Every figure the command line can re-make (typed experiments and, while they last, legacy recipes)."""
    return sorted({*experiments.figure_ids(), *recipes.RECIPES})


class _Parser(argparse.ArgumentParser):
    """argparse, but unknown ids and bad options print the valid ones and exit with status 2."""

    def error(self, message: str) -> None:  # noqa: D102
        self.print_usage(sys.stderr)
        ids, names = ', '.join(_figure_ids()), ', '.join(profiles.PROFILES)
        self.exit(2, f"{self.prog}: error: {message}\n"
                     f"figure ids: {ids}; profiles: {names}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m scansnap", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    rep = sub.add_parser("reproduce", help="re-make one figure with its data and provenance")
    rep.add_argument("figure", choices=_figure_ids(), metavar="figure-id",
                     help=f"one of: {', '.join(_figure_ids())}")
    rep.add_argument("--profile", choices=profiles.PROFILES, default="book", help="scale (default: book)")
    rep.add_argument("--out", type=Path, default=Path("scansnap-figures"),
                     help="artifacts folder; files go to OUT/figures (default: ./scansnap-figures)")
    rep.add_argument("--quiet", action="store_true", help="no progress bar")
    sub.add_parser("claims", help="print the claims ledger")
    return parser


def _progress_bar(total: int, label: str):
    """A tqdm progress bar on stderr, advanced by one per call."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=label, unit="step", file=sys.stderr)
    return bar, lambda _step: bar.update(1)


def _reproduce(args: argparse.Namespace) -> int:
    if args.figure in experiments.figure_ids():
        exp = experiments.owner(args.figure)
        config = exp.config.preset(args.profile)
        bar, tick = (None, None) if args.quiet else _progress_bar(exp.work(config), args.figure)
        try:
            made = experiments.make(exp, config, profile=args.profile, out=args.out, progress=tick)
        finally:
            if bar is not None:
                bar.close()
        record = made.records[args.figure]
        print(f"{args.figure} ({args.profile} profile) in {record.wall_time_s:.1f} s:")
        for kind, name in record.files.items():
            print(f"  {kind:10s} {args.out / 'figures' / name}")
        return 0
    recipe = recipes.get(args.figure)
    params = recipes.defaults(args.figure, args.profile)
    bar, tick = (None, None) if args.quiet else _progress_bar(recipe.work(params), args.figure)
    try:
        result = recipes.run(args.figure, params, profile=args.profile, out=args.out, progress=tick)
    finally:
        if bar is not None:
            bar.close()
    folder = args.out / "figures"
    print(f"{args.figure} ({args.profile} profile) in {result.record.wall_time_s:.1f} s:")
    for kind, name in result.record.files.items():
        print(f"  {kind:10s} {folder / name}")
    return 0


def _claims() -> int:
    width = max(len(v) for v in claims.VERDICTS)
    counts: dict[str, int] = {}
    for c, head, found in claims.ledger():
        counts[head] = counts.get(head, 0) + 1
        print(f"{c.id:4s} {head:{width}s}  {c.statement}")
        for v in found:
            print(f"{'':4s} {'':{width}s}  {v.evidence}: {v.level}; {v.summary()}")
    print("; ".join(f"{k}: {counts.get(k, 0)}" for k in claims.VERDICTS))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    return _reproduce(args) if args.command == "reproduce" else _claims()
