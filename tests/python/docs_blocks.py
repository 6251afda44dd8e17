"""The fenced blocks of README.md and docs/*.md, as test_docs.py runs them.

The convention (docs/architecture.md, "Tests"):

- Every fenced block names its language. ```sh (or ```bash) holds commands, run as one bash script
  (`set -e`: every command must succeed); ```console holds `$ COMMAND` lines, each followed by the
  output it prints; ```text is output or a picture and is not run; any other language (cpp,
  python, json, ...) is code that other tests build and run.
- An HTML comment right before the block says how it runs, e.g. `<!-- docs-test: gpu -->`:
  `skip (REASON)`: never run here (a cluster, minutes of time, PyPI); the reason is required.
  `gpu`: runs only where axon's GPU backend starts (skipped elsewhere with the reason).
  `root`: runs only as root (emulated nodes); a leading `sudo ` is dropped then.
  `server`: one command that serves until stopped: it must print its first line and keep
  running; it is then stopped with SIGTERM and must exit 0.
  `exit N`: (console) the commands exit with status N instead of 0.
  `output varies (REASON)`: (console) only the first and the last line of the shown output are
  compared; the others depend on the machine.
  Several go in one comment, separated by commas.
- Output is compared line by line: every shown line must be printed by the command, where any
  number matches any number and runs of blanks match runs of blanks (timings differ by machine).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The languages whose blocks are commands.
SHELL = ("sh", "bash")
CONSOLE = "console"

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<info>[^`\s]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<body>.*?)\s*-->\s*$")
_TERM = re.compile(r"\s*(?P<word>[a-z][a-z ]*?)\s*(?:\((?P<reason>[^()]*)\)|(?P<arg>\d+))?\s*(?:,|$)")
_WORDS = ("skip", "gpu", "root", "server", "exit", "output varies")


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    info: str
    body: list[str]
    markers: dict[str, str] = field(default_factory=dict)  # word -> reason or argument ("" if none)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def parse_markers(text: str) -> dict[str, str]:
    """`skip (needs a GPU), exit 2` -> {"skip": "needs a GPU", "exit": "2"}; ValueError when a
    term is not one of the known ones."""
    out: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        m = _TERM.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot read docs-test marker at {text[pos:]!r}")
        word = m.group("word").strip()
        if word not in _WORDS:
            raise ValueError(f"unknown docs-test marker {word!r} (known: {', '.join(_WORDS)})")
        out[word] = (m.group("reason") or m.group("arg") or "").strip()
        pos = m.end()
    return out


def blocks(path: Path) -> list[Block]:
    """Every fenced block of one markdown file, with the markers of the comments right before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent = len(m.group("indent"))
        end = i + 1
        while end < len(lines) and not re.match(r"^\s*```\s*$", lines[end]):
            end += 1
        if end == len(lines):
            raise ValueError(f"{path}:{i + 1}: the block is never closed")
        markers: dict[str, str] = {}
        j = i - 1
        while j >= 0 and _MARKER.match(lines[j]):
            try:
                markers.update(parse_markers(_MARKER.match(lines[j]).group("body")))
            except ValueError as exc:
                raise ValueError(f"{path}:{j + 1}: {exc}") from None
            j -= 1
        body = [x[indent:] if x[:indent].isspace() else x.lstrip() for x in lines[i + 1:end]]
        found.append(Block(path, i + 1, m.group("info"), body, markers))
        i = end + 1
    return found


def all_blocks() -> list[Block]:
    return [b for p in doc_files() for b in blocks(p)]


def console_steps(body: list[str]) -> list[tuple[str, list[str]]]:
    """A console block as (command, the output lines shown after it); `\\` continues a command."""
    steps: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(body):
        line = body[i]
        if not line.startswith("$ "):
            if not steps:
                raise ValueError(f"console output before any '$ ' command: {line!r}")
            steps[-1][1].append(line)
            i += 1
            continue
        cmd = line[2:]
        while cmd.endswith("\\") and i + 1 < len(body):
            i += 1
            cmd = cmd[:-1] + " " + body[i].strip()
        steps.append((cmd, []))
        i += 1
    return steps


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_ANY_NUMBER = r"(?:[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|-)"


def line_pattern(shown: str) -> re.Pattern:
    """A shown output line as a pattern: any number for each number (or '-', a value not
    measured), any run of blanks for each run of blanks."""
    parts = []
    pos = 0
    for m in _NUMBER.finditer(shown.strip()):
        parts.append(_literal(shown.strip()[pos:m.start()]))
        parts.append(_ANY_NUMBER)
        pos = m.end()
    parts.append(_literal(shown.strip()[pos:]))
    return re.compile("".join(parts))


def _literal(text: str) -> str:
    return r"\s+".join(re.escape(w) for w in re.split(r"\s+", text))


def missing_lines(shown: list[str], printed: str) -> list[str]:
    """The shown lines (blank ones aside) that no printed line matches."""
    out = [x.strip() for x in printed.splitlines()]
    return [s for s in shown if s.strip() and not any(line_pattern(s).fullmatch(o) for o in out)]
