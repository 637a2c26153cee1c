"""Reading a shell command the way bash will run it, for the permission gate.

`parse_script(text)` returns every simple command the text can run, wherever it sits:
in a list or pipeline (`;`, `&&`, `||`, `|`, `&`, newlines), in `{ }`, `( )`, `if`, `while`,
`until`, `for`, `select`, `case`, a function body, after `!` or `time`, and inside
`$(…)`, backticks, `<(…)`, `>(…)` and unquoted here-documents. Words are decoded as bash
decodes them (quotes, `\\` escapes, ANSI-C `$'\\x72m'`, line continuations); a word whose
value depends on run-time expansion (`$x`, `*`, `{a,b}`) is marked as such, never guessed.

What this module cannot see is said, not hidden: `Script.unknown` lists why the text may
run code that is not among its commands (a syntax error, arithmetic evaluating a
variable, `${x@P}`, …). Per-program knowledge (wrappers such as `env` or `sudo`, `sh -c`,
`eval`, git's global options) lives in `core/permissions/command_forms.py`.

Pure and synchronous: no I/O, no subprocess, nothing from the UI.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# --- what a parse produces ---------------------------------------------------------


@dataclass(frozen=True)
class Word:
    """One shell word after quote removal."""

    value: str | None
    """The word's text, or None when it depends on an expansion (`$x`, `$(…)`, `*`, …)."""
    splits: bool = False
    """May become zero or several words (an unquoted expansion, a glob, brace expansion)."""
    prefix: str = ""
    """The literal text before the first expansion (all of it for a static word)."""
    quoted: bool = False
    """Some part was quoted or escaped (`'if'` is not the reserved word)."""

    def __str__(self) -> str:
        return self.value if self.value is not None else self.prefix + "…"


@dataclass(frozen=True)
class SimpleCommand:
    """A program and its arguments, as one line of a script runs it."""

    words: tuple[Word, ...]
    """Program and arguments; assignments and redirections are not among them."""
    assignments: tuple[Word, ...] = ()
    """The `NAME=value` words before the program, whole."""
    file_redirect: bool = False
    """Reads or writes a file through a redirection (`/dev/null` and `2>&1` do not count)."""

    @property
    def static_words(self) -> list[str] | None:
        """Every word's text, or None if any depends on an expansion."""
        values = [w.value for w in self.words]
        return None if None in values else [v for v in values if v is not None]


@dataclass(frozen=True)
class Script:
    commands: tuple[SimpleCommand, ...]
    """Every simple command, in the order bash starts them (substitutions before the command)."""
    text: str
    """The tokens joined by single spaces: what an exact rule compares."""
    substitution: bool = False
    """Runs `$(…)`, backticks or a process substitution."""
    file_redirect: bool = False
    """Some redirection reads or writes a file (not `/dev/null`, not `2>&1`)."""
    unknown: tuple[str, ...] = ()
    """Why the script may run code that is not among `commands` (empty: nothing hidden)."""
    posix: bool = False
    """Read as a POSIX shell (dash) rather than bash."""


class ShellSyntaxError(Exception):
    pass


def parse_script(text: str, *, posix: bool = False) -> Script:
    """Every simple command `text` runs, as far as a static reading can tell.

    `posix` reads it as a POSIX shell such as dash does (no `$'…'`, brace expansion,
    `<(…)`, `&>`, `[[`, …), which is how `/bin/sh` runs it on many systems.
    """
    state = _State(posix=posix)
    parser = _Parser(text, 0, state)
    try:
        parser.parse_program()
    except ShellSyntaxError as exc:
        state.unknown.append(f"it does not parse as shell ({exc})")
    except RecursionError:
        state.unknown.append("it is nested too deeply to read")
    return Script(
        tuple(state.commands),
        " ".join(state.tokens),
        state.substitution,
        state.file_redirect or any(c.file_redirect for c in state.commands),
        tuple(dict.fromkeys(state.unknown)),
        posix,
    )


# --- lexing -------------------------------------------------------------------------

