"""File tools: Read, Write and Edit, plus the diff the approval prompt shows for an edit.

Files are read as bytes. Read decodes with replacement characters (it only shows text);
Edit decodes with `surrogateescape` so bytes that are not UTF-8 survive a round trip
untouched. All disk work runs in a worker thread so a big file never blocks the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import fcntl
import os
import re
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..atomic import atomic_write, temp_beside
from ..context import ToolContext
from .base import Tool, ToolError, load_description, object_schema, optional_int, require_str

_PKG = "todo_agent.core.tools"
DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
BINARY_SAMPLE = 8192
_SNIPPET_CONTEXT = 4
_SNIPPET_MAX_LINES = 30
_PREVIEW_MAX_LINES = 2000
# difflib is quadratic at worst: past these sizes (either side) the preview is a summary.
_PREVIEW_INPUT_MAX_CHARS = 2_000_000
_PREVIEW_INPUT_MAX_LINES = 20_000
_PATH_HINT = " (absolute, or relative to the workspace)"


# --- helpers shared with the search tools -------------------------------------------


def path_arg(args: dict[str, Any], ctx: ToolContext, key: str = "file_path") -> Path:
    value = require_str(args, key)
    if "\0" in value:
        raise ToolError(f"parameter '{key}' contains a NUL byte; give a real path")
    return ctx.resolve(value)


def display_path(path: Path, ctx: ToolContext) -> str:
    """Workspace-relative when inside it (short for the model and the UI), else absolute."""
    real = (Path(os.path.realpath(path)), Path(os.path.realpath(ctx.workspace)))
    for candidate, root in ((path, ctx.workspace), real):
        try:
            return candidate.relative_to(root).as_posix()
        except ValueError:
            continue
    return str(path)


def short_path(path: object, limit: int = 60) -> str:
    """Keep the end of a long path: the file name matters more than its parents."""
    text = " ".join(str(path).split())
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def looks_binary(sample: bytes) -> bool:
    """NUL bytes, or mostly not UTF-8: not something to show or edit as text.

    A few stray bytes (a Latin-1 é in a comment) do not make a file binary; they are
    shown as U+FFFD by Read and kept byte-for-byte by Edit.
    """
    if b"\0" in sample:
        return True
    undecodable = sample.decode("utf-8", errors="replace").count("\ufffd")
    return undecodable * 10 > len(sample) * 3


def _regular_file_exists(path: Path, shown: str) -> bool:
    """False when missing; ToolError for directories and devices, FIFOs, sockets."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise ToolError(f"Cannot access {shown}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(mode):
        raise ToolError(f"{shown} is a directory, not a file (use Glob, or Bash `ls`, to list it)")
    if not stat.S_ISREG(mode):
        # Opening a FIFO would block forever; a device could be endless.
        raise ToolError(f"{shown} is not a regular file")
    return True


