"""Every ```python block of the chapter maps runs, in English and in Chinese.

docs/chapter7.md and docs/chapter7.zh.md are split into sections at their
``## `` headings. The blocks of one section run in order in one fresh
namespace (a later block may use what an earlier one built), in a temporary
working directory, under a time limit per block. A test id names the file
and the section, e.g. ``chapter7.zh.md::7.2.1``.

The two files must hold the same sections and the same code: only comments
(and blank lines) may differ, so the Chinese map never drifts from the
English one. Every ``seqlab experiment NAME`` / ``seqlab COMMAND`` the maps
cite must exist in the CLI's tables.

A block that needs a ``seqlab`` module or name that is missing fails with
that name in the message, so a broken export reads as such.
"""
from __future__ import annotations

import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from doc_code import code_only

DOCS = Path(__file__).resolve().parents[2] / "docs"
FILES = ("chapter7.md", "chapter7.zh.md")
BLOCK_SECONDS = 20          # one block; the slowest (MiniLM load + forward) takes a few seconds
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
HEADING = re.compile(r"^## +(.+?)\s*$", re.M)
SECTION_ID = re.compile(r"^(Q\d+|\d+(?:\.\d+)*)")


@dataclass
class Section:
    file: str
    id: str
    title: str
    blocks: list[tuple[int, str]] = field(default_factory=list)  # (first code line in the file, code)


def parse(name: str) -> list[Section]:
    """The file's ``## `` sections, each with its python blocks and their line numbers."""
    text = (DOCS / name).read_text(encoding="utf-8")
    heads = [(m.start(), m.group(1)) for m in HEADING.finditer(text)]
    sections: list[Section] = []
    for i, (start, title) in enumerate(heads):
        end = heads[i + 1][0] if i + 1 < len(heads) else len(text)
        m = SECTION_ID.match(title)
        sid = m.group(1) if m else re.sub(r"\W+", "-", title.lower()).strip("-")
        sec = Section(name, sid, title)
        for b in FENCE.finditer(text, start, end):
            sec.blocks.append((text.count("\n", 0, b.start(1)) + 1, b.group(1)))
        sections.append(sec)
    return sections


def _all_sections() -> list[Section]:
    out = []
    for name in FILES:
        if (DOCS / name).exists():
            out += [s for s in parse(name) if s.blocks]
    return out


class SnippetTimeout(Exception):
    pass


def _on_alarm(signum, frame):  # noqa: ARG001
    raise SnippetTimeout(f"a block ran longer than {BLOCK_SECONDS} s")


def _missing_seqlab_module(e: ImportError) -> str | None:
    name = getattr(e, "name", None) or ""
    return name if name == "seqlab" or name.startswith("seqlab.") else None


SECTIONS = _all_sections()


@pytest.mark.parametrize("section", SECTIONS, ids=[f"{s.file}::{s.id}" for s in SECTIONS])
def test_section_snippets_run(section: Section, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    ns: dict = {"__name__": "__chapter_map__"}
    old = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        for line, code in section.blocks:
            # pad so tracebacks show the line number inside the markdown file
            compiled = compile("\n" * (line - 1) + code, str(DOCS / section.file), "exec")
            t0 = time.perf_counter()
            signal.setitimer(signal.ITIMER_REAL, BLOCK_SECONDS)
            try:
                exec(compiled, ns)  # noqa: S102 - the docs' own snippets
            except ImportError as e:
                missing = _missing_seqlab_module(e)
                if missing is None:
                    raise
                pytest.fail(f"{section.file}:{line}: the snippet needs {missing}, which is missing ({e})")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            assert time.perf_counter() - t0 < BLOCK_SECONDS
    finally:
        signal.signal(signal.SIGALRM, old)


def test_both_maps_hold_the_same_sections_and_code():
    en, zh = parse(FILES[0]), parse(FILES[1])

    def ids(secs):  # numbered sections by number; an unnumbered one (a summary) only by its place
        return [s.id if SECTION_ID.match(s.id) else "-" for s in secs]

    assert ids(en) == ids(zh), "the two maps must have the same ## sections, in order"
    for a, b in zip(en, zh):
        assert len(a.blocks) == len(b.blocks), f"section {a.id}: {len(a.blocks)} python blocks vs {len(b.blocks)}"
        for (la, ca), (lb, cb) in zip(a.blocks, b.blocks):
            assert code_only(ca) == code_only(cb), \
                f"section {a.id}: {FILES[0]}:{la} and {FILES[1]}:{lb} differ beyond comments"


def test_snippets_need_neither_torch_nor_transformers():
    for sec in SECTIONS:
        for line, code in sec.blocks:
            assert not re.search(r"^\s*(import|from)\s+(torch|transformers)\b", code, re.M), \
                f"{sec.file}:{line}: the chapter maps promise snippets that run without PyTorch"


def test_cited_commands_exist():
    from seqlab.cli.main import COMMANDS
    from seqlab.experiments import EXPERIMENTS

    try:
        from seqlab.train.tasks import TASKS
    except ImportError:  # the trainer's task table is not built yet: check commands and experiments only
        TASKS = None
    for name in FILES:
        text = (DOCS / name).read_text(encoding="utf-8")
        shell = "\n".join(re.findall(r"^```bash[ \t]*\n(.*?)^```", text, re.S | re.M))
        cited = set(re.findall(r"`seqlab ([a-z][\w-]*)", text))            # inline: `seqlab attention`
        cited |= set(re.findall(r"^seqlab ([a-z][\w-]*)", shell, re.M))    # shell blocks
        assert {"experiment", "train", "attention"} <= cited, f"{name} misses commands: {cited}"
        for cmd in cited:
            assert cmd in COMMANDS, f"{name} cites `seqlab {cmd}`, which is not in seqlab.cli.main.COMMANDS"
        for exp in set(re.findall(r"seqlab experiment ([a-z][\w-]*)", text)):
            assert exp in EXPERIMENTS, f"{name} cites experiment {exp!r}, not in seqlab.experiments.EXPERIMENTS"
        for task in set(re.findall(r"seqlab train ([a-z][\w-]*)", text)) if TASKS is not None else ():
            assert task in TASKS, f"{name} cites `seqlab train {task}`, not in seqlab.train.tasks.TASKS"


# Q1 … Q6 and exercises 1 … 3: where docs/results.md records each measured answer
ANSWERS = {"gradient-flow", "long-range", "heads", "positional-ablation", "attention-cost",
           "sst2-transformer", "attention-viewer", "bert-vs-gpt"}


def test_measured_answers_point_to_results():
    anchors = {}
    for name in FILES:
        text = (DOCS / name).read_text(encoding="utf-8")
        anchors[name] = set(re.findall(r"\(results\.md#([\w-]+)\)", text))
        assert ANSWERS <= anchors[name], f"{name} has no measured-answer link for {sorted(ANSWERS - anchors[name])}"
    assert anchors[FILES[0]] == anchors[FILES[1]], "both maps must link the same results.md entries"

