"""Command line: ``python -m scansnap reproduce <figure-id> [--check | --store]``, ``store list | verify
[<experiment-id>] [--steps N] [--horizon H] [--device D]``, ``claims [--write-lock | --check-lock]``, ``rules [--write
--reason ... | --check]`` and ``data check | download``.

``data check`` exits 1 saying what to do when Chapter 8's WikiText-2 files are neither in their folder nor
downloadable now (:func:`scansnap.wikitext_check.check`; ``make book`` runs it first); ``data download`` fetches and
verifies them into that folder (:func:`scansnap.wikitext.download`).

``claims`` prints the ledger of the verdicts recorded under the artifacts folder (the last build's: every claim reads
"not yet checked" before a build); ``--check-lock`` compares them with ``ledger/verdicts-book.json`` and exits 1
listing every claim whose verdict differs (2 when none is recorded); ``--write-lock --reason`` locks them
(:mod:`scansnap.ledger`). ``rules --check`` exits 1 when a rule in the code differs from ``ledger/rules.json``;
``rules --write --reason`` records the change with a dated history entry.

``reproduce <id>`` re-makes one figure with its data and provenance under ``--out``, with the other figures of its
experiment and the experiment's result, and lists every file it wrote and the time the run took. With ``--check`` it
re-makes the figure with the profile of the published one (``--against``: a folder holding
``figures/<id>.json``, e.g. the built site or ``_extra``) into a temporary folder (or ``--out``) and compares the data
with the published data: byte-equal, or every number within the tolerance of :func:`scansnap.figures.compare_data`
(a figure of a stored run is checked by ``store verify``: :func:`scansnap.figure_cite.check_command`). Exit status
0 when they agree, 1 on a mismatch (or other parameters), 2 on bad arguments or when no published figure is found.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from scansnap import (
    claims,
    device,
    experiments,
    figure_cite,
    figures,
    ledger,
    parallel,
    profiles,
    provenance,
    store,
    wikitext,
    wikitext_check,
)
from scansnap._io import INSTALLED_DEFAULT, artifacts_dir

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse, but unknown ids and bad options print the valid ones and exit with status 2."""

    def error(self, message: str) -> None:  # noqa: D102
        self.print_usage(sys.stderr)
        ids, names = ', '.join(experiments.figure_ids()), ', '.join(profiles.PROFILES)
        self.exit(2, f"{self.prog}: error: {message}\nfigure ids: {ids}; profiles: {names}\n")


def _error(command: str, message: str) -> NoReturn:
    """Exit 2 with ``message`` (naming the parameter and what to do) under ``command``'s usage, without the ids."""
    sub = _parser().commands[command]
    sub.print_usage(sys.stderr)
    sub.exit(2, f"{sub.prog}: error: {message}\n")


def _json_file(command: str, flag: str, path: Path | None, must_exist: bool = True) -> None:
    """Exit 2 naming ``flag`` when ``path`` (given) cannot be read as JSON (or, ``must_exist``, is missing)."""
    if path is None or (not must_exist and not path.exists()):
        return
    try:
        json.loads(path.read_text())
    except OSError as err:
        _error(command, f"{flag}: cannot read {path} ({err.strerror}); give an existing JSON file")
    except ValueError as err:
        _error(command, f"{flag}: {path} is not a JSON file ({err})")


_ABOUT = ("Re-make and check the figures of 'Scan and Snap, executed', check its stored runs, ledger, locks and data. "
          "`python -m scansnap <command> --help` describes each command.")
_EXIT = ("exit status: 0 when all is well; 1 when a check fails (MISMATCH, CHANGED, DIFFERS, REFUSED); 2 on a bad "
         "argument, or when there is nothing to check (no published figure, no recorded verdict)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m scansnap", description=_ABOUT, epilog=_EXIT)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    rep = sub.add_parser("reproduce", help="re-make one figure with its data and provenance", epilog=_EXIT,
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
                        epilog=_EXIT)
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
                        epilog=_EXIT, description="Print every claim with its headline verdict and each verdict's "
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