def printable(text: str) -> str:
    """Lone surrogates (undecodable bytes kept for round-tripping, odd file names) become
    U+FFFD, so the text can be shown and sent as JSON."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def bounded_lines(f: IO[bytes], limit: int) -> Iterator[bytes]:
    """Each line of `f` (with its newline), cut to its first `limit` bytes: a line of any
    length (a 1 GB minified file) costs at most `limit` bytes of memory."""
    while raw := f.readline(limit):
        if len(raw) == limit and not raw.endswith(b"\n"):
            while (rest := f.readline(limit)) and not rest.endswith(b"\n"):
                pass  # the rest of an over-long line is skipped, never held
        yield raw


_LINE_BYTES = MAX_LINE_CHARS * 4 + 8
"""Enough bytes for MAX_LINE_CHARS characters and the cut note to show."""


def _numbered(number: int, line: str) -> str:
    if len(line) > MAX_LINE_CHARS:
        line = line[:MAX_LINE_CHARS] + f" … [line cut at {MAX_LINE_CHARS} chars]"
    return f"{number:6d}\t{line}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


# --- Read ---------------------------------------------------------------------------


def _read_window(path: Path, shown: str, offset: int, limit: int) -> tuple[list[str], int]:
    """Numbered lines offset..offset+limit-1 and the file's total line count.

    Streams the file a bounded piece at a time: memory depends on neither the file's
    size nor its longest line.
    """
    if not _regular_file_exists(path, shown):
        raise ToolError(f"File does not exist: {shown}")
    picked: list[str] = []
    total = 0
    try:
        with path.open("rb") as f:
            if looks_binary(f.read(BINARY_SAMPLE)):
                raise ToolError(f"{shown} looks like a binary file; Read only shows text")
            f.seek(0)
            for total, raw in enumerate(bounded_lines(f, _LINE_BYTES), 1):
                if offset <= total < offset + limit:
                    text = raw.decode("utf-8", errors="replace").removesuffix("\n").removesuffix("\r")
                    picked.append(_numbered(total, text))
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from exc
    return picked, total


async def _read(args: dict[str, Any], ctx: ToolContext) -> str:
    path = path_arg(args, ctx)
    shown = display_path(path, ctx)
    # Models trained on 0-based APIs send offset=0; treat it as the first line.
    offset = max(optional_int(args, "offset") or 1, 1)
    limit = optional_int(args, "limit", minimum=1) or DEFAULT_LIMIT
    lines, total = await asyncio.to_thread(_read_window, path, shown, offset, limit)
    if total == 0:
        return f"{shown} is empty (0 lines)."
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {shown} (file has {_plural(total, 'line')})")
    text = "\n".join(lines)
    next_line = offset + len(lines)
    if next_line <= total:
        text += f"\n… (file has {total} lines; use offset={next_line} to read more)"
    return text


READ = Tool(
    name="Read",
    description=load_description(_PKG, "read.md"),
    parameters=object_schema(
        {
            "file_path": {"type": "string", "description": f"Path of the file to read{_PATH_HINT}."},
            "offset": {"type": "integer", "description": "1-based line number to start reading from."},
            "limit": {"type": "integer", "description": f"Number of lines to read (default {DEFAULT_LIMIT})."},
        },
        required=["file_path"],
    ),
    run=_read,
    kind="read",
    summarize=lambda args: short_path(args.get("file_path", "")),
)


# --- Write --------------------------------------------------------------------------


def _line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _umask() -> int:
    try:  # Linux shows it without changing it; os.umask() sets it for every thread
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _replace_file(path: Path, shown: str, data: bytes) -> None:
    """Give the file at `path` the content `data`, all at once.

    Writing in place truncates first, so a full disk or a quota would leave the file cut
    short. Instead the data goes to a temporary file beside it, which then replaces the
    original in one rename; on any failure the original is untouched.
    """
    # Through a symlink to its target, so the link stays a link.
    target = Path(os.path.realpath(path))
    try:
        mode: int | None = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}") from exc
    # The rename needs only a writable directory; keep refusing a file we may not write.
    if mode is not None and not os.access(target, os.W_OK):
        raise ToolError(f"Cannot write {shown}: Permission denied")
    if mode is not None and (target.stat().st_nlink > 1 or not os.access(target.parent, os.W_OK)):
        # A rename would cut a hard link, and is impossible in a read-only directory:
        # here the file is written in place, as any editor would.
        _write_in_place(target, shown, data)
        return
    temp = temp_beside(target, hidden=True)
    with _recorded(temp):
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            # The new file gets the original's mode, or for a new file the mode a plain create would have.
            atomic_write(target, data, mode=mode if mode is not None else 0o666 & ~_umask(), temp=temp)
        except OSError as exc:
            unchanged = "the file was left unchanged" if mode is not None else "nothing was written"
            raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}; {unchanged}") from exc


def _write_in_place(target: Path, shown: str, data: bytes) -> None:
    """Overwrite the file's content where it is (a hard link must stay one file). When that
    fails half way (a full disk), the old content goes back into the blocks it had."""
    try:
        old = target.read_bytes()
        with target.open("r+b", buffering=0) as f:
            try:
                _overwrite(f, data)
            except OSError as exc:
                try:
                    _overwrite(f, old)
                    unchanged = "the file was left unchanged"
                except OSError as again:
                    unchanged = f"putting the old content back failed too ({again.strerror or again})"
                raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}; {unchanged}") from exc
    except OSError as exc:
        raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}") from exc


def _overwrite(f: IO[bytes], data: bytes) -> None:
    f.seek(0)
    view = memoryview(data)
    while view:
        written = f.write(view)
        view = view[written or 0 :]
    f.truncate(len(data))
    os.fsync(f.fileno())


# --- temporary files a killed process left behind -----------------------------------

_TEMP_NAME = re.compile(r"\..+\.[0-9a-f]{12}\.tmp")


def _pending_dir() -> Path:
    from ..session import data_root

    return data_root() / "pending-writes"


@contextlib.contextmanager
def _recorded(temp: Path) -> Iterator[None]:
    """Note `temp` in the data dir while it exists, under a lock this process holds: after a
    kill -9, the next run finds the note unlocked and removes the file (`sweep_unfinished_writes`).
    Best effort: a data dir that cannot be written never stops a Write."""
    fd = None
    entry = _pending_dir() / f"{os.getpid()}-{secrets.token_hex(6)}"
    try:
        entry.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(entry, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, os.fsencode(temp))
    except OSError:
        pass
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)
        if fd is not None:
            with contextlib.suppress(OSError):
                entry.unlink()
            os.close(fd)


def sweep_unfinished_writes() -> None:
    """Remove the temporary files of writes whose process died (their note is unlocked)."""
    try:
        entries = list(_pending_dir().iterdir())
    except OSError:
        return
    for entry in entries:
        with contextlib.suppress(OSError):
            _sweep_one(entry)


def _sweep_one(entry: Path) -> None:
    fd = os.open(entry, os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # its writer is alive
        temp = Path(os.fsdecode(entry.read_bytes()))
        if _TEMP_NAME.fullmatch(temp.name):  # only ever a file this module named
            temp.unlink(missing_ok=True)
        entry.unlink()
    finally:
        os.close(fd)


def _write_file(path: Path, shown: str, content: str) -> bool:
    """Write `content` exactly (no newline translation); True if the file existed."""
    existed = _regular_file_exists(path, shown)
    try:
        data = content.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise ToolError("content contains characters that cannot be written as UTF-8") from exc
    _replace_file(path, shown, data)
    return existed


async def _write(args: dict[str, Any], ctx: ToolContext) -> str:
    path = path_arg(args, ctx)
    content = require_str(args, "content", allow_empty=True)
    shown = display_path(path, ctx)
    existed = await asyncio.to_thread(_write_file, path, shown, content)
    how = "overwrote the existing file" if existed else "created a new file"
    return f"Wrote {_plural(_line_count(content), 'line')} to {shown} ({how})."


# --- Edit ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Change:
    before: str
    """The file's text before the edit (empty for a new file)."""
    after: str
    """The text to write, in the file's own line endings."""
    replacements: int
    snippet: str
    """Numbered lines around the first change, for the model to check its work."""
    created: bool = False


