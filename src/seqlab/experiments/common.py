"""What the experiments share: declared settings checked in one place, and progress lines on stderr.

Each experiment module declares ``SETTINGS``, a tuple of `Setting` (name, the
full run's default, the ``--quick`` default, type, allowed range), and may
define ``check(settings)`` for rules that tie settings together (raise
`ConfigError`). `settings_for(module, args)` resolves ``args.options`` (the
``--set KEY=VALUE`` strings) against them: an unknown key, a value of the
wrong type or out of range is a one-line `ConfigError` that names the key
(`seqlab experiment` turns it into a usage error, exit 2). Values are
converted by the declared type with `seqlab.train.config.coerce`, as
``seqlab train --set`` does; nothing is evaluated.

`Progress` prints one line per phase (what is trained, with its budget) and,
on a terminal or with ``--progress``, tqdm bars over the loops; bars and lines
go to stderr and never touch a random generator, so results are unchanged.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from seqlab.errors import ConfigError


class _Same:
    def __repr__(self) -> str:
        return "SAME"


SAME: Any = _Same()  # a Setting's quick default that equals the full run's


@dataclass(frozen=True)
class Setting:
    """One ``--set`` key of an experiment.

    `default` / `quick`: the value of a full / ``--quick`` run; either may be a
    callable of the settings resolved before it (a derived default, described
    by `show`). `type`: int, float, bool or str (None: the default's type);
    with `item`, the value is a comma-separated list of `item` values
    ("5,20" -> [5, 20]). `min` / `max` bound numbers (each list item), open
    bounds exclusive; `choices` lists the allowed strings. `convert` replaces
    the type conversion (it raises ConfigError). `aliases` are other accepted
    names. `show` / `show_quick` describe a derived default in the help.
    """

    name: str
    default: Any
    quick: Any = SAME
    type: type | None = None
    item: type | None = None
    min: float | None = None
    max: float | None = None
    open_min: bool = False
    open_max: bool = False
    choices: tuple[str, ...] | None = None
    help: str = ""
    aliases: tuple[str, ...] = ()
    show: str | None = None
    show_quick: str | None = None
    convert: Callable[[Any], Any] | None = None

    @property
    def kind(self) -> type:
        if self.item is not None:
            return list
        if self.type is not None:
            return self.type
        if self.default is None or callable(self.default):
            raise TypeError(f"setting {self.name!r} needs an explicit type")
        return type(self.default)

    @property
    def bound(self) -> Any:
        """min / max as a `seqlab.train.config.Bound`."""
        from seqlab.train.config import Bound

        return Bound(self.min, self.max, self.open_min, self.open_max)

    def default_for(self, quick: bool) -> Any:
        return self.default if not quick or self.quick is SAME else self.quick

    def rule(self) -> str:
        """The allowed values in words: 'int >= 1', 'float in (0, 1)', 'comma list of int >= 1', ..."""
        kind = self.item or self.kind
        text = getattr(kind, "__name__", str(kind))
        if self.choices:
            text = "|".join(self.choices) if self.item is not None else "one of " + "|".join(self.choices)
        bound = _bound_text(self)
        if bound:
            text += " " + bound
        return ("list of " + text) if self.item is not None else text


def _bound_text(s: Setting) -> str:
    return s.bound.text()


def _fmt(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def experiment_name(module: Any) -> str:
    """'seqlab.experiments.long_range' (or the module) -> 'long-range'."""
    name = module if isinstance(module, str) else module.__name__
    return name.rsplit(".", 1)[-1].replace("_", "-")


def command_line(module: Any, args: Any) -> str:
    """The `seqlab experiment` command that repeats this run (DIR for its folder): --quick, a seed other than
    0 and every --set as given, for the report's "Reproduce" line."""
    import shlex

    parts = ["seqlab", "experiment", experiment_name(_module(module)), "--out", "DIR"]
    if getattr(args, "quick", False):
        parts.append("--quick")
    seed = int(getattr(args, "seed", 0) or 0)
    if seed:
        parts += ["--seed", str(seed)]
    for key, value in (getattr(args, "options", None) or {}).items():
        parts += ["--set", shlex.quote(f"{key}={value if isinstance(value, str) else _fmt(value)}")]
    return " ".join(parts)


def valid_keys(spec: Sequence[Setting]) -> str:
    names = [s.name for s in spec] + [f"{a} (= {s.name})" for s in spec for a in s.aliases]
    return ", ".join(sorted(names))


def canonical(spec: Sequence[Setting], options: Mapping[str, Any] | None, experiment: str) -> dict[str, Any]:
    """options with aliases replaced by their setting's name; ConfigError for an unknown or repeated key."""
    names = {s.name: s.name for s in spec}
    names.update({a: s.name for s in spec for a in s.aliases})
    out: dict[str, Any] = {}
    seen: dict[str, str] = {}
    for key, value in (options or {}).items():
        if key not in names:
            raise ConfigError(f"unknown setting {key!r} for {experiment}; valid settings: {valid_keys(spec)}")
        name = names[key]
        if name in out:
            raise ConfigError(f"conflicting settings for {experiment}: {seen[name]} and {key} both set {name}; "
                              "give one")
        out[name], seen[name] = value, key
    return out


def _convert(s: Setting, value: Any, source: str) -> Any:
    from seqlab.train.config import coerce

    if s.convert is not None:
        return s.convert(value)
    if s.item is not None:
        items = value if isinstance(value, (list, tuple)) else str(value).split(",")
        items = [v.strip() if isinstance(v, str) else v for v in items]
        if not items or any(v == "" for v in items):
            raise ConfigError(f"{source}: {s.name} expects a comma-separated list of {s.item.__name__}, got {value!r}")
        try:
            return [coerce(s.name, v, s.item, source) for v in items]
        except ConfigError:
            raise ConfigError(f"{source}: {s.name} expects a comma-separated list of {s.item.__name__}, "
                              f"got {value!r}") from None
    return coerce(s.name, value, s.kind, source)


def _check_range(s: Setting, value: Any, source: str) -> None:
    for v in (value if isinstance(value, list) else [value]):
        if v is None or isinstance(v, bool):
            continue
        if s.choices is not None and isinstance(v, str) and v not in s.choices:
            raise ConfigError(f"{source}: {'each of ' if s.item else ''}{s.name} must be one of "
                              f"{', '.join(s.choices)}; got {_fmt(value)!r}")
        if isinstance(v, (int, float)):
            if not s.bound.holds(v):
                rule = _bound_text(s) or "finite"
                raise ConfigError(f"{source}: {'each of ' if s.item else ''}{s.name} must be {rule}, got {_fmt(value)}")


def resolve(spec: Sequence[Setting], options: Mapping[str, Any] | None, quick: bool, experiment: str,
            check: Callable[[dict], None] | None = None, source: str = "--set") -> dict[str, Any]:
    """The settings in declaration order: each default (full or quick) or its --set value, converted and checked."""
    given = canonical(spec, options, experiment)
    out: dict[str, Any] = {}
    for s in spec:
        if s.name in given:
            value = _convert(s, given[s.name], source)
        else:
            value = s.default_for(quick)
            value = value(out) if callable(value) else value
            if value is not None and (s.item is not None or s.convert is not None):
                value = _convert(s, value, "default")
        _check_range(s, value, source)
        out[s.name] = value
    if check is not None:
        try:
            check(out)
        except ConfigError as e:
            raise ConfigError(f"{experiment}: {e}") from None
    return out


def _module(module: Any) -> Any:
    """An experiment module, or its already-imported module's name (modules pass their own ``__name__``)."""
    return sys.modules[module] if isinstance(module, str) else module


def settings_for(module: Any, args: Any) -> dict[str, Any]:
    """An experiment module's (or its name's) resolved settings for the CLI's args (options, quick)."""
    module = _module(module)
    return resolve(module.SETTINGS, getattr(args, "options", None), bool(getattr(args, "quick", False)),
                   experiment_name(module), getattr(module, "check", None))


def describe(module: Any) -> str:
    """The settings table of `seqlab experiment NAME --help`."""
    module = _module(module)
    spec: Sequence[Setting] = module.SETTINGS
    rows = []
    for s in spec:
        full = s.show if callable(s.default) else _fmt(s.default)
        quick = "" if s.quick is SAME else (s.show_quick or s.show) if callable(s.quick) else _fmt(s.quick)
        rows.append((s.name + "".join(f" ({a})" for a in s.aliases), s.rule(), full, quick, s.help))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    w2 = max(max(len(r[2]) for r in rows), len("default"))
    w3 = max(max(len(r[3]) for r in rows), len("--quick"))
    lines = [f"settings of {experiment_name(module)} (--set KEY=VALUE):",
             f"  {'key':<{w0}}  {'type':<{w1}}  {'default':<{w2}}  {'--quick':<{w3}}  meaning"]
    lines += [f"  {a:<{w0}}  {b:<{w1}}  {c:<{w2}}  {d or '=':<{w3}}  {e}".rstrip() for a, b, c, d, e in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------- progress

def progress_mode(args: Any, explicit: bool | None = None) -> str:
    """'bars' (phase lines and tqdm bars), 'lines' (phase lines only) or 'off'.

    `explicit` (an experiment's own setting) or ``--progress`` / ``--no-progress`` decide; otherwise
    bars on a terminal and lines elsewhere (a log file, pytest).
    """
    flag = getattr(args, "progress", None) if explicit is None else explicit
    if flag is None:
        return "bars" if sys.stderr.isatty() else "lines"
    return "bars" if flag else "off"


class Progress:
    """One experiment's progress: `say` a line per phase, `bar` a tqdm bar over a loop.

    The lines go to `write` (the command line's writer, ``args.say``; without one they are dropped:
    the library itself prints nothing). With bars, a line is written with the bars cleared so it
    does not break one in flight; with mode 'lines' the bars do nothing; with 'off' both are dropped.
    """

    def __init__(self, experiment: str, mode: str = "lines", write: Callable[[str], None] | None = None):
        self.experiment, self.mode, self.write = experiment, mode, write

    def say(self, text: str) -> None:
        if self.mode == "off" or self.write is None:
            return
        line = f"[{self.experiment}] {text}"
        if self.mode == "bars":
            from tqdm import tqdm

            with tqdm.external_write_mode(file=sys.stderr):
                self.write(line)
        else:  # no tqdm locks here (they shift attention-cost's traced memory)
            self.write(line)

    @property
    def bars(self) -> bool:
        return self.mode == "bars"

    def bar(self, total: int | None = None, desc: str = "", unit: str = "step"):
        """A tqdm bar (the trainer's style: stderr, one line, cleared when done); update(n) per step.

        Without bars, a stand-in that does nothing and creates no tqdm state at all (attention-cost's
        traced peak memory is sensitive to such objects)."""
        if not self.bars:
            return _NoBar()
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True, leave=False,
                    mininterval=0.5)


class _NoBar:
    """The calls the experiments make on a bar, doing nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


def progress_for(module: Any, args: Any, explicit: bool | None = None) -> Progress:
    """The experiment's `Progress`: its mode from `progress_mode`, its lines to ``args.say`` (if any)."""
    return Progress(experiment_name(module), progress_mode(args, explicit), getattr(args, "say", None))
