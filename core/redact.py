"""Keeping credentials that ride in a URL out of messages.

`--base-url http://user:pass@host/v1?api-key=…` is how some gateways take their key;
whatever todo-agent says about that URL shows `http://user:***@host/v1?api-key=***`.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

MASK = "***"


def mask_url(url: str) -> str:
    """`url` with its password (or a lone user name, often a token) and query values masked."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return MASK  # not even a URL: show nothing of it
    netloc = parts.netloc
    if parts.username is not None or parts.password is not None:
        user = MASK if parts.password is None else parts.username or ""
        password = "" if parts.password is None else ":" + MASK
        netloc = f"{user}{password}@{host}{port}"
    query = "&".join(f"{quote(key, safe='')}={MASK}" for key, _ in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_secrets(url: str) -> list[str]:
    """The credential strings in `url`, as written and decoded, longest first."""
    try:
        parts = urlsplit(url)
        found: list[str] = [parts.password or "", (parts.username or "") if parts.password is None else ""]
    except ValueError:
        return [url] if url else []
    found += [value for _, value in parse_qsl(parts.query, keep_blank_values=True)]
    found += [quote(value, safe="") for value in found] + [unquote(value) for value in found]
    return sorted({value for value in found if len(value) >= 3}, key=len, reverse=True)


def redact(text: str, url: str | None) -> str:
    """`text` with every credential of `url` replaced by `***`."""
    if not url:
        return text
    for secret in url_secrets(url):
        text = text.replace(secret, MASK)
    return text