def _progress_bar(total: int, label: str):
    """A tqdm progress bar on stderr, advanced by one per call."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=label, unit="step", file=sys.stderr)
    return bar, lambda _step: bar.update(1)


def _remake(fig_id: str, profile: str, out: Path, quiet: bool) -> experiments.Made:
    """Re-make figure ``fig_id`` (its experiment, with the preset of ``profile``) under ``out``."""
    exp = experiments.owner(fig_id)
    config = exp.config.preset(profile)
    bar, progress = (None, None) if quiet else _progress_bar(exp.work(config), fig_id)
    try:
        return experiments.make(exp, config, profile=profile, out=out, progress=progress)
    finally:
        if bar is not None:
            bar.close()


def _reproduce(args: argparse.Namespace) -> int:
    if args.check and args.store:
        _error("reproduce", "--store: not with --check (a check re-makes the published figure and stores nothing)")
    if args.check:
        return _check(args)
    if args.against is not None:
        _error("reproduce", "--against: only with --check")
    if args.store and args.out is not None:
        _error("reproduce", "--store: the store goes to stores/ in the checkout; leave --out out")
    if args.store and provenance.checkout().dirty:  # refused before the run, not after an hour of it
        _error("reproduce", f"--store: the checkout has uncommitted changes to tracked files "
                            f"({provenance.checkout()}), so a store could not name the code that made the run: commit "
                            "or stash them (git status) first. Nothing was run")
    out = Path(INSTALLED_DEFAULT) if args.out is None else args.out
    profile = args.profile or "book"
    start = time.perf_counter()
    with parallel.recording() as where:
        made = _remake(args.figure, profile, out, args.quiet)
    took = time.perf_counter() - start
    others = [f for f in made.records if f != args.figure]
    print(f"{args.figure} ({profile} profile) made in {took:.1f} s: the experiment {made.experiment.id} ran "
          f"{made.wall_time_s:.1f} s, its figures and files took {took - made.wall_time_s:.1f} s"
          + (f"; the same run also makes {', '.join(others)}" if others else ""))
    written = [(f, kind, out / "figures" / name) for f, r in made.records.items() for kind, name in r.files.items()]
    written.append((made.experiment.id, "result", out / "results" / f"{made.experiment.id}.npz"))
    print(f"{len(written)} files written:")
    width = max(len(f) for f, _, _ in written)
    for what, kind, path in written:
        print(f"  {what:{width}s}  {kind:10s}  {path}")
    if args.store:
        folder = store.store(made.experiment, made.config, made.result, made.wall_time_s, profile=profile,
                             figure=args.figure, where=where)
        print(f"  stored in {folder}")
    return 0


def _check(args: argparse.Namespace) -> int:
    """``reproduce --check``: re-make the figure as it was published and compare the data."""
    against = artifacts_dir() if args.against is None else args.against
    try:
        published = figures.load_record(args.figure, against)
    except ValueError:
        print(f"--against: no published figure {args.figure} under {against / 'figures'} "
              f"(pass --against <folder holding figures/{args.figure}.json>: a build's _extra, which make book "
              f"writes, or the published site's folder)", file=sys.stderr)
        return 2
    if args.profile is not None and args.profile != published.profile:
        print(f"--profile: the published {args.figure} was made with profile {published.profile}; "
              f"got {args.profile} (leave --profile out)", file=sys.stderr)
        return 2
    if figure_cite.stored_experiment(published) is not None:
        print(f"note: {args.figure} was made from a stored run; `{figure_cite.check_command(published)}` checks that "
              "run in seconds. This re-make runs the whole paper protocol (an hour or more on 2 cores), and on another "
              "machine than the one that made the store its numbers drift from the store's past the first steps, so "
              "expect a MISMATCH there", file=sys.stderr)
    data = against / "figures" / published.files["data"]
    if not data.is_file():
        print(f"--against: the published data {data} are missing", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="scansnap-check-") as tmp:
        out = Path(tmp) if args.out is None else args.out
        made = _remake(args.figure, published.profile, out, args.quiet).records[args.figure]
        same = figures.compare_data(data, out / "figures" / made.files["data"])
    print(f"{args.figure}: re-made with profile {published.profile} at commit {made.commit} and compared with {data} "
          f"(published by scansnap {published.version} at commit {published.commit})")
    changed = sorted(k for k in {*published.params, *made.params} if published.params.get(k) != made.params.get(k))
    if changed:
        print("MISMATCH: the parameters differ from the published ones: " + "; ".join(
            f"{k}: published {published.params.get(k)!r}, now {made.params.get(k)!r}" for k in changed))
        return 1
    print(("OK: " if same.equal else "MISMATCH: the data ") + same.detail)
    return 0 if same.equal else 1


def _claims(args: argparse.Namespace) -> int:
    if args.reason and not args.write_lock:
        _error("claims", "--reason: only with --write-lock")
    _json_file("claims", "--lock", args.lock, must_exist=args.check_lock)
    try:
        if args.check_lock and not any(found for _, _, found in claims.ledger()):
            raise ValueError(f"--check-lock: no verdict is recorded under {artifacts_dir() / 'verdicts'}, so there is "
                             "nothing to compare with the lock: build the book first (make book), or set "
                             "$SCANSNAP_ARTIFACTS to the folder a build wrote its verdicts/ to")
        return _claims_lock(args) if args.check_lock or args.write_lock else _print_ledger()
    except ValueError as err:  # no verdicts; verdicts of another profile, or of another version (claims.verdicts)
        print(err, file=sys.stderr)
        return 2


def _claims_lock(args: argparse.Namespace) -> int:
    if args.check_lock:
        problems = ledger.check_lock(args.lock)
        for line in problems:
            print(f"CHANGED: {line}")
        print(f"{len(problems)} verdict(s) differ from the lock" if problems else "OK: every verdict equals the lock")
        return 1 if problems else 0
    if args.write_lock:
        if not args.reason.strip():
            _error("claims", "--write-lock: needs --reason (kept with the lock)")
        diffs = ledger.write_lock(args.reason, args.lock)
        for d in diffs:
            print(f"{d['claim']} {d['what']}: {d['from']} -> {d['to']}")
        print(f"locked; {len(diffs)} change(s)")
    return 0


def _print_ledger() -> int:
    width, counts, seen = max(len(v) for v in claims.VERDICTS), dict.fromkeys(claims.VERDICTS, 0), set()
    for c, head, found in claims.ledger():
        counts[head] += 1
        seen |= {f"{v.profile} profile, commit {v.commit[:12] or 'not recorded'}" for v in found}
        print(f"{c.id:4s} {head:{width}s}  {c.statement}")
        for v in found:
            print(f"{'':4s} {'':{width}s}  {v.evidence}: {v.label()}; {v.summary()}")
    print("; ".join(f"{k}: {n}" for k, n in counts.items()) + f" (read from {artifacts_dir() / 'verdicts'}"
          + (f": {'; '.join(sorted(seen))})" if seen else ")"))
    return 0


def _rules(args: argparse.Namespace) -> int:
    if (args.reason or args.reasons) and not args.write:
        _error("rules", f"{'--reason' if args.reason else '--reasons'}: only with --write")
    _json_file("rules", "--file", args.file, must_exist=not args.write)
    _json_file("rules", "--reasons", args.reasons)
    if args.write:
        reason: str | dict[str, str] = args.reason
        if args.reasons is not None:
            reason = json.loads(args.reasons.read_text())
        if not reason:
            _error("rules", "--write: needs --reason or --reasons (kept in each changed rule's history)")
        try:
            changed = ledger.write_rules(reason, path=args.file)
        except ValueError as err:
            print(err, file=sys.stderr)
            return 2
        print(f"wrote {len(changed)} new or changed rule(s): {', '.join(changed) or 'none'}")
        return 0
    problems = ledger.check_rules(path=args.file)
    for line in problems:
        print(f"DIFFERS: {line}")
    print(f"{len(problems)} problem(s)" if problems else f"OK: {len(experiments.all_rules())} rules equal the lock")
    return 1 if problems else 0


def _store(args: argparse.Namespace) -> int:
    """``store list``: every store and whether it is current; ``store verify``: re-run and compare (REFUSED on a
    device the store cannot be verified on)."""
    for flag, value, low in (("steps", args.steps, 1), ("horizon", args.horizon, 0)):
        if value is not None and args.action != "verify":
            _error("store", f"--{flag}: only with verify")
        if value is not None and value < low:
            _error("store", f"--{flag}: must be an integer >= {low}; got {value}")
    if args.root is not None and not args.root.is_dir():
        _error("store", f"--root: no folder {args.root}; give the folder that holds stores/ (a checkout of the book)")
    horizon = store.HORIZON if args.horizon is None else args.horizon
    items = store.stored_ids(args.root)
    if args.experiment is not None:
        try:
            experiments.resolve(args.experiment)
        except ValueError:
            _error("store", f"experiment: no experiment or figure {args.experiment!r}; the stored runs under "
                            f"{store.store_dir(args.root)}: {', '.join(dict.fromkeys(e for e, _ in items)) or 'none'}")
        items = [(args.experiment, args.profile)]
    if not items:
        print(f"no stored run under {store.store_dir(args.root)}")
        return 0
    failed = 0
    for exp_id, profile in items:
        start, label = time.perf_counter(), "MISMATCH"
        try:
            exp = experiments.resolve(exp_id)
            problems = store.check(exp, profile, args.root)
            if args.action == "verify" and not problems:
                problems = store.verify(exp, profile, args.steps, args.root, horizon=horizon, device=args.device)
        except store.UnverifiableError as err:
            problems, label = [str(err)], "REFUSED"
        except (ValueError, FileNotFoundError) as err:
            problems = [str(err)]
        failed += bool(problems)
        took = f" ({time.perf_counter() - start:.1f} s)" if args.action == "verify" else ""
        print(f"{label if problems else 'OK'}: {exp_id}/{profile}{took}" + "".join(f"\n  {p}" for p in problems))
    return 1 if failed else 0


def _data(args: argparse.Namespace) -> int:
    """``data check``: exit 1 with what to do when Chapter 8's files are missing; ``data download``: fetch them."""
    if args.action == "download":
        folder = wikitext.data_dir(args.to)
        try:
            got = wikitext.download(folder)
        except (ConnectionError, ValueError, OSError) as err:
            print(f"{err}\n(a copy of the files can also be put in a folder named by ${wikitext.ENV})", file=sys.stderr)
            return 1
        print("\n".join(f"verified {path}" for path in got.values()))
        return 0
    found = wikitext_check.check(args.to)
    print(found.message(), file=sys.stdout if found.ok else sys.stderr)
    return 0 if found.ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    if getattr(args, "device", None) is not None:  # every trainer of this process reads it (scansnap.device)
        try:
            os.environ[device.ENV] = str(device.resolve(args.device))
        except ValueError as err:
            _error(args.command, f"--{err}")
    if getattr(args, "jobs", None) is not None:  # scansnap.parallel reads it in every fan-out of this process
        try:
            os.environ[parallel.JOBS] = str(parallel.jobs(args.jobs))
        except ValueError as err:
            _error(args.command, str(err))
    commands = {"reproduce": _reproduce, "store": _store, "claims": _claims, "rules": _rules, "data": _data}
    return commands[args.command](args)
