"""The workspace's files and folders for `@` completion, listed in the background and kept fresh.

Listing: in a git work tree, `git ls-files --cached --others --exclude-standard` (git's
own reading of every `.gitignore`, `.git/info/exclude` and the global excludes file);
elsewhere a walk that skips the folders the search tools skip and what `.gitignore`,
`.ignore` and `.rgignore` files exclude (`tools/ignores.py`, with `.gitignore` honoured
outside a repository too). Folders are the parents of the files listed. Every file is
stat'ed once for its modification time: a folder's is its newest file's.

The list is built in a thread and swapped in whole, so a query always sees one complete
listing; `refresh(max_age)` starts a rebuild when the listing is older than that (the
prompt asks each time `@` completion opens; the screen marks it stale after a turn or a
`!` command, which may have created files). Queries while a rebuild runs use the old list.

Ranking (`query`): the path must hold the query's characters in order (case-insensitive).
Matches come in tiers, best first: the name is the query (with any extension); the name
starts with the query; the name contains it;
the name holds its characters in order; the path contains it; the path holds them in
order. Within a tier, recently changed first (changed in the last hour, day, week, or
earlier), then shorter paths, then by name. The list is sorted that way once per build
and kept as one text, a path per line, so each tier is one compiled regular expression
run over that text in C (`finditer`), stopping as soon as enough are found: a query on
100,000 files takes milliseconds, not the Python loop's hundreds.

A paste that is the path of an image file in the workspace (`pasted_image`: as a terminal
pastes a file dragged onto it, quoted, with `\\ ` escapes or as a `file://` URL) is that
file's `@` mention, which attaches it as an image.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..model.images import SUFFIXES
from ..repo_files import RepoFileError, read_repo_file
from ..tools.ignores import MAX_IGNORE_BYTES, IgnoreRules
from ..tools.walk import SKIP_DIRS

MAX_FILES = 300_000
"""A listing stops here (a home directory as the workspace): said in `Listing.partial`."""
GIT_TIMEOUT = 30.0
RESULTS = 50
"""Matches a query returns at most: more than a completion list shows."""
_AGE_BUCKETS = (3600.0, 86_400.0, 7 * 86_400.0)
"""Seconds: changed in the last hour, day or week ranks above older files."""


@dataclass(frozen=True)
class Match:
    path: str
    """Workspace-relative posix path; a folder's ends with `/`."""
    is_dir: bool
    positions: tuple[int, ...] = ()
    """Indexes in `path` of the characters the query matched (to highlight them)."""


@dataclass(frozen=True)
class Listing:
    files: dict[str, float]
    """Relative posix path → modification time."""
    partial: bool = False
    source: str = "walk"
    """`git` or `walk`: how the files were found."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Ignore files not used (path → why: not a regular file, too big)."""


# --- listing ------------------------------------------------------------------------


def _git_files(root: Path) -> list[str] | None:
    """Files git would show (tracked and untracked, not ignored) below `root`; None outside a repository."""
    try:
        inside = subprocess.run(
            ["git", "rev-parse", "--is-inside-work-tree"],
            cwd=root,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        if inside.returncode != 0 or inside.stdout.strip() != b"true":
            return None
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if listed.returncode != 0:
        return None
    return [os.fsdecode(raw) for raw in dict.fromkeys(listed.stdout.split(b"\0")) if raw]


def _git_may_read(root: Path) -> bool:
    """Whether the ignore files git reads first are ones it can read without hanging: git
    opens a FIFO `.gitignore` and waits for ever (then the walk, which skips it, lists)."""
    for path in (root / ".gitignore", root / ".git" / "info" / "exclude"):
        try:
            read_repo_file(path, MAX_IGNORE_BYTES)
        except RepoFileError:
            return path.is_dir()  # a folder of that name git passes over
    return True


def _walk_files(root: Path, ignores: IgnoreRules) -> Iterator[str]:
    """Relative posix paths of the files below `root`, skipping what an ignore file excludes."""
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            name
            for name in dirnames
            if name not in SKIP_DIRS
            and not os.path.islink(os.path.join(directory, name))
            and not ignores.ignored(os.path.join(directory, name), is_dir=True)
        )
        prefix = os.path.relpath(directory, root)
        prefix = "" if prefix == "." else prefix.replace(os.sep, "/") + "/"
        for name in sorted(filenames):
            if name not in SKIP_DIRS and not ignores.ignored(os.path.join(directory, name), is_dir=False):
                yield prefix + name


