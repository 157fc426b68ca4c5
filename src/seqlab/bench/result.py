"""What one benchmark returns: a table of rows plus notes, printable and storable as JSON."""
from __future__ import annotations

from dataclasses import dataclass, field

from seqlab.bench.harness import markdown_table


@dataclass
class BenchResult:
    """`rows` under `headers`; `data` holds the raw numbers (seconds, bytes) for JSON."""

    name: str
    description: str
    headers: list[str]
    rows: list[list] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)

    def markdown(self) -> str:
        text = f"**{self.name}** — {self.description}\n\n" + markdown_table(self.headers, self.rows)
        if self.notes:
            text += "\n\n" + "\n".join(f"- {n}" for n in self.notes)
        return text


def ms(seconds: float) -> str:
    return f"{1e3 * seconds:.1f}"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "n/a"
