"""``make binder-check``: emulate the Binder image here and run every chapter in it, on one core.

Binder cannot be reached from the machines this book is built on, so this builds what repo2docker builds
from ``binder/`` (``tests/test_binder.py`` checks repo2docker's Dockerfile) as closely as it can here:

1. a fresh virtual environment with this Python (``binder/runtime.txt`` names the same minor version);
2. ``pip install -r binder/requirements.txt`` from the repository root, as repo2docker runs it, except for
   the ``--extra-index-url`` line of PyTorch's CPU index, which cannot be reached from here: the same
   ``torch==2.13.0+cpu`` wheel comes from local disk (pip's ``find-links``) instead;
3. ``binder/postBuild`` in an empty ``HOME``;
4. JupyterLab on 127.0.0.1, the whole server pinned to one core (``taskset -c 0``: its kernels inherit the
   pin), as a one-CPU Binder container;
5. each chapter opened through the server as a notebook (the contents API must return it as a notebook, and
   ``lab/tree/<chapter>`` must answer), a kernel started for it through the server (``/api/sessions``), and its
   code cells executed top to bottom over the kernel's websocket; the first error stops the chapter.

The time of each chapter (first cell to last reply) is printed and written to ``_build/binder-check/times.md``.
A chapter over the limit (``--limit``, 180 s) must say so at its top (the word "Binder" before its first code
cell, with the one setting that makes a short run); otherwise the check fails, as it fails on any error.
Figures and verdicts go to ``_build/binder-check/artifacts`` (``SCANSNAP_ARTIFACTS``), not ``_extra``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
INDEX_LINE = re.compile(r"^--(extra-)?index-url\s")


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter files (default: book/chapters/*.md)")
    parser.add_argument("--work", type=Path, default=ROOT / "_build" / "binder-check", help="work folder")
    parser.add_argument("--profile", default="book", choices=("smoke", "book", "paper"), help="SCANSNAP_PROFILE")
    parser.add_argument("--limit", type=float, default=180.0, help="seconds a chapter may take (default 180)")
    parser.add_argument("--cell-timeout", type=float, default=1800.0, help="seconds a cell may take")
    parser.add_argument("--reuse", action="store_true", help="reuse the environment of a previous run")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # phase 2, inside the venv
    return parser.parse_args(argv)


def _say(msg: str) -> None:
    print(f"[binder-check] {msg}", flush=True)


def build_image(args: argparse.Namespace) -> Path:
    """Steps 1-3: the environment and HOME of the image. Returns the environment's python."""
    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip()
    want = runtime.removeprefix("python-")
    have = f"{sys.version_info.major}.{sys.version_info.minor}"
    if have != want:
        sys.exit(f"binder/runtime.txt asks for Python {want}; this is Python {have}: run with python{want}")
    venv, home = args.work / "venv", args.work / "home"
    python = venv / "bin" / "python"
    if not (args.reuse and python.exists()):
        shutil.rmtree(args.work, ignore_errors=True)
        args.work.mkdir(parents=True)
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        lines = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
        reqs = args.work / "requirements.txt"
        reqs.write_text("\n".join(line for line in lines if not INDEX_LINE.match(line)) + "\n")
        dropped = [line for line in lines if INDEX_LINE.match(line)]
        _say(f"pip install -r binder/requirements.txt without {dropped} (the +cpu torch wheel is on local disk)")
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-r", str(reqs)], cwd=ROOT, check=True)
        _say(f"environment installed in {time.monotonic() - t0:.0f} s")
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    env = {**_base_env(venv, home)}
    subprocess.run([str(ROOT / "binder" / "postBuild")], cwd=ROOT, env=env, check=True)
    overrides = home / ".jupyter" / "labconfig" / "default_setting_overrides.json"
    if not overrides.is_file():
        sys.exit(f"binder/postBuild did not write {overrides}")
    _say(f"postBuild ran in an empty HOME: {overrides.relative_to(home)} = {overrides.read_text().strip()}")
    return python


