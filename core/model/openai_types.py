"""Two packages of `openai` loaded when first used rather than when `openai` is imported.

`import openai` runs `openai/types/__init__.py`, which imports every one of the API's ~500
type modules (pydantic models for images, audio, evals, vector stores, the Responses API…),
and building a client pulls in `openai/types/responses/__init__.py`'s ~250 more. Chat
Completions needs a few dozen of them. The two `__init__`s are pure re-exports, so each
package is put in `sys.modules` first as a module that knows where its files are
(`__path__`: its submodules import as usual, each when something imports it) and runs the
real `__init__` into itself the first time an attribute is asked of it that a submodule
import has not set (`openai.types.ChatCompletion`, `from openai.types import *`).

Measured on openai 3.57 (benchmarks/README.md, "Memory"): ~10 MB less resident memory and
~0.2 s less CPU in the start-up thread. When `openai` is already imported, or its layout is
not the expected one, nothing is done: it then loads as it always did.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import types
from pathlib import Path
from typing import Any

DEFERRED = ("openai.types", "openai.types.responses")
_lock = threading.RLock()


def defer_openai_types() -> None:
    """Put the `DEFERRED` packages in `sys.modules` as modules that load on first use.
    Call it before `openai` is imported; a later call does nothing."""
    if "openai" in sys.modules:
        return
    try:
        spec = importlib.util.find_spec("openai")  # a top-level name: found, not imported
    except (ImportError, ValueError):
        return
    if spec is None or not spec.submodule_search_locations:
        return
    root = Path(next(iter(spec.submodule_search_locations)))
    for name in DEFERRED:
        folder = root.joinpath(*name.split(".")[1:])
        if name not in sys.modules and (folder / "__init__.py").is_file():
            sys.modules[name] = module = _deferred(name, folder)
            parent, _, child = name.rpartition(".")
            if parent in sys.modules:  # as importing it would: `openai.types.responses` is an attribute
                setattr(sys.modules[parent], child, module)


def _deferred(name: str, folder: Path) -> types.ModuleType:
    init = folder / "__init__.py"
    module = types.ModuleType(name)
    module.__spec__ = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(folder)])
    module.__path__ = [str(folder)]
    module.__file__ = str(init)
    module.__package__ = name
    if module.__spec__ is not None:
        module.__loader__ = module.__spec__.loader
    loaded = False

    def __getattr__(attribute: str) -> Any:  # the module-level hook of PEP 562
        nonlocal loaded
        with _lock:
            if not loaded:
                loaded = True
                code = compile(init.read_bytes(), str(init), "exec")
                exec(code, module.__dict__)  # the package's own __init__, as `import` would run it
        try:
            return module.__dict__[attribute]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}") from None

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    return module