def _read_for_edit(path: Path, shown: str) -> str | None:
    """The file's text, exactly recoverable with `surrogateescape`; None if missing."""
    if not _regular_file_exists(path, shown):
        return None
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from exc
    if looks_binary(data[:BINARY_SAMPLE]):
        raise ToolError(f"{shown} looks like a binary file; Edit only changes text files")
    return data.decode("utf-8", "surrogateescape")


def _snippet(text: str, first_line: int, inserted: str) -> str:
    """Lines of `text` around the `inserted` text that starts at `first_line`."""
    lines = text.removesuffix("\n").split("\n")
    # A trailing newline ends the inserted text; it does not start another changed line.
    last_changed = first_line + inserted.removesuffix("\n").count("\n")
    start = max(1, first_line - _SNIPPET_CONTEXT)
    end = min(len(lines), last_changed + _SNIPPET_CONTEXT, start + _SNIPPET_MAX_LINES - 1)
    return "\n".join(_numbered(n, printable(lines[n - 1])) for n in range(start, end + 1))


def _not_found(old: str, shown: str) -> str:
    hint = ""
    if re.match(r"\s*\d+\t", old):
        hint = " Do not include the line-number prefix that Read adds."
    return (
        f"old_string was not found in {shown}; it must match the file exactly, including whitespace "
        f"and indentation (Read the file again to check).{hint}"
    )


