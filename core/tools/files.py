"""File tools: Read, Write and Edit, and the diff the approval prompt shows for an edit.

Files are read as bytes. Read decodes with replacement characters (it only shows text);
an image file (PNG, JPEG, GIF, WebP by its bytes) it shows to a model that takes images
as an image after the batch's results, and otherwise says what it is (`images.py`). Edit
decodes with `surrogateescape` so bytes that are not UTF-8 survive a round trip untouched.
All disk work runs in a worker thread so a big file never blocks the loop.
The helpers they share with the search tools are in `fs.py`, the diff in `previews.py`.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pydantic import Field

from .arguments import AnyText, Arguments, Count, Flag, PathText
from .base import declare, parse_as
from .channel import FileChannel
from .context import ToolContext
from .fs import (
    BINARY_SAMPLE,
    LINE_BYTES,
    bounded_lines,
    display_path,
    line_count,
    looks_binary,
    numbered,
    open_regular,
    plural,
    printable,
    regular_file_exists,
    replace_file,
    short_path,
)
from .images import ImageFile, read_image
from .ledger import FileLedger, write_lock
from .previews import PREVIEW_INPUT_MAX_CHARS, count_lines, too_big_note, unified_diff
from .results import ToolError

DEFAULT_LIMIT = 2000
_SNIPPET_CONTEXT = 4
_SNIPPET_MAX_LINES = 30
_PATH_HINT = " (absolute, or relative to the workspace)"
_Window = tuple[list[str], int]


# --- Read ---------------------------------------------------------------------------


def _opened(path: Path, shown: str, channel: FileChannel | None) -> IO[bytes] | None:
    """The file to read: the channel's copy when it has one (an editor's buffer), else the
    regular file on disk (`open_regular`); None when there is neither."""
    data = channel.read(path) if channel is not None and channel.reads else None
    return io.BytesIO(data) if data is not None else open_regular(path, shown)


def _put(path: Path, shown: str, data: bytes, channel: FileChannel | None) -> None:
    """Give the file `data`: through the channel when it takes it, else on disk at once."""
    if channel is None or not channel.writes or not channel.write(path, data):
        replace_file(path, shown, data)


def read_window(
    path: Path,
    shown: str,
    offset: int,
    limit: int,
    ledger: FileLedger | None = None,
    *,
    channel: FileChannel | None = None,
) -> tuple[list[str], int]:
    """Numbered lines offset..offset+limit-1 and the file's total line count; `ledger`
    learns the content read (its hash).

    Streams the file a bounded piece at a time: memory depends on neither the file's
    size nor its longest line.
    """
    opened = _opened(path, shown, channel)
    if opened is None:
        raise ToolError(f"File does not exist: {shown}")
    picked: list[str] = []
    total = 0
    try:
        with opened as f:
            if looks_binary(f.read(BINARY_SAMPLE)):
                raise ToolError(f"{shown} looks like a binary file; Read only shows text")
            f.seek(0)
            for total, raw in enumerate(bounded_lines(f, LINE_BYTES), 1):
                if offset <= total < offset + limit:
                    text = raw.decode("utf-8", errors="replace").removesuffix("\n").removesuffix("\r")
                    picked.append(numbered(total, text))
            if ledger is not None:  # over-long lines were skipped above: the hash reads it again
                f.seek(0)
                digest = hashlib.sha256()
                while block := f.read(1 << 16):
                    digest.update(block)
                ledger.saw_digest(path, digest.hexdigest())
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from exc
    return picked, total


class ReadArgs(Arguments):
    file_path: PathText = Field(description=f"Path of the file to read{_PATH_HINT}.")
    offset: Count = Field(None, ge=0, description="1-based line number to start reading from.")
    limit: Count = Field(None, ge=1, description=f"Number of lines to read (default {DEFAULT_LIMIT}).")


def _read_file(
    path: Path, shown: str, offset: int, limit: int, ledger: FileLedger | None, *, channel: FileChannel | None = None
) -> ImageFile | _Window:
    """An image file as one (its bytes say so), any other as `read_window` reads it."""
    image = read_image(path, shown, named=False, ledger=ledger)
    return image if image is not None else read_window(path, shown, offset, limit, ledger, channel=channel)


def _image_result(image: ImageFile, shown: str, ctx: ToolContext) -> str:
    """What Read says of an image file; the image itself follows the results when it may."""
    what = image.description()
    if ctx.images is None:
        return f"{what}: this model does not take images"
    if too_big := image.too_big():
        return f"{what}: not shown ({too_big})"
    ctx.images.append(image.pending("Read", ctx.call_id))
    return f"{what}: {shown} is shown to you as an image in a message after the results"


async def _read(args: ReadArgs, ctx: ToolContext) -> str:
    path = ctx.resolve(args.file_path)
    shown = display_path(path, ctx)
    # Models trained on 0-based APIs send offset=0; treat it as the first line.
    offset = max(args.offset or 1, 1)
    limit = args.limit or DEFAULT_LIMIT
    read = await asyncio.to_thread(lambda: _read_file(path, shown, offset, limit, ctx.files, channel=ctx.channel))
    if isinstance(read, ImageFile):
        return _image_result(read, shown, ctx)
    lines, total = read
    if total == 0:
        return f"{shown} is empty (0 lines)."
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {shown} (file has {plural(total, 'line')})")
    text = "\n".join(lines)
    next_line = offset + len(lines)
    if next_line <= total:
        text += f"\n… (file has {total} lines; use offset={next_line} to read more)"
    return text


# --- Write --------------------------------------------------------------------------


def _write_file(
    path: Path, shown: str, content: str, ledger: FileLedger | None = None, channel: FileChannel | None = None
) -> bool:
    """Write `content` exactly (no newline translation); True if the file existed."""
    try:
        data = content.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise ToolError("content contains characters that cannot be written as UTF-8") from exc
    with write_lock(path):
        existed = regular_file_exists(path, shown)
        if ledger is not None:
            ledger.check(path, shown, lambda: _current(path, channel) if existed else None)
        _put(path, shown, data, channel)
        if ledger is not None:
            ledger.wrote(path, data)
    return existed


def _current(path: Path, channel: FileChannel | None = None) -> bytes | None:
    if channel is not None and channel.reads and (data := channel.read(path)) is not None:
        return data
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ToolError(f"Cannot read {path}: {exc.strerror or exc}") from exc


class WriteArgs(Arguments):
    file_path: PathText = Field(description=f"Path of the file to write{_PATH_HINT}.")
    content: AnyText = Field(description="The complete new content of the file.")


async def _write(args: WriteArgs, ctx: ToolContext) -> str:
    path = ctx.resolve(args.file_path)
    shown = display_path(path, ctx)
    existed = await asyncio.to_thread(_write_file, path, shown, args.content, ctx.files, ctx.channel)
    how = "overwrote the existing file" if existed else "created a new file"
    return f"Wrote {plural(line_count(args.content), 'line')} to {shown} ({how})."


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


def _read_for_edit(path: Path, shown: str, channel: FileChannel | None = None) -> str | None:
    """The file's text, exactly recoverable with `surrogateescape`; None if missing."""
    opened = _opened(path, shown, channel)
    if opened is None:
        return None
    try:
        with opened as f:
            data = f.read()
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
    return "\n".join(numbered(n, printable(lines[n - 1])) for n in range(start, end + 1))


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