def _base_env(venv: Path, home: Path) -> dict[str, str]:
    drop = {"VIRTUAL_ENV", "PYTHONPATH", "MPLBACKEND", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR",
            "JUPYTER_PATH", "SCANSNAP_ARTIFACTS", "SCANSNAP_PROFILE"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(HOME=str(home), PATH=f"{venv / 'bin'}:{env.get('PATH', '')}")
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as err:
        return err.code, b""
    except OSError:  # not listening yet
        return 0, b""


def serve_and_run(args: argparse.Namespace) -> int:
    """Steps 4-5, run by the environment's python."""
    import asyncio

    venv, home = Path(sys.prefix), args.work / "home"
    port, token = _free_port(), secrets.token_hex(16)
    env = _base_env(venv, home)
    env.update(SCANSNAP_ARTIFACTS=str(args.work / "artifacts"), SCANSNAP_PROFILE=args.profile)
    log = (args.work / "jupyterlab.log").open("w")
    server = subprocess.Popen(["taskset", "-c", "0", str(venv / "bin" / "jupyter"), "lab", "--no-browser",
                               f"--ServerApp.ip={HOST}", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
                               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={ROOT}",
                               *(["--allow-root"] if os.geteuid() == 0 else [])],  # CI runs as root
                              env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://{HOST}:{port}/"
    try:
        deadline = time.monotonic() + 120
        while _get(f"{base}api/status?token={token}")[0] != 200:
            if server.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"JupyterLab did not start (see {args.work / 'jupyterlab.log'})")
            time.sleep(0.5)
        _say(f"JupyterLab on {base} (taskset -c 0), HOME={home}, SCANSNAP_PROFILE={args.profile}")
        chapters = [Path(c).resolve() for c in args.chapters] or sorted((ROOT / "book" / "chapters").glob("*.md"))
        rows = [asyncio.run(run_chapter(base, token, ch, args.cell_timeout)) for ch in chapters]
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
    return report(rows, args)


async def run_chapter(base: str, token: str, chapter: Path, cell_timeout: float) -> dict:
    """Open ``chapter`` through the server as a notebook and run its code cells in a kernel of the server."""
    from tornado.httpclient import AsyncHTTPClient, HTTPRequest
    from tornado.websocket import websocket_connect

    rel = chapter.relative_to(ROOT).as_posix()
    row = {"chapter": rel, "cells": 0, "seconds": None, "error": "", "threads": ""}
    status, body = _get(f"{base}api/contents/{rel}?type=notebook&content=1&token={token}")
    model = json.loads(body) if status == 200 else {}
    if model.get("type") != "notebook":
        row["error"] = f"the server does not open {rel} as a notebook (HTTP {status}, type {model.get('type')})"
        return row
    if _get(f"{base}lab/tree/{rel}?token={token}")[0] != 200:
        row["error"] = f"lab/tree/{rel} does not answer"
        return row
    code = [c["source"] for c in model["content"]["cells"] if c["cell_type"] == "code"]
    http = AsyncHTTPClient()
    resp = await http.fetch(HTTPRequest(f"{base}api/sessions?token={token}", method="POST", body=json.dumps(
        {"path": rel, "type": "notebook", "name": chapter.name, "kernel": {"name": "python3"}})))
    session = json.loads(resp.body)
    kernel = session["kernel"]["id"]
    ws = await websocket_connect(f"ws://{base[7:]}api/kernels/{kernel}/channels?session_id={uuid.uuid4().hex}"
                                 f"&token={token}")
    try:
        t0 = time.monotonic()
        for i, source in enumerate(code):
            reply = await _execute(ws, source, cell_timeout)
            row["cells"] = i + 1
            if reply["status"] != "ok":
                row["error"] = f"cell {i + 1}: {reply.get('ename')}: {reply.get('evalue')}"
                break
        row["seconds"] = round(time.monotonic() - t0, 1)
        probe = await _execute(ws, "import os, torch; print(torch.get_num_threads(), sorted(os.sched_getaffinity(0)))",
                               60, keep_output=True)
        row["threads"] = probe.get("stdout", "").strip()
    finally:
        ws.close()
        await http.fetch(HTTPRequest(f"{base}api/sessions/{session['id']}?token={token}", method="DELETE"))
    _say(f"{rel}: {row['cells']}/{len(code)} code cells, {row['seconds']} s"
         f"{' ERROR ' + row['error'] if row['error'] else ''} (torch threads, cores: {row['threads']})")
    return row


async def _execute(ws, source: str, timeout: float, keep_output: bool = False) -> dict:
    """Send one ``execute_request`` over the kernel's websocket; wait for its reply and the kernel to go idle."""
    import asyncio

    msg_id = uuid.uuid4().hex
    await ws.write_message(json.dumps({
        "header": {"msg_id": msg_id, "username": "binder-check", "session": uuid.uuid4().hex,
                   "msg_type": "execute_request", "version": "5.3"},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": source, "silent": False, "store_history": True, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True}}))
    reply, idle, stdout = None, False, []
    deadline = time.monotonic() + timeout
    while reply is None or not idle:
        left = deadline - time.monotonic()
        if left <= 0:
            return {"status": "error", "ename": "Timeout", "evalue": f"no reply within {timeout:.0f} s"}
        raw = await asyncio.wait_for(ws.read_message(), timeout=left)
        if raw is None:
            return {"status": "error", "ename": "Disconnected", "evalue": "the kernel's websocket closed"}
        msg = json.loads(raw)
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = msg["header"]["msg_type"]
        if kind == "execute_reply":
            reply = msg["content"]
        elif kind == "status" and msg["content"]["execution_state"] == "idle":
            idle = True
        elif kind == "stream" and keep_output:
            stdout.append(msg["content"]["text"])
    return {**reply, "stdout": "".join(stdout)}


def report(rows: list[dict], args: argparse.Namespace) -> int:
    """Print and write the table; the exit status (1 on an error or an unannounced overrun)."""
    lines = [f"| chapter | code cells run | seconds on one core ({args.profile} profile) | within {args.limit:.0f} s |",
             "|---|---|---|---|"]
    failed = []
    for r in rows:
        within = r["seconds"] is not None and r["seconds"] <= args.limit
        top = (ROOT / r["chapter"]).read_text().split("```{code-cell}", 1)[0]
        announced = "Binder" in top
        if r["error"] or (not within and not announced):
            failed.append(r["chapter"])
        note = "yes" if within else ("no (its top says so)" if announced else "no, and its top does not say so")
        lines.append(f"| `{r['chapter'].rsplit('/', 1)[-1]}` | {r['cells']} | {r['seconds']} | "
                     f"{note}{' — ERROR: ' + r['error'] if r['error'] else ''} |")
    table = "\n".join(lines)
    (args.work / "times.md").write_text(table + "\n")
    (args.work / "times.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(table)
    _say(f"written to {args.work / 'times.md'}; " + (f"FAILED: {', '.join(failed)}" if failed else "passed"))
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    args.work = args.work.resolve()
    if args.serve:
        return serve_and_run(args)
    if shutil.which("taskset") is None:
        sys.exit("taskset (util-linux) is needed to pin the server to one core")
    python = build_image(args)
    cmd = [str(python), str(Path(__file__).resolve()), "--serve", "--work", str(args.work), "--profile", args.profile,
           "--limit", str(args.limit), "--cell-timeout", str(args.cell_timeout), *args.chapters]
    return subprocess.run(cmd, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
