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

from scansnap import (
    claims,
    cli_parser,
    device,
    experiments,
    figure_cite,
    figures,
    ledger,
    parallel,
    provenance,
    store,
    store_verify,
    wikitext,
    wikitext_check,
)
from scansnap._io import INSTALLED_DEFAULT, artifacts_dir
from scansnap.cli_parser import error, json_file

__all__ = ["main"]


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
        error("reproduce", "--store: not with --check (a check re-makes the published figure and stores nothing)")
    if args.check:
        return _check(args)
    if args.against is not None:
        error("reproduce", "--against: only with --check")
    if args.store and args.out is not None:
        error("reproduce", "--store: the store goes to stores/ in the checkout; leave --out out")
    if args.store and provenance.checkout().dirty:  # refused before the run, not after an hour of it
        error("reproduce", f"--store: the checkout has uncommitted changes to tracked files "
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
        error("claims", "--reason: only with --write-lock")
    json_file("claims", "--lock", args.lock, must_exist=args.check_lock)
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
            error("claims", "--write-lock: needs --reason (kept with the lock)")
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
        error("rules", f"{'--reason' if args.reason else '--reasons'}: only with --write")
    json_file("rules", "--file", args.file, must_exist=not args.write)
    json_file("rules", "--reasons", args.reasons)
    if args.write:
        reason: str | dict[str, str] = args.reason
        if args.reasons is not None:
            reason = json.loads(args.reasons.read_text())
        if not reason:
            error("rules", "--write: needs --reason or --reasons (kept in each changed rule's history)")
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
            error("store", f"--{flag}: only with verify")
        if value is not None and value < low:
            error("store", f"--{flag}: must be an integer >= {low}; got {value}")
    if args.root is not None and not args.root.is_dir():
        error("store", f"--root: no folder {args.root}; give the folder that holds stores/ (a checkout of the book)")
    horizon = store.HORIZON if args.horizon is None else args.horizon
    items = store.stored_ids(args.root)
    if args.experiment is not None:
        try:
            experiments.resolve(args.experiment)
        except ValueError:
            error("store", f"experiment: no experiment or figure {args.experiment!r}; the stored runs under "
                            f"{store.store_dir(args.root)}: {', '.join(dict.fromkeys(e for e, _ in items)) or 'none'}")
        items = [(args.experiment, args.profile)]
    if not items:
        print(f"no stored run under {store.store_dir(args.root)}")
        return 0
    failed = 0
    for exp_id, profile in items:
        start, label, ran = time.perf_counter(), "MISMATCH", ""
        try:
            exp = experiments.resolve(exp_id)
            problems = store.check(exp, profile, args.root)
            if args.action == "verify" and not problems:
                problems = store_verify.verify(exp, profile, args.steps, args.root, horizon=horizon, device=args.device)
                upto = horizon if args.steps is None or exp.prefix is None else min(args.steps, horizon)
                ran = f"steps 0-{upto} re-run and compared, "
        except store.UnverifiableError as err:
            problems, label = [str(err)], "REFUSED"
        except (ValueError, FileNotFoundError) as err:
            problems = [str(err)]
        failed += bool(problems)
        took = f" ({ran}{time.perf_counter() - start:.1f} s)" if args.action == "verify" else ""
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
    args = cli_parser.parser().parse_args(argv)
    if getattr(args, "device", None) is not None:  # every trainer of this process reads it (scansnap.device)
        try:
            os.environ[device.ENV] = str(device.resolve(args.device))
        except ValueError as err:
            error(args.command, f"--{err}")
    if getattr(args, "jobs", None) is not None:  # scansnap.parallel reads it in every fan-out of this process
        try:
            os.environ[parallel.JOBS] = str(parallel.jobs(args.jobs))
        except ValueError as err:
            error(args.command, str(err))
    commands = {"reproduce": _reproduce, "store": _store, "claims": _claims, "rules": _rules, "data": _data}
    return commands[args.command](args)