def list_workspace(root: Path, limit: int = MAX_FILES) -> Listing:
    """The files of the workspace with their modification times (blocking: run it in a thread)."""
    listed = _git_files(root) if _git_may_read(root) else None
    source = "git" if listed is not None else "walk"
    ignores = IgnoreRules(require_git=False)
    paths = iter(listed) if listed is not None else _walk_files(root, ignores)
    files: dict[str, float] = {}
    partial = False
    for relative in paths:
        if len(files) >= limit:
            partial = True
            break
        try:
            # A tracked file deleted from disk, a dangling link: not offered.
            files[relative.replace(os.sep, "/")] = os.stat(root / relative).st_mtime
        except (OSError, ValueError):
            continue
    return Listing(files, partial, source, dict(ignores.skipped))


# --- ranking --------------------------------------------------------------------------


def _rank(path: str, mtime: float, now: float) -> tuple[int, int, str]:
    age = now - mtime
    bucket = next((n for n, limit in enumerate(_AGE_BUCKETS) if age < limit), len(_AGE_BUCKETS))
    return bucket, len(path), path


@dataclass
class Snapshot:
    """One listing, ready to query: every path on a line of one text, in rank order."""

    text: str
    """`\n/<key>` per entry, keys lower-case, folders without their slash; ends with `\n`."""
    starts: list[int]
    """Where each entry's line starts in `text` (its `/`)."""
    shown: list[str]
    """The path as shown (case kept, `/` after a folder), by entry."""
    partial: bool
    built: float = field(default_factory=time.monotonic)
    skipped: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, listing: Listing, now: float | None = None) -> Snapshot:
        now = time.time() if now is None else now
        entries = dict(listing.files)
        for path, mtime in listing.files.items():
            parent = path.rpartition("/")[0]
            while parent:  # a folder is as recent as its newest file
                if entries.get(parent + "/", 0.0) >= mtime:
                    break
                entries[parent + "/"] = mtime
                parent = parent.rpartition("/")[0]
        ordered = sorted(entries, key=lambda path: _rank(path.removesuffix("/"), entries[path], now))
        seen: set[str] = set()
        lines: list[str] = []
        starts: list[int] = []
        shown: list[str] = []
        at = 1
        for path in ordered:
            key = path.removesuffix("/").lower()
            if key in seen or "\n" in key:  # names that differ only in case: the better ranked one
                continue
            seen.add(key)
            starts.append(at)
            lines.append("/" + key)
            shown.append(path)
            at += len(key) + 2
        return cls("\n" + "\n".join(lines) + "\n", starts, shown, listing.partial, skipped=listing.skipped)


def _char_class(*chars: str) -> str:
    """`[^…]*+`: as many as there are of anything but `chars`, never given back."""
    return "[^" + "".join(re.escape(c) for c in chars) + "]*+"


def _in_order(query: str, *, within_name: bool) -> str:
    """`query`'s characters in order on one line (`within_name`: in its last path segment).

    Anchored at the line's start and possessive (`*+`): each line is tried once, in one
    pass, taking each character as early as it comes. A later start could not succeed
    where the earliest failed, and giving characters back could not either, so neither
    is tried (the backtracking made a long query over 100,000 paths take 0.2 s)."""
    stop = ("/", "\n") if within_name else ("\n",)
    parts = ["\n(?>[^\n]*/)" if within_name else "\n"]
    parts += [_char_class(char, *stop) + re.escape(char) for char in query]
    if within_name:
        parts.append(_char_class(*stop) + "$")
    return "".join(parts)


def _tiers(query: str) -> list[re.Pattern[str]]:
    """The tiers' patterns over `Snapshot.text`, best first. Each starts with a literal (the
    query, a `/` or the line's `\n`), so the engine skips ahead to it instead of trying
    every position."""
    literal = re.escape(query)
    tiers: list[str] = []
    if "/" not in query:
        name_rest = _char_class("/", "\n") + "$"
        exact = "/" + literal + r"(?:\.[^/\n]*+)?$"  # the name itself, with any extension: `cli` → cli.py
        tiers += [exact, "/" + literal + name_rest, literal + name_rest, _in_order(query, within_name=True)]
    tiers += [literal, _in_order(query, within_name=False)]
    return [re.compile(pattern, re.MULTILINE) for pattern in tiers]


