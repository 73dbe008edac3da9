"""The arguments of ``python -m scansnap`` (:mod:`scansnap.cli`): its parser, and the one way a command exits on a bad
argument (status 2, naming the parameter and what to do, under that command's usage)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NoReturn

from scansnap import device, experiments, parallel, profiles, store, wikitext
from scansnap._io import INSTALLED_DEFAULT

__all__ = ["ABOUT", "EXIT", "Parser", "error", "json_file", "parser"]


class Parser(argparse.ArgumentParser):
    """argparse, but unknown ids and bad options print the valid ones and exit with status 2."""

    def error(self, message: str) -> None:  # noqa: D102
        self.print_usage(sys.stderr)
        ids, names = ', '.join(experiments.figure_ids()), ', '.join(profiles.PROFILES)
        self.exit(2, f"{self.prog}: error: {message}\nfigure ids: {ids}; profiles: {names}\n")


def error(command: str, message: str) -> NoReturn:
    """Exit 2 with ``message`` (naming the parameter and what to do) under ``command``'s usage, without the ids."""
    sub = parser().commands[command]
    sub.print_usage(sys.stderr)
    sub.exit(2, f"{sub.prog}: error: {message}\n")


def json_file(command: str, flag: str, path: Path | None, must_exist: bool = True) -> None:
    """Exit 2 naming ``flag`` when ``path`` (given) cannot be read as JSON (or, ``must_exist``, is missing)."""
    if path is None or (not must_exist and not path.exists()):
        return
    try:
        json.loads(path.read_text())
    except OSError as err:
        error(command, f"{flag}: cannot read {path} ({err.strerror}); give an existing JSON file")
    except ValueError as err:
        error(command, f"{flag}: {path} is not a JSON file ({err})")


ABOUT = ("Re-make and check the figures of 'Scan and Snap, executed', check its stored runs, ledger, locks and data. "
          "`python -m scansnap <command> --help` describes each command.")
EXIT = ("exit status: 0 when all is well; 1 when a check fails (MISMATCH, CHANGED, DIFFERS, REFUSED); 2 on a bad "
         "argument, or when there is nothing to check (no published figure, no recorded verdict)")


def parser() -> argparse.ArgumentParser:
    """The parser of ``python -m scansnap``: one subparser per command, in ``parser.commands``."""
    parser = Parser(prog="python -m scansnap", description=ABOUT, epilog=EXIT)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    rep = sub.add_parser("reproduce", help="re-make one figure with its data and provenance", epilog=EXIT,
                         description="Re-make one figure (its whole experiment) under --out; with --check, re-make it "
                                     "as published and compare its data with the published data (byte-equal, or "
                                     "every number within relative 1e-6 / absolute 1e-9).")
    rep.add_argument("figure", choices=experiments.figure_ids(), metavar="figure-id",
                     help=f"one of: {', '.join(experiments.figure_ids())}")
    rep.add_argument("--profile", choices=profiles.PROFILES, default=None,
                     help="scale (default: book, whatever $SCANSNAP_PROFILE says; with --check, the published "
                          "figure's)")
    rep.add_argument("--out", type=Path, default=None,
                     help=f"artifacts folder; files go to OUT/figures (default: ./{INSTALLED_DEFAULT}; "
                          "with --check, a temporary folder)")
    rep.add_argument("--check", action="store_true",
                     help="compare the re-made data with the published figure's; exit 1 if they differ, 2 "
                          "when no published figure is found")
    rep.add_argument("--against", type=Path, default=None,
                     help="with --check: the folder holding the published figures/ "
                          "(default: $SCANSNAP_ARTIFACTS, _extra in the book's checkout)")
    rep.add_argument("--quiet", action="store_true", help="no progress bar")
    rep.add_argument("--store", action="store_true",
                     help="also store the result in stores/<experiment>/<profile>/")
    ev = sub.add_parser("store", help="check the stored runs: list them, or re-run the first steps and compare",
                        epilog=EXIT)
    ev.add_argument("action", choices=("list", "verify"),
                    help="list: every store (or EXPERIMENT's) and whether it is current and intact (configuration, "
                         "code hash, array digests); verify: that, then re-run its first steps from the recorded "
                         "seeds and compare them with the store (REFUSED on a device it cannot be verified on)")
    ev.add_argument("experiment", nargs="?", default=None,
                    help="an experiment or figure id (default: every stored run)")
    ev.add_argument("--profile", choices=profiles.PROFILES, default="paper",
                    help="with EXPERIMENT: the store's profile (default: paper)")
    ev.add_argument("--steps", type=int, default=None,
                    help="with verify: re-run the first STEPS steps (default: up to the horizon's first checkpoint)")
    ev.add_argument("--horizon", type=int, default=None,
                    help=f"with verify: compare the checkpoints up to this step (default {store.HORIZON}: later, "
                         "another machine's float sums have made SGD diverge; larger on the machine that made it)")
    ev.add_argument("--root", type=Path, default=None, help="the folder holding stores/ (default: the checkout)")
    for p in (rep, ev):
        p.add_argument("--device", default=None,
                       help=f"where the trainers (Y/Z model, language model) compute: cpu, cuda, cuda:N, mps "
                            f"(default ${device.ENV}, or cpu)")
        p.add_argument("--jobs", default=None,
                       help=f"independent runs at once, one process each (default ${parallel.JOBS}, or 1); with "
                            f"${parallel.DASK} set, they go to that Dask cluster")
    cl = sub.add_parser("claims", help="print the claims ledger; check or write the lock of the book's verdicts",
                        epilog=EXIT, description="Print every claim with its headline verdict and each verdict's "
                        "kind of evidence, label (level and protocol cut) and numbers, as the last build recorded "
                        "them under the artifacts folder (_extra in the checkout, or $SCANSNAP_ARTIFACTS): every "
                        "claim reads 'not yet checked' before a build.")
    mode = cl.add_mutually_exclusive_group()
    mode.add_argument("--check-lock", action="store_true",
                      help="exit 1 listing every claim whose recorded verdict differs from ledger/verdicts-book.json")
    mode.add_argument("--write-lock", action="store_true", help="lock the recorded verdicts (needs --reason)")
    cl.add_argument("--reason", default="", help="with --write-lock: why the verdicts changed")
    cl.add_argument("--lock", type=Path, default=None, help="the lock file (default ledger/verdicts-book.json)")
    ru = sub.add_parser("rules", help="check or write ledger/rules.json, the locked rules")
    rmode = ru.add_mutually_exclusive_group()
    rmode.add_argument("--check", action="store_true", help="exit 1 when a rule differs from ledger/rules.json")
    rmode.add_argument("--write", action="store_true", help="write the rules (needs --reason or --reasons)")
    ru.add_argument("--reason", default="", help="with --write: why the rules changed")
    ru.add_argument("--reasons", type=Path, default=None,
                    help="with --write: a JSON file mapping rule keys (claim/evidence) to reasons")
    ru.add_argument("--file", type=Path, default=None, help="the lock file (default ledger/rules.json)")
    da = sub.add_parser("data", help="check or download Chapter 8's WikiText-2 files")
    da.add_argument("action", choices=("check", "download"),
                    help="check: exit 1 saying what to do when the files Chapter 8 needs are neither there nor "
                         "downloadable now; download: fetch and verify every split into the folder")
    da.add_argument("--to", type=Path, default=None,
                    help=f"the folder (default: ${wikitext.ENV}, else the per-user cache folder)")
    parser.commands = {"reproduce": rep, "store": ev, "claims": cl, "rules": ru, "data": da}
    return parser