_OPERATORS = (";;&", "&&", "||", ";;", ";&", "|&", ";", "|", "&", "(", ")", "\n")
_REDIRECTS = ("&>>", "<<<", "<<-", "&>", ">>", "<<", "<&", ">&", "<>", ">|", "<", ">")
_META = frozenset(" \t\n;&|<>()")
POSIX_RESERVED = frozenset(
    {"if", "then", "elif", "else", "fi", "do", "done", "while", "until", "for", "in", "case", "esac", "{", "}", "!"}
)
RESERVED = POSIX_RESERVED | {"select", "function", "time", "[[", "]]", "coproc"}
_BASH_ONLY_OPERATORS = frozenset({";;&", ";&", "|&", "&>>", "<<<", "&>"})
_ANSI_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r"}
_ANSI_ESCAPES |= {"t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL_PARAMS = frozenset("@*#?-$!0123456789")
_BRACE_EXPANSION = re.compile(r"\{[^{}\x00]*(?:,|\.\.)[^{}\x00]*\}")
_GLOB = re.compile(r"[*?]|\[[^\x00]+\]")
_ARITHMETIC_NUMBER = re.compile(r"\b(?:0[xX][0-9a-fA-F]+|\d+#[0-9a-zA-Z@_]+|\d+)\b")
_ARITHMETIC_OPERATORS = re.compile(r"[\s+\-*/%()<>=!&|^~?:,;]*")


@dataclass
class _State:
    """What one parse collects, shared by the parsers of nested substitutions."""

    posix: bool = False
    commands: list[SimpleCommand] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    substitution: bool = False
    file_redirect: bool = False
    """A compound command's redirection reads or writes a file."""
    unknown: list[str] = field(default_factory=list)


@dataclass
class _Token:
    kind: str
    """`word`, `op`, `redirect` or `eof`."""
    text: str
    """The operator, or the word's source text."""
    word: Word | None = None
    fd: str = ""
    start: int = 0


@dataclass
class _WordBuilder:
    """Pieces of one word as it is read."""

    value: list[str] = field(default_factory=list)
    pattern: list[str] = field(default_factory=list)
    """Unquoted text as written, quoted text as NULs: where globs and braces count."""
    dynamic: bool = False
    splits: bool = False
    quoted: bool = False
    prefix: str | None = None

    def literal(self, text: str, *, quoted: bool) -> None:
        self.value.append(text)
        self.pattern.append("\x00" * len(text) if quoted else text)
        self.quoted = self.quoted or quoted

    def expansion(self, *, quoted: bool) -> None:
        if self.prefix is None:
            self.prefix = "".join(self.value)
        self.dynamic = True
        self.splits = self.splits or not quoted
        self.pattern.append("\x00")

    def build(self, *, posix: bool = False) -> Word:
        pattern = "".join(self.pattern)
        braces = not posix and bool(_BRACE_EXPANSION.search(pattern))
        splits = self.splits or braces or bool(_GLOB.search(pattern))
        text = "".join(self.value)
        if self.dynamic or splits:
            return Word(None, splits, self.prefix if self.prefix is not None else _literal_head(text, pattern))
        return Word(text, False, text, self.quoted)


def _literal_head(text: str, pattern: str) -> str:
    match = _GLOB.search(pattern) or _BRACE_EXPANSION.search(pattern)
    return text[: match.start()] if match else text


class _Parser:
    """A recursive-descent reader of bash's grammar, over `source` from `pos`."""

    def __init__(self, source: str, pos: int, state: _State, *, depth: int = 0) -> None:
        if depth > 100:
            raise ShellSyntaxError("nested too deeply")
        self.source = source
        self.pos = pos
        self.state = state
        self.depth = depth
        self.heredocs: list[tuple[str, bool, bool]] = []
        """Pending here-documents: delimiter, strip tabs (`<<-`), body expands."""
        self._peeked: _Token | None = None
        posix = state.posix
        self._redirects = [r for r in _REDIRECTS if not (posix and r in _BASH_ONLY_OPERATORS)]
        self._operators = [o for o in _OPERATORS if not (posix and o in _BASH_ONLY_OPERATORS)]

    # --- tokens ---------------------------------------------------------------------

    def peek(self) -> _Token:
        if self._peeked is None:
            self._peeked = self._lex()
        return self._peeked

    def next(self) -> _Token:
        token = self.peek()
        self._peeked = None
        if token.kind != "eof" and self.depth == 0:
            self.state.tokens.append(token.text)
        return token

    def at_reserved(self, *words: str) -> bool:
        token = self.peek()
        return token.kind == "word" and _reserved(token, self.state.posix) in words

    def at_op(self, *ops: str) -> bool:
        token = self.peek()
        return token.kind == "op" and token.text in ops

    def expect_reserved(self, word: str) -> None:
        self.skip_newlines()
        if not self.at_reserved(word):
            raise ShellSyntaxError(f"expected '{word}', found {self._describe(self.peek())}")
        self.next()

    def expect_op(self, op: str) -> None:
        if not self.at_op(op):
            raise ShellSyntaxError(f"expected '{op.strip() or 'newline'}', found {self._describe(self.peek())}")
        self.next()

    @staticmethod
    def _describe(token: _Token) -> str:
        return "the end" if token.kind == "eof" else repr(token.text)

    def skip_newlines(self) -> None:
        while self.at_op("\n"):
            self.next()

    def _lex(self) -> _Token:
        self._skip_blanks()
        start = self.pos
        token = self._lex_token()
        token.start = start
        return token

    def _skip_blanks(self) -> None:
        """Blanks, line continuations and a comment (to the end of its line)."""
        source = self.source
        while True:
            while self.pos < len(source) and source[self.pos] in " \t":
                self.pos += 1
            if source.startswith("\\\n", self.pos):
                self.pos += 2
                continue
            if self.pos < len(source) and source[self.pos] == "#":
                end = source.find("\n", self.pos)
                self.pos = len(source) if end < 0 else end
            return

    def _lex_token(self) -> _Token:
        source = self.source
        if self.pos >= len(source):
            return _Token("eof", "")
        char = source[self.pos]
        if char in "<>" and source.startswith("(", self.pos + 1) and not self.state.posix:
            return self._word()  # a process substitution is a word
        if (char.isdigit() or char == "{") and (token := self._numbered_redirect()) is not None:
            return token
        for redirect in self._redirects:
            if source.startswith(redirect, self.pos):
                self.pos += len(redirect)
                return _Token("redirect", redirect)
        for op in self._operators:
            if source.startswith(op, self.pos):
                self.pos += len(op)
                if op == "\n":
                    self._read_heredocs()
                return _Token("op", op)
        return self._word()

    def _numbered_redirect(self) -> _Token | None:
        """`2>`, `10<&`, `{fd}>`: a file-descriptor number or name right before a redirection."""
        match = re.compile(r"\d+|\{[A-Za-z_][A-Za-z0-9_]*\}").match(self.source, self.pos)
        if match is None:
            return None
        after = match.end()
        redirect = next((r for r in _REDIRECTS if self.source.startswith(r, after)), None)
        if redirect is None or redirect.startswith("&"):
            return None
        self.pos = after + len(redirect)
        return _Token("redirect", match.group() + redirect, fd=match.group())

    # --- words ----------------------------------------------------------------------

    def _word(self) -> _Token:
        start = self.pos
        builder = _WordBuilder()
        source = self.source
        while self.pos < len(source):
            char = source[self.pos]
            if char in "<>" and source.startswith("(", self.pos + 1) and not self.state.posix:
                self._substitution(self.pos + 2, process=True)
                builder.expansion(quoted=False)
                continue
            if char in _META:
                if char == "(" and self._array_assignment(builder):
                    continue
                break
            self._word_piece(builder)
        if self.pos == start:
            raise ShellSyntaxError(f"unexpected {source[start]!r}")
        return _Token("word", source[start : self.pos], builder.build(posix=self.state.posix))

    def _word_piece(self, builder: _WordBuilder) -> None:
        source, char = self.source, self.source[self.pos]
        if char == "\\":
            if source.startswith("\\\n", self.pos):
                self.pos += 2
            else:
                builder.literal(source[self.pos + 1 : self.pos + 2], quoted=True)
                self.pos += 2
        elif char == "'":
            end = source.find("'", self.pos + 1)
            if end < 0:
                raise ShellSyntaxError("unterminated single quote")
            builder.literal(source[self.pos + 1 : end], quoted=True)
            self.pos = end + 1
        elif source.startswith("$'", self.pos) and not self.state.posix:
            builder.literal(self._ansi_c(), quoted=True)
        elif source.startswith('$"', self.pos) and not self.state.posix:
            self.pos += 1
            self._double_quoted(builder)
        elif char == '"':
            self._double_quoted(builder)
        elif char in "$`":
            self._dollar_or_backtick(builder, quoted=False)
        else:
            builder.literal(char, quoted=False)
            self.pos += 1

    def _array_assignment(self, builder: _WordBuilder) -> bool:
        """`a=(x y)`: the parenthesised list belongs to the word."""
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\+?=", "".join(builder.value)):
            return False
        self.pos += 1
        while True:
            while self.pos < len(self.source) and self.source[self.pos] in " \t\n":
                self.pos += 1
            if self.pos >= len(self.source):
                raise ShellSyntaxError("unterminated array assignment")
            if self.source[self.pos] == ")":
                self.pos += 1
                builder.expansion(quoted=True)
                return True
            if self.source[self.pos] in _META:
                raise ShellSyntaxError(f"unexpected {self.source[self.pos]!r} in an array assignment")
            while self.pos < len(self.source) and self.source[self.pos] not in _META:
                self._word_piece(_WordBuilder())

    def _ansi_c(self) -> str:
        """Decode `$'…'` from `self.pos` (at the `$`) as bash does."""
        source, i, out = self.source, self.pos + 2, []
        while i < len(source) and source[i] != "'":
            if source[i] != "\\" or i + 1 >= len(source):
                out.append(source[i])
                i += 1
                continue
            decoded, i = _ansi_escape(source, i + 1)
            out.append(decoded)
        if i >= len(source):
            raise ShellSyntaxError("unterminated $'…' string")
        self.pos = i + 1
        return "".join(out)

    def _double_quoted(self, builder: _WordBuilder) -> None:
        self.pos += 1  # the opening quote
        source = self.source
        builder.quoted = True
        while self.pos < len(source) and source[self.pos] != '"':
            char = source[self.pos]
            if char == "\\" and self.pos + 1 < len(source):
                following = source[self.pos + 1]
                if following == "\n":
                    pass
                elif following in '$`"\\':
                    builder.literal(following, quoted=True)
                else:
                    builder.literal("\\" + following, quoted=True)
                self.pos += 2
            elif char in "$`":
                self._dollar_or_backtick(builder, quoted=True)
            else:
                builder.literal(char, quoted=True)
                self.pos += 1
        if self.pos >= len(source):
            raise ShellSyntaxError("unterminated double quote")
        self.pos += 1

    def _dollar_or_backtick(self, builder: _WordBuilder, *, quoted: bool) -> None:
        source, pos = self.source, self.pos
        if source[pos] == "`":
            self._backticks()
        elif source.startswith("$((", pos) and self._arithmetic(pos + 3, "))"):
            pass
        elif source.startswith("$[", pos) and not self.state.posix:
            self._arithmetic(pos + 2, "]")
        elif source.startswith("$(", pos):
            self._substitution(pos + 2, process=False)
        elif source.startswith("${", pos):
            self._parameter(pos + 2)
        elif pos + 1 < len(source) and (source[pos + 1] in _SPECIAL_PARAMS or _NAME.match(source, pos + 1)):
            match = _NAME.match(source, pos + 1)
            self.pos = match.end() if match else pos + 2
        else:  # a `$` that starts nothing is a literal dollar
            builder.literal("$", quoted=quoted)
            self.pos += 1
            return
        builder.expansion(quoted=quoted)

    def _substitution(self, start: int, *, process: bool) -> None:
        """`$(…)`, `<(…)` or `>(…)` from just inside the parenthesis: parse the inner list."""
        self.state.substitution = True
        inner = _Parser(self.source, start, self.state, depth=self.depth + 1)
        inner.parse_list(closing=")")
        if not inner.at_op(")"):
            raise ShellSyntaxError("unterminated " + ("process substitution" if process else "$(…)"))
        inner.next()
        self.pos = inner.pos

    def _backticks(self) -> None:
        source, i, out = self.source, self.pos + 1, []
        while i < len(source) and source[i] != "`":
            if source[i] == "\\" and i + 1 < len(source) and source[i + 1] in "$`\\":
                out.append(source[i + 1])
                i += 2
            else:
                out.append(source[i])
                i += 1
        if i >= len(source):
            raise ShellSyntaxError("unterminated backquote")
        self.pos = i + 1
        self.state.substitution = True
        inner = _Parser("".join(out), 0, self.state, depth=self.depth + 1)
        inner.parse_program()

    def _arithmetic(self, start: int, closing: str) -> bool:
        """`$((…))` / `$[…]`: False when `$((` turns out to open a substitution of a subshell."""
        end = _matching(self.source, start, "(" if closing == "))" else "[", closing[0])
        if end < 0 or (closing == "))" and not self.source.startswith("))", end)):
            if closing == "))":
                return False
            raise ShellSyntaxError("unterminated $[…]")
        self.check_arithmetic(self.source[start:end])
        self.pos = end + len(closing)
        return True

    def check_arithmetic(self, expression: str) -> None:
        """Arithmetic evaluates variables' values as expressions, and `a[$(cmd)]` in such
        a value runs cmd: only numbers and operators can be read statically."""
        if "$(" in expression or "`" in expression:
            _Parser(expression, 0, self.state, depth=self.depth + 1)._scan_expansions()
        if not _ARITHMETIC_OPERATORS.fullmatch(_ARITHMETIC_NUMBER.sub(" ", expression)):
            self.state.unknown.append("arithmetic evaluates a value the gate cannot see")

    def _scan_expansions(self) -> None:
        """Parse the substitutions in text that is otherwise data (here-documents, arithmetic)."""
        builder = _WordBuilder()
        while self.pos < len(self.source):
            if self.source[self.pos] == "\\":
                self.pos += 2
            elif self.source[self.pos] in "$`":
                self._dollar_or_backtick(builder, quoted=True)
            else:
                self.pos += 1

    def _parameter(self, start: int) -> None:
        """`${…}`: find its end; substitutions inside still run."""
        end = _matching(self.source, start, "{", "}")
        if end < 0:
            raise ShellSyntaxError("unterminated ${…}")
        body = self.source[start:end]
        if body.startswith("!") and len(body) > 1 and body[1] not in "@*#":
            self.state.unknown.append("an indirect expansion ${!…} names a variable the gate cannot see")
        if re.search(r"@[PE]\b|@[PE]$", body):
            self.state.unknown.append("${…@P} expands a value as a prompt, which can run commands")
        subscript = re.match(r"[A-Za-z_][A-Za-z0-9_]*\[([^\]]*)\]", body)
        if subscript and subscript.group(1) not in ("@", "*"):
            self.check_arithmetic(subscript.group(1))
        inner = _Parser(self.source[start:end], 0, self.state, depth=self.depth + 1)
        inner._scan_expansions()
        self.pos = end + 1

    # --- here-documents -------------------------------------------------------------

    def add_heredoc(self, delimiter: Word, raw: str, *, strip_tabs: bool) -> None:
        expands = not any(q in raw for q in "'\"\\")
        self.heredocs.append((delimiter.value or raw, strip_tabs, expands))

    def _read_heredocs(self) -> None:
        pending, self.heredocs = self.heredocs, []
        for delimiter, strip_tabs, expands in pending:
            body_start = self.pos
            while self.pos < len(self.source):
                end = self.source.find("\n", self.pos)
                end = len(self.source) if end < 0 else end
                line = self.source[self.pos : end]
                self.pos = min(end + 1, len(self.source))
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    body = self.source[body_start : self.pos - len(line) - 1]
                    break
            else:
                body = self.source[body_start:]
            if self.depth == 0:
                self.state.tokens.append(body)
            if expands:
                _Parser(body, 0, self.state, depth=self.depth + 1)._scan_expansions()

    # --- grammar --------------------------------------------------------------------

    def parse_program(self) -> None:
        self.parse_list()
        token = self.peek()
        if token.kind != "eof":
            raise ShellSyntaxError(f"unexpected {token.text!r}")

    def parse_list(self, *, closing: str = "", stops: tuple[str, ...] = ()) -> None:
        """Commands until the end, an unmatched `closing` operator or a reserved word in `stops`."""
        while True:
            self.skip_newlines()
            token = self.peek()
            if token.kind == "eof" or (token.kind == "op" and token.text in (closing, ";;", ";&", ";;&")):
                return
            if token.kind == "word" and _reserved(token, self.state.posix) in stops:
                return
            self.parse_and_or()
            if self.at_op(";", "&", "\n"):
                self.next()
            elif not (self.peek().kind == "eof" or self.at_op(closing, ";;", ";&", ";;&") or self._at_stop(stops)):
                raise ShellSyntaxError(f"unexpected {self.peek().text!r}")

    def _at_stop(self, stops: tuple[str, ...]) -> bool:
        return bool(stops) and self.at_reserved(*stops)

    def parse_and_or(self) -> None:
        self.parse_pipeline()
        while self.at_op("&&", "||"):
            self.next()
            self.skip_newlines()
            self.parse_pipeline()

    def parse_pipeline(self) -> None:
        if self.at_reserved("time"):
            self.next()
            if self.peek().kind == "word" and self.peek().text == "-p":
                self.next()
        while self.at_reserved("!"):
            self.next()
        if self._at_end_of_command():  # `time` or `!` alone is a valid (empty) pipeline
            if self.state.tokens and self.state.tokens[-1] in ("&&", "||"):
                raise ShellSyntaxError(f"nothing after {self.state.tokens[-1]!r}")
            return
        self.parse_command()
        while self.at_op("|", "|&"):
            self.next()
            self.skip_newlines()
            self.parse_command()

    def _at_end_of_command(self) -> bool:
        token = self.peek()
        return token.kind == "eof" or (token.kind == "op" and token.text in (";", "&", "\n", ")", ";;"))

    def parse_command(self) -> None:
        token = self.peek()
        if token.kind == "op" and token.text == "(":
            self._subshell_or_arithmetic(token)
        else:
            compound = _COMPOUND.get(_reserved(token, self.state.posix) or "")
            if compound is None:
                self.parse_simple()
                return
            compound(self)
        self._trailing_redirects()

    def _trailing_redirects(self) -> None:
        """`{ …; } > out`, `while …; done < in`: redirections of a compound command."""
        while self.peek().kind == "redirect":
            parts = _CommandParts()
            self.parse_redirect(self.next(), parts)
            self.state.file_redirect = self.state.file_redirect or parts.file_redirect

    def _subshell_or_arithmetic(self, token: _Token) -> None:
        if self.source.startswith("((", token.start) and not self.state.posix:
            end = _matching(self.source, token.start + 2, "(", ")")
            if end >= 0 and self.source.startswith("))", end):
                self._peeked = None
                self.check_arithmetic(self.source[token.start + 2 : end])
                self.pos = end + 2
                if self.depth == 0:
                    self.state.tokens.append(self.source[token.start : self.pos])
                return
        self.next()
        self.parse_list(closing=")")
        self.expect_op(")")

    def parse_brace_group(self) -> None:
        self.next()
        self.parse_list(stops=("}",))
        self.expect_reserved("}")

    def parse_if(self) -> None:
        self.next()
        self.parse_list(stops=("then",))
        self.expect_reserved("then")
        self.parse_list(stops=("elif", "else", "fi"))
        while self.at_reserved("elif"):
            self.next()
            self.parse_list(stops=("then",))
            self.expect_reserved("then")
            self.parse_list(stops=("elif", "else", "fi"))
        if self.at_reserved("else"):
            self.next()
            self.parse_list(stops=("fi",))
        self.expect_reserved("fi")

    def parse_while(self) -> None:
        self.next()
        self.parse_list(stops=("do",))
        self._loop_body()

    def _loop_body(self) -> None:
        self.skip_newlines()
        if self.at_reserved("{"):
            self.parse_brace_group()
            return
        self.expect_reserved("do")
        self.parse_list(stops=("done",))
        self.expect_reserved("done")

    def parse_for(self) -> None:
        self.next()
        token = self.peek()
        if token.kind == "op" and token.text == "(" and self.source.startswith("((", token.start):
            self._subshell_or_arithmetic(token)
        else:
            name = self.next()
            if name.kind != "word":
                raise ShellSyntaxError(f"for needs a variable name, found {self._describe(name)}")
            self.skip_newlines()
            if self.at_reserved("in"):
                self.next()
                while self.peek().kind == "word":
                    self.next()
        if self.at_op(";"):
            self.next()
        self._loop_body()

    def parse_case(self) -> None:
        self.next()
        if self.next().kind != "word":
            raise ShellSyntaxError("case needs a word")
        self.expect_reserved("in")
        while True:
            self.skip_newlines()
            if self.at_reserved("esac"):
                self.next()
                return
            if self.at_op("("):
                self.next()
            self._case_patterns()
            self.parse_list(stops=("esac",))
            if self.at_op(";;", ";&", ";;&"):
                self.next()
            elif not self.at_reserved("esac"):
                raise ShellSyntaxError(f"expected ';;' or 'esac', found {self._describe(self.peek())}")

    def _case_patterns(self) -> None:
        while True:
            if self.next().kind != "word":
                raise ShellSyntaxError("a case pattern must be a word")
            if self.at_op(")"):
                self.next()
                return
            self.expect_op("|")

    def parse_conditional(self) -> None:
        """`[[ … ]]`: operators inside are plain words; arithmetic comparisons evaluate."""
        self.next()
        operands: list[_Token] = []
        while not (self.peek().kind == "word" and self.peek().text == "]]"):
            token = self.next()
            if token.kind == "eof":
                raise ShellSyntaxError("unterminated [[")
            operands.append(token)
        self.next()
        for index, token in enumerate(operands):
            if token.text in _ARITHMETIC_TESTS:
                for side in operands[max(index - 1, 0) : index] + operands[index + 1 : index + 2]:
                    self.check_arithmetic(side.word.value if side.word and side.word.value is not None else "$")

    def parse_function(self) -> None:
        self.next()
        if self.next().kind != "word":
            raise ShellSyntaxError("function needs a name")
        if self.at_op("("):
            self.next()
            self.expect_op(")")
        self.skip_newlines()
        self.parse_command()

    def parse_coproc(self) -> None:
        self.next()
        self.parse_command()

    def parse_simple(self) -> None:
        parts = _CommandParts()
        while True:
            token = self.peek()
            if token.kind == "redirect":
                parts.redirects += 1
                self.parse_redirect(self.next(), parts)
            elif token.kind == "word" and token.word is not None:
                self.next()
                if not parts.words and _ASSIGNMENT.match(token.text):
                    parts.assignments.append(token.word)
                else:
                    parts.words.append(token.word)
            elif token.kind == "op" and token.text == "(" and len(parts.words) == 1 and not parts.assignments:
                self._function_definition()
                return
            else:
                break
        if not (parts.words or parts.assignments or parts.redirects):
            raise ShellSyntaxError(f"unexpected {self._describe(token)}")
        self.state.commands.append(SimpleCommand(tuple(parts.words), tuple(parts.assignments), parts.file_redirect))

    def _function_definition(self) -> None:
        """`name() body`: the body's commands count as if they ran (the name is called later)."""
        self.next()
        self.expect_op(")")
        self.skip_newlines()
        self.parse_command()

    def parse_redirect(self, token: _Token, command: _CommandParts | None) -> None:
        """The target of a redirection (already consumed)."""
        target = self.peek()
        if target.kind != "word" or target.word is None:
            raise ShellSyntaxError(f"a redirection {token.text!r} without a target")
        self.next()
        operator = token.text[len(token.fd) :]
        if operator in ("<<", "<<-"):
            self.add_heredoc(target.word, target.text, strip_tabs=operator == "<<-")
            return
        harmless = operator in (">&", "<&") and (target.word.value or "").rstrip("-").isdigit()
        harmless = harmless or (target.word.value in ("-", "/dev/null") and operator != "<<<")
        if operator == "<<<":
            harmless = True  # a here-string is data on stdin, no file
        if command is not None and not harmless:
            command.file_redirect = True


@dataclass
class _CommandParts:
    words: list[Word] = field(default_factory=list)
    assignments: list[Word] = field(default_factory=list)
    file_redirect: bool = False
    redirects: int = 0


_COMPOUND = {
    "{": _Parser.parse_brace_group,
    "if": _Parser.parse_if,
    "while": _Parser.parse_while,
    "until": _Parser.parse_while,
    "for": _Parser.parse_for,
    "select": _Parser.parse_for,
    "case": _Parser.parse_case,
    "[[": _Parser.parse_conditional,
    "function": _Parser.parse_function,
    "coproc": _Parser.parse_coproc,
}
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?\+?=")


def _reserved(token: _Token, posix: bool) -> str | None:
    word = token.word
    if word is None or word.value is None or word.quoted:
        return None
    return word.value if word.value in (POSIX_RESERVED if posix else RESERVED) else None


def _matching(source: str, start: int, open_char: str, close_char: str) -> int:
    """Index of the `close_char` that closes an already-open `open_char`, skipping quotes
    and nested brackets; -1 if there is none."""
    depth, i = 1, start
    while i < len(source):
        char = source[i]
        if char == "\\":
            i += 2
            continue
        if char == "'":
            i = source.find("'", i + 1)
            if i < 0:
                return -1
        elif char == '"':
            i = _matching_quote(source, i + 1)
            if i < 0:
                return -1
        elif char == open_char:
            depth += 1
        elif char == close_char:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _matching_quote(source: str, start: int) -> int:
    i = start
    while i < len(source):
        if source[i] == "\\":
            i += 2
            continue
        if source[i] == '"':
            return i
        i += 1
    return -1


def _ansi_escape(source: str, i: int) -> tuple[str, int]:
    """Decode the escape after a backslash at `i - 1` in `$'…'`; return it and the next index."""
    char = source[i]
    if char in _ANSI_ESCAPES:
        return _ANSI_ESCAPES[char], i + 1
    for prefix, digits, base, width in (
        ("x", "0-9a-fA-F", 16, 2),
        ("u", "0-9a-fA-F", 16, 4),
        ("U", "0-9a-fA-F", 16, 8),
    ):
        if char == prefix:
            match = re.compile(f"[{digits}]{{1,{width}}}").match(source, i + 1)
            if match is None:
                return "\\" + char, i + 1
            return _chr(int(match.group(), base)), match.end()
    if char in "01234567":
        match = re.compile("[0-7]{1,3}").match(source, i)
        assert match is not None
        return _chr(int(match.group(), 8) & 0xFF), match.end()
    if char == "c" and i + 1 < len(source):
        return chr(ord(source[i + 1].upper()) ^ 0x40), i + 2
    return "\\" + char, i + 1


def _chr(code: int) -> str:
    try:
        return chr(code)
    except (ValueError, OverflowError):
        return "\ufffd"
