"""Just enough POSIX shell syntax to see what a command line would run.

This is no shell: nothing is expanded or run. A script is split into
pipelines of simple commands; each word keeps its text with quotes removed and
the inner text of every ``$(...)``, backtick, ``<(...)`` and ``>(...)`` in it,
so the caller can read those as scripts too. Here-documents and here-strings
are kept, because ``bash <<EOF`` runs its body. ``(...)`` and ``{ ...; }``
become groups; keywords such as ``then`` and ``do`` are dropped, so the
commands inside ``if`` and loops are seen like any other.

shlex is not used: it knows neither substitutions nor operators glued to
words (``a;b``, ``x>/dev/sda``). Parsing never fails: an unbalanced quote or
bracket runs to the end of the text, so a malformed script is read as
containing more rather than less.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_OPERATORS = (
    "&&", "||", ";;", "|&", "&>>", "&>", ">>", ">|", ">&", "<<<", "<<-", "<<", "<>", "<&",
    "|", "&", ";", "(", ")", "<", ">",
)  # fmt: skip
# An operator, after the file descriptor a redirect may name ("2>&1"); longest first.
_OPERATOR = re.compile(r"(?:\d+(?=[<>]))?(" + "|".join(map(re.escape, _OPERATORS)) + ")")
REDIRECTS = frozenset({"&>>", "&>", ">>", ">|", ">&", "<<<", "<<-", "<<", "<>", "<&", "<", ">"})
OUTPUT_REDIRECTS = frozenset({"&>>", "&>", ">>", ">|", ">", "<>"})
_WORD_END = frozenset(" \t\r\n;&|()<>")
_KEYWORDS = frozenset({"if", "then", "elif", "else", "fi", "do", "done", "while", "until", "!"})
_ANSI_ESCAPES = {
    "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b",
    "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip
_ANSI = re.compile(
    r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)", re.S
)


@dataclass(slots=True)
class Word:
    text: str
    subs: list[str] = field(default_factory=list)  # inner scripts of substitutions
    proc_sub: bool = False  # the word is <(...) or >(...): a path to a command's output


@dataclass(slots=True)
class Redirect:
    op: str
    target: Word
    body: str | None = None  # a here-document's text


@dataclass(slots=True)
class Simple:
    words: list[Word]
    redirects: list[Redirect]
    start: int
    end: int


@dataclass(slots=True)
class Group:
    body: list[Pipeline]
    subshell: bool  # (...) runs apart; { ...; } runs in the current shell
    start: int
    end: int


@dataclass(slots=True)
class Pipeline:
    stages: list[Simple | Group]
    start: int
    end: int


@dataclass(slots=True)
class _Token:
    op: str | None  # None for a word
    word: Word | None
    start: int
    end: int
    body: str | None = None


def unescape(body: str) -> str:
    """The text of a $'...' string (or a printf format): backslash escapes decoded."""

    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] in "xuU":
            code = int(e[1:], 16)
            return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
        if e[0].isdigit():
            return chr(int(e, 8) & 0xFF)
        if e[0] == "c" and len(e) == 2:
            return chr(ord(e[1]) & 0x1F)
        return _ANSI_ESCAPES.get(e, "\\" + e)

    return _ANSI.sub(one, body)


def _quote_end(s: str, i: int, quote: str) -> int:
    """Index of the closing quote for a quote opened before i (backslash escapes), or len(s)."""
    while i < len(s):
        if s[i] == "\\" and quote != "'":
            i += 2
            continue
        if s[i] == quote:
            return i
        i += 1
    return len(s)


def _double_end(s: str, i: int) -> int:
    """Index after the closing double quote, skipping substitutions inside."""
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        elif s.startswith("$(", i):
            i = _paren_end(s, i + 2) + 1
        elif c == "`":
            i = _quote_end(s, i + 1, "`") + 1
        else:
            i += 1
    return n


def _paren_end(s: str, i: int) -> int:
    """Index of the ")" closing a "(" opened before i, or len(s)."""
    depth, n = 1, len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            i = _quote_end(s, i + 1, "'") + 1
            continue
        if c == '"':
            i = _double_end(s, i + 1)
            continue
        if c == "`":
            i = _quote_end(s, i + 1, "`") + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return n


class _Lexer:
    def __init__(self, src: str) -> None:
        self.s = src
        self.i = 0
        self.tokens: list[_Token] = []
        self.heredocs: list[tuple[_Token, bool]] = []  # delimiter token, strip leading tabs

    def run(self) -> list[_Token]:
        s, n = self.s, len(self.s)
        expect_delimiter: bool | None = None
        while self.i < n:
            c = s[self.i]
            if c in " \t\r":
                self.i += 1
            elif s.startswith("\\\n", self.i):
                self.i += 2
            elif c == "\n":
                self.tokens.append(_Token(";", None, self.i, self.i + 1))
                self.i += 1
                self._read_heredocs()
            elif c == "#":
                end = s.find("\n", self.i)
                self.i = n if end < 0 else end
            elif s.startswith(("<(", ">("), self.i) or not self._operator():
                start = self.i
                token = _Token(None, self._word(), start, self.i)
                self.tokens.append(token)
                if expect_delimiter is not None:
                    self.heredocs.append((token, expect_delimiter))
                expect_delimiter = None
                continue
            else:
                op = self.tokens[-1].op
                expect_delimiter = op == "<<-" if op in ("<<", "<<-") else None
        return self.tokens

    def _operator(self) -> bool:
        m = _OPERATOR.match(self.s, self.i)
        if m is None:
            return False
        self.tokens.append(_Token(m.group(1), None, self.i, m.end()))
        self.i = m.end()
        return True

    def _read_heredocs(self) -> None:
        s = self.s
        for token, strip_tabs in self.heredocs:
            delimiter = token.word.text if token.word else ""
            lines: list[str] = []
            while self.i < len(s):
                end = s.find("\n", self.i)
                end = len(s) if end < 0 else end
                line = s[self.i : end]
                self.i = min(end + 1, len(s))
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
                lines.append(line)
            token.body = "\n".join(lines)
        self.heredocs.clear()

    def _substitution(self, text: list[str], subs: list[str]) -> None:
        """Consume a $(...), ${...} or `...` starting at self.i."""
        s, i = self.s, self.i
        if s.startswith("$(", i):
            end = _paren_end(s, i + 2)
            subs.append(s[i + 2 : end])
        elif s.startswith("${", i):
            end = s.find("}", i)
            end = len(s) if end < 0 else end
        else:
            end = _quote_end(s, i + 1, "`")
            subs.append(s[i + 1 : end])
        text.append(s[i : end + 1])
        self.i = min(end + 1, len(s))

    def _word(self) -> Word:
        s, n = self.s, len(self.s)
        if s.startswith(("<(", ">("), self.i):
            start, end = self.i, _paren_end(s, self.i + 2)
            self.i = min(end + 1, n)
            return Word(s[start : self.i], [s[start + 2 : end]], proc_sub=True)
        text: list[str] = []
        subs: list[str] = []
        while self.i < n:
            c = s[self.i]
            if c in _WORD_END:
                break
            if c == "\\":
                if s.startswith("\\\n", self.i):
                    self.i += 2
                else:
                    text.append(s[self.i + 1 : self.i + 2])
                    self.i = min(self.i + 2, n)
            elif c == "'":
                end = _quote_end(s, self.i + 1, "'")
                text.append(s[self.i + 1 : end])
                self.i = min(end + 1, n)
            elif s.startswith("$'", self.i):
                end = _quote_end(s, self.i + 2, "'")
                text.append(unescape(s[self.i + 2 : end]))
                self.i = min(end + 1, n)
            elif c == '"':
                self._double(text, subs)
            elif s.startswith(("$(", "${"), self.i) or c == "`":
                self._substitution(text, subs)
            else:
                text.append(c)
                self.i += 1
        return Word("".join(text), subs)

    def _double(self, text: list[str], subs: list[str]) -> None:
        s, n = self.s, len(self.s)
        self.i += 1
        while self.i < n:
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < n and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] != "\n":
                    text.append(s[self.i + 1])
                self.i += 2
            elif s.startswith(("$(", "${"), self.i) or c == "`":
                self._substitution(text, subs)
            else:
                text.append(c)
                self.i += 1


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.k = 0

    def script(self, close: str | None = None) -> list[Pipeline]:
        pipelines: list[Pipeline] = []
        stages: list[Simple | Group] = []
        words: list[Word] = []
        redirects: list[Redirect] = []
        span: list[int] = []

        def end_simple() -> None:
            if words or redirects:
                stages.append(Simple(list(words), list(redirects), span[0], span[-1]))
            words.clear()
            redirects.clear()
            span.clear()

        def end_pipeline() -> None:
            end_simple()
            if stages:
                pipelines.append(Pipeline(list(stages), stages[0].start, stages[-1].end))
            stages.clear()

        while self.k < len(self.tokens):
            token = self.tokens[self.k]
            self.k += 1
            op, word = token.op, token.word
            if word is not None:
                at_start = not words and not redirects
                if at_start and word.text in _KEYWORDS and not word.subs:
                    continue
                if at_start and word.text == "}" and close == "}":
                    end_pipeline()
                    return pipelines
                if at_start and word.text == "{":
                    group = self.script("}")
                    stages.append(Group(group, False, token.start, self._last_end(token)))
                    continue
                words.append(word)
                span.extend((token.start, token.end))
            elif op in REDIRECTS:
                target, body, end = Word(""), None, token.end
                if self.k < len(self.tokens) and self.tokens[self.k].word is not None:
                    next_token = self.tokens[self.k]
                    target, body, end = next_token.word or target, next_token.body, next_token.end
                    self.k += 1
                redirects.append(Redirect(op or "", target, body))
                span.extend((token.start, end))
            elif op == "(":
                defines = len(words) == 1 and self.k < len(self.tokens)
                if defines and self.tokens[self.k].op == ")":
                    # "name()": a function definition; its body follows as a group.
                    words.clear()
                    redirects.clear()
                    span.clear()
                    self.k += 1
                    continue
                end_simple()  # "a b (c)" is a syntax error; reading on sees more
                group = self.script(")")
                stages.append(Group(group, True, token.start, self._last_end(token)))
            elif op == ")":
                if close == ")":
                    end_pipeline()
                    return pipelines
            elif op in ("|", "|&"):
                end_simple()
            else:
                end_pipeline()
        end_pipeline()
        return pipelines

    def _last_end(self, fallback: _Token) -> int:
        return self.tokens[self.k - 1].end if self.k > 0 else fallback.end


def parse(src: str) -> list[Pipeline]:
    return _Parser(_Lexer(src).run()).script()
