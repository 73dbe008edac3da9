"""scansnap.wikitext: verified files, a verified atomic download (local HTTP server), tokens and batches."""

from __future__ import annotations

import hashlib
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from conftest import names, needs_wikitext, wikitext_found

from scansnap import wikitext, wikitext_check

DATA = wikitext_found().folder  # wikitext.data_dir(), where the files are (or were downloaded now)
needs_data = needs_wikitext()
FAKE = b" = Title = \n\n the cat sat on the mat . \n a dog <unk> . \n"


@needs_data
def test_real_splits_verify_and_give_the_classic_token_counts() -> None:
    assert len(wikitext.tokens("valid", DATA)) == 217_646
    assert len(wikitext.tokens("test", DATA)) == 245_569
    for split in ("valid", "test"):
        payload = (DATA / f"{split}.txt").read_bytes()
        assert wikitext.git_blob_id(payload) == wikitext.GIT_BLOB[split]
        assert hashlib.sha256(payload).hexdigest() == wikitext.SHA256[split]


def test_git_blob_id_is_gits() -> None:
    assert wikitext.git_blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # git hash-object /dev/null
    assert wikitext.git_blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_data_dir_from_argument_environment_or_the_user_cache(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv(wikitext.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert wikitext.data_dir() == wikitext.cache_dir() == tmp_path / "cache" / "scansnap" / "wikitext-2"
    monkeypatch.setenv(wikitext.ENV, str(tmp_path))
    assert wikitext.data_dir() == tmp_path
    assert wikitext.data_dir(tmp_path / "x") == tmp_path / "x"


def test_the_library_names_no_folder_outside_the_repository() -> None:
    """A user's clone has nothing beside it: the library never points at ``../shared``."""
    root = Path(wikitext.__file__).resolve().parent
    assert not [p for p in root.rglob("*.py") if "shared/" in p.read_text() or "/shared" in p.read_text()]


@pytest.fixture
def fake(monkeypatch, tmp_path: Path) -> Path:
    """A folder with a small ``valid.txt`` whose digests are made the known ones."""
    monkeypatch.setitem(wikitext.SHA256, "valid", hashlib.sha256(FAKE).hexdigest())
    monkeypatch.setitem(wikitext.GIT_BLOB, "valid", wikitext.git_blob_id(FAKE))
    monkeypatch.setitem(wikitext.GIT_BLOB, "train", wikitext.git_blob_id(FAKE))
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "valid.txt").write_bytes(FAKE)
    return folder


def test_tokens_split_the_classic_way(fake: Path) -> None:
    words = wikitext.tokens("valid", fake)
    assert words[:4] == ["=", "Title", "=", "<eos>"] and words[4] == "<eos>"  # blank line: <eos> alone
    assert words.count("<eos>") == 4 and len(words) == 4 + 1 + 8 + 5


def test_missing_file_raises_file_not_found_naming_file_and_digest(fake: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"^test: no file .*test\.txt.*6f3fc88e.*download"):
        wikitext.tokens("test", fake)


@pytest.mark.parametrize("damage", ["truncated", "altered"])
def test_bad_file_raises_value_error_with_both_digests(fake: Path, damage: str) -> None:
    bad = FAKE[:-7] if damage == "truncated" else FAKE.replace(b"cat", b"cot")
    (fake / "valid.txt").write_bytes(bad)
    with pytest.raises(ValueError, match=names("valid")) as exc:
        wikitext.tokens("valid", fake)
    text = str(exc.value)
    assert wikitext.GIT_BLOB["valid"] in text and wikitext.git_blob_id(bad) in text and "download" in text


def test_vocabulary_order_cap_and_unk() -> None:
    words = ["b", "a", "b", "c", "<unk>", "b", "a", "d", "<eos>"]
    v = wikitext.Vocabulary.build(words)
    assert v.words == ("b", "a", "c", "<unk>", "d", "<eos>") and v.unk == "<unk>"
    capped = wikitext.Vocabulary.build(words, cap=4)
    assert len(capped) == 4 and set(capped.words) == {"b", "a", "<unk>", "<eos>"}
    assert capped.encode(["d", "b"]).tolist() == [capped.words.index("<unk>"), capped.words.index("b")]
    with pytest.raises(ValueError, match=names("words")):
        wikitext.Vocabulary.build(["x", "y"]).encode(["z"])
    with pytest.raises(ValueError, match=names("cap")):
        wikitext.Vocabulary.build(words, cap=-1)


def test_batchify_and_chunks_shift_targets_by_one() -> None:
    ids = torch.arange(103)
    streams = wikitext.batchify(ids, 4)
    assert streams.shape == (4, 25) and streams[1, 0] == 25
    got = list(wikitext.chunks(streams, 10))
    assert [x.shape[1] for x, _ in got] == [10, 10, 4]
    for x, y in got:
        assert torch.equal(y, x + 1)
    with pytest.raises(ValueError, match=names("batch")):
        wikitext.batchify(ids, 0)


# ------------------------------------------------------------------------------------------------
# download() against a local HTTP server
# ------------------------------------------------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        mode, _, name = self.path.strip("/").partition("/")
        body = self.files.get(name)
        if mode == "missing" or body is None:
            self.send_error(404)
            return
        if mode == "truncated":
            body = body[: len(body) // 2]
        if mode == "wrong":
            body = bytes(reversed(body))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if mode == "drop":  # promise every byte, send half, hang up
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(2)
            return
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _left(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


@pytest.mark.parametrize("split", ["valid", "train"])  # train: verified by its git blob id alone
def test_download_good_file_is_verified_and_moved_in(fake: Path, server: str, tmp_path: Path, split: str) -> None:
    _Handler.files = {f"{split}.txt": FAKE}
    root = tmp_path / "new"
    got = wikitext.download(root, [split], base_url=f"{server}/good/", retries=0)
    assert got == {split: root / f"{split}.txt"} and _left(root) == [f"{split}.txt"]
    assert (root / f"{split}.txt").read_bytes() == FAKE


@pytest.mark.parametrize("mode, error", [("truncated", ValueError), ("wrong", ValueError),
                                         ("missing", ConnectionError), ("drop", ConnectionError)])
def test_download_failures_raise_and_leave_nothing(fake: Path, server: str, tmp_path: Path, mode: str,
                                                   error: type) -> None:
    _Handler.files = {"valid.txt": FAKE}
    root = tmp_path / "new"
    with pytest.raises(error, match=names("valid")):
        wikitext.download(root, ["valid"], base_url=f"{server}/{mode}/", retries=0, timeout=10)
    assert _left(root) == []  # no partial, unverified or temporary file


def test_download_keeps_a_good_copy_and_replaces_a_bad_one(fake: Path, server: str) -> None:
    _Handler.files = {"valid.txt": FAKE}
    assert wikitext.download(fake, ["valid"], base_url=f"{server}/missing/", retries=0)  # good copy: no request
    (fake / "valid.txt").write_bytes(b"rubbish")
    wikitext.download(fake, ["valid"], base_url=f"{server}/good/", retries=0)
    assert (fake / "valid.txt").read_bytes() == FAKE and _left(fake) == ["valid.txt"]


@pytest.fixture
def user_cache(monkeypatch, tmp_path: Path) -> Path:
    """A user's machine: no ``$SCANSNAP_WIKITEXT``, an empty per-user cache."""
    monkeypatch.delenv(wikitext.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return wikitext.cache_dir()


def test_first_use_fills_the_user_cache_with_a_verified_download(fake: Path, server: str, user_cache: Path,
                                                                 monkeypatch) -> None:
    _Handler.files = {"valid.txt": FAKE}
    monkeypatch.setattr(wikitext, "BASE_URL", f"{server}/good/")
    assert len(wikitext.tokens("valid")) == 18 and _left(user_cache) == ["valid.txt"]
    monkeypatch.setattr(wikitext, "BASE_URL", f"{server}/missing/")  # the cached copy is used: no request
    assert wikitext.verified_text("valid") == FAKE.decode()


@pytest.mark.parametrize("mode", ["missing", "truncated"])
def test_no_data_and_no_download_names_the_cache_and_the_variable(fake: Path, server: str, user_cache: Path,
                                                                  monkeypatch, mode: str) -> None:
    _Handler.files = {"valid.txt": FAKE}
    monkeypatch.setattr(wikitext, "BASE_URL", f"{server}/{mode}/")
    with pytest.raises(FileNotFoundError, match=names("valid")) as exc:
        wikitext.tokens("valid")
    assert str(user_cache) in str(exc.value) and wikitext.ENV in str(exc.value)
    assert _left(user_cache) == []  # nothing partial or unverified


@needs_data
def test_download_of_the_real_file_verifies_with_the_real_digests(server: str, tmp_path: Path) -> None:
    _Handler.files = {"valid.txt": (DATA / "valid.txt").read_bytes()}
    wikitext.download(tmp_path, ["valid"], base_url=f"{server}/good/", retries=0)
    assert len(wikitext.tokens("valid", tmp_path)) == 217_646
    shutil.rmtree(tmp_path)


def _wiki(n: int, start: int = 0) -> str:
    """A synthetic WikiText-format text of ``n`` articles (titles `` = A<i> = ``, a section `` = = S = = ``)."""
    return "".join(f" \n = A{i} = \n \n w{i} x . \n \n = = S{i} = = \n \n y{i} . \n" for i in range(start, start + n))


def test_articles_are_whole_and_cover_the_text() -> None:
    text = " \n" + _wiki(3)
    arts = wikitext.articles(text)
    assert len(arts) == 3 and all(a.count("=") == 6 for a in arts)  # one title and one section each
    assert [w for a in arts for w in a] == [w for line in text.split("\n")[:-1] for w in (*line.split(), "<eos>")]
    assert arts[1][:3] == ["=", "A1", "="] and "y1" in arts[1] and "w2" not in arts[1]


def test_article_split_holds_out_every_tenth_whole_article_deterministically() -> None:
    texts = [_wiki(25), _wiki(15, start=25)]
    train, held, n_train, n_held = wikitext.article_split(texts)
    assert (n_train, n_held) == (36, 4) and wikitext.article_split(texts) == (train, held, n_train, n_held)
    held_titles = {held[i + 1] for i in range(len(held) - 2) if held[i] == "=" and held[i + 2] == "="
                   and held[i + 1].startswith("A")}
    assert held_titles == {"A9", "A19", "A29", "A39"}
    assert not {w for w in train if w[1:].isdigit()} & {w for w in held if w[1:].isdigit()}  # disjoint articles
    assert all(f"y{i[1:]}" in held for i in held_titles)  # whole: each held-out article keeps its section
    assert len(held) / (len(train) + len(held)) == pytest.approx(0.1, abs=0.005)
    with pytest.raises(ValueError, match=names("every")):
        wikitext.article_split(texts, every=1)


# ------------------------------------------------------------------------------------------------
# scansnap.wikitext_check.check(): what `make book` runs before executing any page (beside the download tests: it
# uses the same local server and user cache)
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def both(monkeypatch) -> dict[str, bytes]:
    """Small stand-ins for valid.txt and test.txt whose digests are made the known ones."""
    files = {"valid": FAKE, "test": FAKE.replace(b"cat", b"dog")}
    for split, payload in files.items():
        monkeypatch.setitem(wikitext.SHA256, split, hashlib.sha256(payload).hexdigest())
        monkeypatch.setitem(wikitext.GIT_BLOB, split, wikitext.git_blob_id(payload))
    _Handler.files = {f"{s}.txt": p for s, p in files.items()}
    return files


def _says_what_to_do(text: str) -> None:
    for words in ("valid.txt", "test.txt", "SCANSNAP_WIKITEXT", "python -m scansnap data download", "make book"):
        assert words in text, words


def test_check_passes_on_verified_files_without_a_request(both, tmp_path: Path, monkeypatch) -> None:
    for split, payload in both.items():
        (tmp_path / f"{split}.txt").write_bytes(payload)
    monkeypatch.setattr(wikitext, "download", lambda *a, **k: pytest.fail("no download when the files are there"))
    found = wikitext_check.check(tmp_path)
    assert found.ok and found.missing == () and found.origin == "argument"
    assert found.message().count("\n") == 0 and str(tmp_path) in found.message()


def test_check_of_an_empty_named_folder_fails_at_once_saying_what_to_do(both, tmp_path: Path, monkeypatch) -> None:
    """``$SCANSNAP_WIKITEXT`` names an empty folder: no download is tried there; the message names both files, the
    folder, the variable, the per-user cache and the download command."""
    monkeypatch.setenv(wikitext.ENV, str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(wikitext, "download", lambda *a, **k: pytest.fail("a named folder is never downloaded into"))
    found = wikitext_check.check()
    assert not found.ok and found.missing == ("valid.txt", "test.txt") and found.origin == "$SCANSNAP_WIKITEXT"
    text = found.message()
    _says_what_to_do(text)
    assert str(tmp_path) in text and str(wikitext.cache_dir()) in text and _left(tmp_path) == []


def test_check_of_a_bad_copy_names_its_digests(both, tmp_path: Path) -> None:
    (tmp_path / "valid.txt").write_bytes(b"rubbish")
    (tmp_path / "test.txt").write_bytes(both["test"])
    found = wikitext_check.check(tmp_path)
    assert found.missing == ("valid.txt",) and wikitext.GIT_BLOB["valid"] in found.problem


@pytest.mark.parametrize("mode", ["missing", "truncated", "closed port"])
def test_check_offline_with_an_empty_user_cache_fails_naming_the_cache(both, server: str, user_cache: Path,
                                                                       mode: str) -> None:
    """No data and no way to download them (a 404, a bad transfer, a server that does not answer: a blocked
    network): the check fails, names the cache folder, and leaves nothing in it."""
    if mode == "closed port":
        import socket

        with socket.socket() as s:  # a port nothing listens on: the connection is refused at once
            s.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{s.getsockname()[1]}/"
    else:
        url = f"{server}/{mode}/"
    found = wikitext_check.check(base_url=url, timeout=5)
    assert not found.ok and found.origin == "cache" and f"downloading them from {url} failed" in found.problem
    text = found.message()
    _says_what_to_do(text)
    assert str(user_cache) in text and "SCANSNAP_WIKITEXT is not set" in text
    assert "Max retries" not in text and "Connection refused" in text if mode == "closed port" else True
    assert _left(user_cache) == []  # nothing partial, unverified or temporary


def test_check_fills_an_empty_user_cache_when_it_can(both, server: str, user_cache: Path) -> None:
    found = wikitext_check.check(base_url=f"{server}/good/")
    assert found.ok and sorted(_left(user_cache)) == ["test.txt", "valid.txt"]


def test_cli_data_check_and_download(both, server: str, user_cache: Path, monkeypatch, capsys) -> None:
    from scansnap.cli import main

    monkeypatch.setattr(wikitext, "BASE_URL", f"{server}/missing/")
    assert main(["data", "check"]) == 1
    err = capsys.readouterr().err
    _says_what_to_do(err)
    assert err.rstrip().splitlines()[-1].startswith("Every file is checked")  # the advice ends the output
    monkeypatch.setattr(wikitext, "BASE_URL", f"{server}/good/")
    monkeypatch.setitem(wikitext.GIT_BLOB, "train", wikitext.git_blob_id(FAKE))
    _Handler.files["train.txt"] = FAKE
    assert main(["data", "download"]) == 0
    assert sorted(_left(user_cache)) == ["test.txt", "train.txt", "valid.txt"]
    assert main(["data", "check"]) == 0 and "verified" in capsys.readouterr().out