def _replace(text: str, old: str, new: str, replace_all: bool, shown: str) -> _Change:
    # Read shows lines without "\r", so the model writes "\n". A file that is all CRLF is
    # edited in LF form and converted back; every other file is matched as it is.
    crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
    work = text
    if crlf:
        work, old, new = (s.replace("\r\n", "\n") for s in (text, old, new))
        if old == new:
            raise ToolError("old_string and new_string differ only in line endings; nothing to change")
    count = work.count(old)
    if count == 0:
        raise ToolError(_not_found(old, shown))
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {shown}; add more surrounding lines to make it unique, "
            "or set replace_all to true to change every occurrence"
        )
    first_line = work.count("\n", 0, work.find(old)) + 1
    after = work.replace(old, new) if replace_all else work.replace(old, new, 1)
    snippet = _snippet(after, first_line, new)
    if crlf:
        after = after.replace("\n", "\r\n")
    return _Change(before=text, after=after, replacements=count if replace_all else 1, snippet=snippet)


def _optional_bool(args: dict[str, Any], key: str) -> bool:
    value = args.get(key)
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    # Some models send booleans as strings.
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ToolError(f"parameter '{key}' must be true or false")


def _plan_edit(args: dict[str, Any], ctx: ToolContext) -> tuple[Path, str, _Change]:
    """Everything Edit would do, without writing: shared by the tool and the preview."""
    path = path_arg(args, ctx)
    shown = display_path(path, ctx)
    old = require_str(args, "old_string", allow_empty=True)
    new = require_str(args, "new_string", allow_empty=True)
    replace_all = _optional_bool(args, "replace_all")
    if old == new:
        raise ToolError("old_string and new_string are identical; nothing to change")
    before = _read_for_edit(path, shown)
    if not old:
        if before:
            raise ToolError(
                f"old_string is empty but {shown} already has content; give the text to replace, "
                "or use Write to replace the whole file"
            )
        # An empty old_string creates the file (or fills an empty one).
        return path, shown, _Change("", new, 1, _snippet(new, 1, new), created=before is None)
    if before is None:
        raise ToolError(f"File does not exist: {shown} (to create it, use Write or an empty old_string)")
    return path, shown, _replace(before, old, new, replace_all, shown)


def _edit_file(args: dict[str, Any], ctx: ToolContext) -> str:
    path, shown, change = _plan_edit(args, ctx)
    try:
        data = change.after.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise ToolError("new_string contains characters that cannot be written as UTF-8") from exc
    _replace_file(path, shown, data)
    if change.created:
        return f"Created {shown} ({_plural(_line_count(change.after), 'line')}). Snippet:\n{change.snippet}"
    count = _plural(change.replacements, "replacement")
    return f"The file {shown} has been updated ({count}). Snippet:\n{change.snippet}"


async def _edit(args: dict[str, Any], ctx: ToolContext) -> str:
    # Read, replace and write in one thread call so nothing interleaves with another edit.
    return await asyncio.to_thread(_edit_file, args, ctx)


