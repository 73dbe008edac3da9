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
from conftest import names

from scansnap import wikitext

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "wikitext-2"
needs_data = pytest.mark.skipif(not (DATA / "valid.txt").is_file(),
                                reason=f"WikiText-2 is not at {DATA} (../shared/data/wikitext-2 beside the repo)")
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
