"""Run once, on 2026-11-27 (issue "runs stored apart from their analysis"): move the three stores under stores/
from the old code hash (the bytes of the ~20 modules their run module imports) to the new one (the docstring-free
syntax of the functions the run executes, scansnap.codehash), without re-running them.

Legitimate only because the run's code did not change: every store was checked current under the old hash at
commit eb5bddb (the listing now named `python -m scansnap store list`: OK for all three) immediately before this
change, and the only edit to code the runs execute is the data note of WikiConfig.splits, which no longer names the
absolute path of the data folder of the machine that made the run. The stored note is redacted the same way; every
other array keeps its digest (checked below). The new functions and hash are traced from the verify prefix of each
store.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from scansnap import experiments, results, store
from scansnap._io import atomic_write, dump_json

OLD_PATH = "train.txt is not in /work/shared/data/wikitext-2:"
NEW_PATH = "train.txt is not in the data folder:"


def migrate(exp_id: str, profile: str = "paper") -> None:
    exp = experiments.resolve(exp_id)
    folder = store.store_dir() / exp_id / profile
    old = json.loads((folder / "provenance.json").read_text())
    if "code_hash" in old:
        print(f"{exp_id}: already migrated")
        return
    result = results.load(exp.result, folder / "result.npz")
    assert OLD_PATH in result.note, result.note[:120]
    result = replace(result, note=result.note.replace(OLD_PATH, NEW_PATH))
    with tempfile.TemporaryDirectory() as tmp:
        results.save(result, Path(tmp) / "result.npz")
        digests = store._digests(Path(tmp) / "result.npz")
        changed = sorted(k for k in digests if digests[k] != old["digests"].get(k))
        assert changed == ["__meta__"] and set(digests) == set(old["digests"]), changed
        config = exp.config(**{k: store._tuples(v) for k, v in old["config"].items()})
        code_hash, functions = store.code(exp, config)
        prov = {k: v for k, v in old.items() if k not in ("library_hash", "modules")}
        prov |= {"code_hash": code_hash, "functions": functions, "digests": digests, "record": [
            f"2026-11-27: code hash re-computed under scansnap.codehash (the run's functions, docstring-free syntax) "
            f"from the same code: the old byte hash {old['library_hash']} of {len(old['modules'])} modules was checked "
            f"equal to the code at commit eb5bddb first; the data note's absolute path of the machine that made the "
            f"run replaced by 'the data folder' (its __meta__ digest re-computed; no other array touched)"]}
        store.Provenance(**prov)  # the new format reads it
        atomic_write(Path(tmp) / "provenance.json", dump_json(prov))
        atomic_write(folder / "result.npz", (Path(tmp) / "result.npz").read_bytes())
        atomic_write(folder / "provenance.json", (Path(tmp) / "provenance.json").read_bytes())
    print(f"{exp_id}: code hash {code_hash} over {len(functions)} functions")


if __name__ == "__main__":
    for exp_id in sys.argv[1:] or ["ch8-freeze", "ch8-freeze-deep", "ch8-rates"]:
        migrate(exp_id)