# --- approval preview ---------------------------------------------------------------


def _split_keep_newlines(text: str) -> list[str]:
    # Not str.splitlines(): that also splits on \f, \x1c, \u2028 and friends.
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def _too_big_to_diff(text: str) -> bool:
    return len(text) > _PREVIEW_INPUT_MAX_CHARS or text.count("\n") > _PREVIEW_INPUT_MAX_LINES


def _too_big_note(before_lines: int, after: str) -> str:
    sizes = f"{_plural(before_lines, 'line')} → {_plural(_line_count(after), 'line')}"
    return f"(file too large to preview: {sizes})"


def _unified_diff(before: str, after: str, shown: str) -> str:
    if before == after:
        return "(no changes)"
    if _too_big_to_diff(before) or _too_big_to_diff(after):
        return _too_big_note(_line_count(before), after)
    # Inside the workspace git-style a/ b/ prefixes; outside, the absolute path itself.
    old_label, new_label = (shown, shown) if Path(shown).is_absolute() else (f"a/{shown}", f"b/{shown}")
    out: list[str] = []
    diff = difflib.unified_diff(
        _split_keep_newlines(before), _split_keep_newlines(after), fromfile=old_label, tofile=new_label, n=3
    )
    for count, raw in enumerate(diff):
        if count == _PREVIEW_MAX_LINES:
            out.append("… (diff cut here)\n")
            break
        line = raw.replace("\r\n", "\n")
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return printable("".join(out).rstrip("\n"))


def _count_lines(path: Path) -> int:
    lines, last = 0, b"\n"
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")


def preview_edit(args: dict[str, Any], ctx: ToolContext) -> str:
    """The unified diff Edit (args with `old_string`) or Write (args with `content`) would
    make, for the approval prompt; a short note instead when it cannot be computed.

    Never raises. Reads the file synchronously: callers on the event loop may want
    `asyncio.to_thread`. Past a size limit it gives a one-line summary, not a diff.
    """
    try:
        if "old_string" in args:
            _, shown, change = _plan_edit(args, ctx)
            return _unified_diff(change.before, change.after, shown)
        path = path_arg(args, ctx)
        shown = display_path(path, ctx)
        content = require_str(args, "content", allow_empty=True)
        if _regular_file_exists(path, shown) and path.stat().st_size > _PREVIEW_INPUT_MAX_CHARS:
            # Write never reads the old file; do not load a huge one just to say it is huge.
            return _too_big_note(_count_lines(path), content)
        return _unified_diff(_read_for_edit(path, shown) or "", content, shown)
    except ToolError as exc:
        return f"(cannot preview: {exc})"
    except Exception as exc:  # the approval prompt must open even if the preview breaks
        return f"(cannot preview: {type(exc).__name__}: {exc})"


# --- declarations (after preview_edit, which both edit tools show for approval) -----

WRITE = Tool(
    name="Write",
    description=load_description(_PKG, "write.md"),
    parameters=object_schema(
        {
            "file_path": {"type": "string", "description": f"Path of the file to write{_PATH_HINT}."},
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        required=["file_path", "content"],
    ),
    run=_write,
    kind="edit",
    summarize=lambda args: short_path(args.get("file_path", "")),
    preview=preview_edit,
)


EDIT = Tool(
    name="Edit",
    description=load_description(_PKG, "edit.md"),
    parameters=object_schema(
        {
            "file_path": {"type": "string", "description": f"Path of the file to edit{_PATH_HINT}."},
            "old_string": {"type": "string", "description": "The exact text to replace."},
            "new_string": {"type": "string", "description": "The replacement text (must differ from old_string)."},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."},
        },
        required=["file_path", "old_string", "new_string"],
    ),
    run=_edit,
    kind="edit",
    summarize=lambda args: short_path(args.get("file_path", "")),
    preview=preview_edit,
)


TOOLS = [READ, WRITE, EDIT]
