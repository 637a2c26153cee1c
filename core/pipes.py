"""A read pipe of our own for a child process's output.

asyncio's `Process.wait()` also waits for the pipes asyncio made to close, which a
background job (`cmd &`) that holds them can put off for ever. A pipe we make and read
ourselves has no such tie: the process can be waited for, and its output read, apart.
"""

from __future__ import annotations

import asyncio
import os


async def open_read_pipe() -> tuple[asyncio.StreamReader, asyncio.ReadTransport, int]:
    """A new pipe: a reader of its read end, the transport feeding it (close it when done)
    and the write end's descriptor, to hand to the child (close it once the child has it)."""
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    reader = asyncio.StreamReader()
    try:
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", buffering=0)
        )
    except BaseException:
        os.close(write_fd)
        raise
    return reader, transport, write_fd
