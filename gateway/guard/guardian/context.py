"""What the command checks share: findings, what the walk knows so far, and one command's view."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.guard.guardian import network
from gateway.guard.guardian.assessment import RiskLevel
from gateway.guard.guardian.authorization import Action
from gateway.guard.guardian.paths import Cwd, Place, credential, locate
from gateway.guard.guardian.shell import Word


@dataclass(frozen=True, slots=True)
class Finding:
    risk: RiskLevel
    rule: str  # what the call does, in fixed words: never text taken from the call
    action: Action


@dataclass(slots=True)
class Scope:
    """What the walk over one call's commands knows so far, and what it found."""

    workspace: tuple[Place, ...]
    allowed_hosts: tuple[str, ...]
    cwd: Cwd = ""
    variables: dict[str, str] = field(default_factory=dict)
    branch: str | None = None  # the branch an earlier `git checkout` left
    downloaded: set[str] = field(default_factory=set)  # files an earlier command downloaded to
    findings: list[Finding] = field(default_factory=list)
    depth: int = 0

    def add(self, risk: RiskLevel, rule: str, action: Action) -> None:
        self.findings.append(Finding(risk, rule, action))

    def send(
        self,
        hosts: Sequence[str | None],
        secret: str | None,
        files: Sequence[str],
        commands: tuple[str, ...],
    ) -> None:
        """Rate local data (holding ``secret``, a credential label, if known) sent to ``hosts``."""
        outside = [h for h in hosts if h is None or not network.host_allowed(h, self.allowed_hosts)]
        named = tuple(dict.fromkeys(h for h in outside if h))
        action = Action("send", commands, paths=tuple(files), hosts=named)
        if not outside:
            if secret:
                self.add("high", f"reads {secret}", Action("read", commands, paths=tuple(files)))
        elif secret:
            self.add("critical", f"sends {secret} to a host outside the allowed list", action)
        elif named:
            self.add("high", "sends local data to a host outside the allowed list", action)
        else:
            self.add("medium", "sends local data to a host named only by a variable", action)


@dataclass(slots=True)
class Flow:
    """What a command does with data, for the checks that look across a pipeline."""

    downloads: tuple[str | None, ...] | None = None  # hosts whose response it prints
    secret: str | None = None  # a credential whose contents its output may carry
    runs_stdin: bool = False  # runs its standard input as code
    sends_stdin: tuple[str | None, ...] | None = None  # hosts it sends its standard input to
    prints: str | None = None  # literal text it prints (echo, printf)
    decodes: bool = False  # it decodes its input (base64 -d): what it prints is hidden

    def merge(self, other: Flow) -> None:
        if other.downloads is not None:
            self.downloads = (self.downloads or ()) + other.downloads
        self.secret = self.secret or other.secret
        self.decodes = self.decodes or other.decodes


@dataclass(slots=True)
class Command:
    """One simple command, its wrappers (sudo, env, ...) already taken off."""

    scope: Scope
    words: list[Word]
    commands: tuple[str, ...]  # its text, its pipeline's, its script's, and the enclosing ones
    flow: Flow
    sub_flows: dict[int, Flow]  # by id() of a word: what its substitutions print
    stdin_path: str | None = None
    stdin_text: str | None = None
    via_xargs: bool = False

    @property
    def args(self) -> list[str]:
        return [w.text for w in self.words]

    @property
    def name(self) -> str:
        return command_name(self.words[0].text) if self.words else ""

    def place(self, text: str) -> Place:
        return locate(text, self.scope.cwd)

    def secret(self, text: str) -> str | None:
        return credential(self.place(text))

    def downloads(self, index: int) -> tuple[str | None, ...] | None:
        """The hosts whose download word ``index`` carries, through a substitution."""
        if index >= len(self.words):
            return None
        flow = self.sub_flows.get(id(self.words[index]))
        return None if flow is None else flow.downloads

    def add(self, risk: RiskLevel, rule: str, action: Action) -> None:
        self.scope.add(risk, rule, action)


def command_name(text: str) -> str:
    # Case is folded: macOS file systems run RM as rm.
    name = text.rsplit("/", 1)[-1].lower()
    return name.removesuffix(".exe")