def positions(path: str, query: str) -> tuple[int, ...]:
    """Where `query` (lower-case) shows in `path`: the contiguous match in the name, else in
    the path, else its characters in order, as far right as they fit (in the name if they can)."""
    lower = path.lower()
    name_start = lower.rstrip("/").rfind("/") + 1
    for start in (lower.find(query, name_start), lower.find(query)):
        if start >= 0:
            return tuple(range(start, start + len(query)))
    found: list[int] = []
    at = len(lower)
    for char in reversed(query):
        at = lower.rfind(char, 0, at)
        if at < 0:
            return ()
        found.append(at)
    return tuple(reversed(found))


FEW = 2_000
"""Up to this many matches, a query finds them all in one pass and ranks them in Python."""


def _entry_at(snapshot: Snapshot, offset: int) -> int:
    """The entry whose line holds `offset` in the text (a match's last character is on its
    entry's line; it may begin at the `\n` before it)."""
    return bisect_right(snapshot.starts, offset) - 1


def _line_match(snapshot: Snapshot, pattern: re.Pattern[str], entry: int) -> bool:
    """Whether `pattern` matches entry's line (from the `\n` before it to its end)."""
    starts = snapshot.starts
    end = starts[entry + 1] - 1 if entry + 1 < len(starts) else len(snapshot.text) - 1
    return pattern.search(snapshot.text, starts[entry] - 1, end) is not None


_ESCAPED = re.compile(r"\\(.)")
_MAX_PASTED_PATH = 4096


def pasted_path(text: str) -> str | None:
    """The path a paste is, when it is the path of an image file by its name (quoted,
    `\\ `-escaped, a `file://` URL: as terminals paste a dragged file); None for any other
    paste. Looks at no file."""
    path = text.strip()
    if not path or len(path) > _MAX_PASTED_PATH or "\n" in path:
        return None
    if len(path) > 1 and path[0] == path[-1] and path[0] in "'\"":
        path = path[1:-1]
    elif path.startswith("file://"):
        url = urlsplit(path)
        path = unquote(url.path) if url.netloc in ("", "localhost") else ""
    else:
        path = _ESCAPED.sub(r"\1", path)
    return path if os.path.splitext(path)[1].lower() in SUFFIXES else None


def pasted_image(text: str, root: Path, hidden: Callable[[str], bool] = lambda path: False) -> str | None:
    """The workspace-relative path of the image file a pasted path names (`pasted_path`),
    or None: not such a path, not a regular file, outside the workspace, or one a deny rule
    on reading covers. Blocking (it looks at the file): call it from a thread."""
    path = pasted_path(text)
    if path is None:
        return None
    try:
        full = Path(os.path.expanduser(path))
        real = os.path.realpath(full if full.is_absolute() else root / full)
        relative = Path(real).relative_to(os.path.realpath(root)).as_posix()
        regular = os.path.isfile(real)
    except (ValueError, OSError):  # outside the workspace, a NUL byte, a loop of links
        return None
    return relative if regular and not hidden(real) else None