class EditArgs(Arguments):
    file_path: PathText = Field(description=f"Path of the file to edit{_PATH_HINT}.")
    old_string: AnyText = Field(description="The exact text to replace.")
    new_string: AnyText = Field(description="The replacement text (must differ from old_string).")
    replace_all: Flag = Field(False, description="Replace every occurrence (default false).")


def _plan_edit(args: EditArgs, ctx: ToolContext) -> tuple[Path, str, _Change]:
    """Everything Edit would do, without writing: shared by the tool and the preview."""
    path = ctx.resolve(args.file_path)
    shown = display_path(path, ctx)
    old, new, replace_all = args.old_string, args.new_string, args.replace_all
    if old == new:
        raise ToolError("old_string and new_string are identical; nothing to change")
    before = _read_for_edit(path, shown, ctx.channel)
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


def _edit_file(args: EditArgs, ctx: ToolContext) -> str:
    target = ctx.resolve(args.file_path)
    with write_lock(target):
        if ctx.files is not None:  # before the edit is worked out: a stale file is the news, not a missing string
            ctx.files.check(target, display_path(target, ctx), lambda: _current(target, ctx.channel))
        path, shown, change = _plan_edit(args, ctx)
        try:
            data = change.after.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError as exc:
            raise ToolError("new_string contains characters that cannot be written as UTF-8") from exc
        _put(path, shown, data, ctx.channel)
        if ctx.files is not None:
            ctx.files.wrote(path, data)
    if change.created:
        return f"Created {shown} ({plural(line_count(change.after), 'line')}). Snippet:\n{change.snippet}"
    count = plural(change.replacements, "replacement")
    return f"The file {shown} has been updated ({count}). Snippet:\n{change.snippet}"


async def _edit(args: EditArgs, ctx: ToolContext) -> str:
    # Read, replace and write in one thread call so nothing interleaves with another edit.
    return await asyncio.to_thread(_edit_file, args, ctx)


# --- approval preview ---------------------------------------------------------------


def preview_edit(args: dict[str, Any], ctx: ToolContext) -> str:
    """The unified diff Edit (args with `old_string`) or Write (args with `content`) would
    make, for the approval prompt; a short note instead when it cannot be computed.

    Never raises. Reads the file synchronously: callers on the event loop may want
    `asyncio.to_thread`. Past a size limit it gives a one-line summary, not a diff.
    """
    try:
        if "old_string" in args:
            _, shown, change = _plan_edit(parse_as(EditArgs, args), ctx)
            return unified_diff(change.before, change.after, shown)
        write = parse_as(WriteArgs, args)
        path = ctx.resolve(write.file_path)
        shown = display_path(path, ctx)
        content = write.content
        if regular_file_exists(path, shown) and path.stat().st_size > PREVIEW_INPUT_MAX_CHARS:
            # Write never reads the old file; do not load a huge one just to say it is huge.
            return too_big_note(count_lines(path), content)
        return unified_diff(_read_for_edit(path, shown, ctx.channel) or "", content, shown)
    except ToolError as exc:
        return f"(cannot preview: {exc})"
    except Exception as exc:  # the approval prompt must open even if the preview breaks
        return f"(cannot preview: {type(exc).__name__}: {exc})"


# --- declarations (after preview_edit, which both edit tools show for approval) -----


def _summary(args: dict[str, Any]) -> str:
    return short_path(args.get("file_path", ""))


READ = declare("Read", ReadArgs, _read, kind="read", paths={"file_path": "read"}, summarize=_summary)
WRITE = declare(
    "Write", WriteArgs, _write, kind="edit", paths={"file_path": "write"}, summarize=_summary, preview=preview_edit
)
# Edit's result shows lines of the file: a deny rule on reading it covers Edit too.
EDIT = declare(
    "Edit", EditArgs, _edit, kind="edit", paths={"file_path": "edit"}, summarize=_summary, preview=preview_edit
)

TOOLS = [READ, WRITE, EDIT]