class FileIndex:
    """The files and folders of one workspace, for `@` completion."""

    def __init__(
        self,
        root: Path,
        *,
        hidden: Callable[[str], bool] = lambda path: False,
        lister: Callable[[Path], Listing] = list_workspace,
    ) -> None:
        """`hidden(absolute path)`: leave it out of results (a deny rule on reading covers it)."""
        self.root = root
        self.hidden = hidden
        self.on_rebuilt: Callable[[], None] | None = None
        """Called (from the building thread) each time a new listing is in place."""
        self._lister = lister
        self._snapshot: Snapshot | None = None
        self._building = False
        self._stale = False
        self._lock = threading.Lock()
        self._few: tuple[Snapshot, str, list[int]] | None = None
        """The last query that matched few entries, and those entries (`_few_matches`)."""
        self.error: str | None = None

    @property
    def ready(self) -> bool:
        """Whether a listing is in place (the first build has finished)."""
        return self._snapshot is not None

    @property
    def building(self) -> bool:
        return self._building

    @property
    def partial(self) -> bool:
        return self._snapshot is not None and self._snapshot.partial

    def notices(self) -> list[str]:
        """What the latest listing could not honour: ignore files skipped, one line each."""
        snapshot = self._snapshot
        if snapshot is None:
            return []
        return [f"{path}: ignore file not used: {why}" for path, why in snapshot.skipped.items()]

    def mark_stale(self) -> None:
        """Files may have changed (a turn ended, a command ran): rebuild at the next `refresh`."""
        self._stale = True

    def refresh(self, max_age: float = 0.0) -> bool:
        """Start a rebuild in the background if there is no listing, it is stale, or older
        than `max_age` seconds; whether one was started."""
        with self._lock:
            snapshot = self._snapshot
            fresh = snapshot is not None and not self._stale and time.monotonic() - snapshot.built < max_age
            if self._building or fresh:
                return False
            self._building, self._stale = True, False
        threading.Thread(target=self._build, name="todo-agent-file-index", daemon=True).start()
        return True

    def build_now(self) -> None:
        """Build in this thread (headless runs and tests)."""
        with self._lock:
            self._building, self._stale = True, False
        self._build()

    def _build(self) -> None:
        try:
            self._snapshot = Snapshot.of(self._lister(self.root))
            self.error = None
        except Exception as exc:  # a listing that fails keeps the old one; completion says why
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._building = False
        callback = self.on_rebuilt
        if callback is not None:
            callback()

    def pasted_image(self, text: str) -> str | None:
        """`pasted_image` in this workspace (blocking: call it from a thread)."""
        return pasted_image(text, self.root, self.hidden)

    def query(self, text: str, limit: int = RESULTS) -> list[Match] | None:
        """The best `limit` files and folders for `text`; None until the first listing is in."""
        snapshot = self._snapshot
        if snapshot is None:
            return None
        query = text.lower().removeprefix("./").lstrip("/")
        if "\n" in query:
            return []
        if not query:
            return self._matches(snapshot, range(len(snapshot.shown)), query, limit)
        tiers = _tiers(query)
        wanted = limit * 2  # room for what `hidden` leaves out
        few = self._few_matches(snapshot, query, tiers[-1])
        if few is not None:  # all of them are known: rank them here
            ranked = sorted(few, key=lambda entry: (self._tier(snapshot, tiers, entry), entry))
            return self._matches(snapshot, ranked, query, limit)
        picked: dict[int, None] = {}
        for tier in tiers:
            # The text is in rank order: each tier's first hits are its best.
            for found in tier.finditer(snapshot.text):
                picked.setdefault(_entry_at(snapshot, found.end() - 1))
                if len(picked) >= wanted:
                    break
            if len(picked) >= wanted:
                break
        return self._matches(snapshot, picked, query, limit)

    def _few_matches(self, snapshot: Snapshot, query: str, anywhere: re.Pattern[str]) -> list[int] | None:
        """Every entry `query` matches at all, when there are at most `FEW` (else None).

        One pass of the loosest tier finds them; the next keystroke, which can only match
        fewer, looks at those alone. Most queries past a few letters end here: one scan,
        or none, instead of one per tier."""
        last = self._few
        if last is not None and last[0] is snapshot and query.startswith(last[1]):
            found = [entry for entry in last[2] if _line_match(snapshot, anywhere, entry)]
        else:
            found = []
            for match in anywhere.finditer(snapshot.text):
                found.append(_entry_at(snapshot, match.end() - 1))
                if len(found) > FEW:
                    return None
        self._few = (snapshot, query, found)
        return found

    @staticmethod
    def _tier(snapshot: Snapshot, tiers: list[re.Pattern[str]], entry: int) -> int:
        return next((n for n, tier in enumerate(tiers) if _line_match(snapshot, tier, entry)), len(tiers))

    def _matches(self, snapshot: Snapshot, entries: Iterable[int], query: str, limit: int) -> list[Match]:
        found: list[Match] = []
        for entry in entries:
            path = snapshot.shown[entry]
            if self.hidden(str(self.root / path)):
                continue
            found.append(Match(path, path.endswith("/"), positions(path, query) if query else ()))
            if len(found) >= limit:
                break
        return found
