"""Settings: typed from TOML and --set, never evaluated; unknown keys and bad values are named."""
import pytest

from seqlab.errors import ConfigError
from seqlab.train.config import TrainConfig, build_config, make_schedule, parse_set, read_toml
from seqlab.train.tasks import TASKS, get_task
from seqlab.train.tasks.toy_classifier import Config


def test_values_are_converted_by_the_field_type():
    cfg = build_config(Config, (parse_set(["lr=3e-4", "max_steps=1e3", "optimizer=sgd", "dim=8"]), "--set"))
    assert (cfg.lr, cfg.max_steps, cfg.optimizer, cfg.dim) == (3e-4, 1000, "sgd", 8)
    assert isinstance(cfg.max_steps, int) and isinstance(cfg.lr, float)


@pytest.mark.parametrize("item, words", [
    ("max_steps=2.5", ["max_steps", "int", "2.5"]),
    ("lr=fast", ["lr", "float", "fast"]),
    ("max_steps=__import__('os')", ["max_steps", "int"]),   # never evaluated
    ("optimizer=lion", ["optimizer", "lion"]),
    ("max_steps=0", ["max_steps", ">= 1"]),
])
def test_bad_values_are_named(item, words):
    with pytest.raises(ConfigError) as e:
        build_config(Config, (parse_set([item]), "--set"))
    assert all(w in str(e.value) for w in words), str(e.value)


def test_unknown_key_is_named_and_the_valid_ones_listed():
    with pytest.raises(ConfigError) as e:
        build_config(Config, ({"lrr": 1}, "--set"))
    msg = str(e.value)
    assert "'lrr'" in msg and "lr," in msg and "max_steps" in msg


def test_set_needs_key_value():
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        parse_set(["lr"])


def test_toml_tables_group_keys(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('seed = 3\n[train]\nlr = 0.5\nmax_steps = 7\n[model]\ndim = 4\n')
    cfg = build_config(Config, (read_toml(f), str(f)))
    assert (cfg.seed, cfg.lr, cfg.max_steps, cfg.dim) == (3, 0.5, 7, 4)
    f.write_text('[train]\nlr = 0.5\n[model]\nlr = 0.1\n')
    with pytest.raises(ConfigError, match="twice"):
        read_toml(f)
    f.write_text('lr = \n')
    with pytest.raises(ConfigError, match="not valid TOML"):
        read_toml(f)
    with pytest.raises(ConfigError, match="cannot read"):
        read_toml(tmp_path / "missing.toml")


def test_toml_types_are_checked(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('max_steps = "10"\nlr = 1\n')  # a string for an int is converted; an int for a float too
    cfg = build_config(Config, (read_toml(f), str(f)))
    assert cfg.max_steps == 10 and cfg.lr == 1.0
    f.write_text('patience = true\n')
    with pytest.raises(ConfigError, match="patience expects int"):
        build_config(Config, (read_toml(f), str(f)))


def test_schedules_follow_the_settings():
    cos = make_schedule(TrainConfig(schedule="warmup_cosine", warmup_steps=10, max_steps=110, lr=1e-3, min_lr=1e-4))
    assert cos(0) == 0.0 and cos(10) == pytest.approx(1.0) and cos(110) == pytest.approx(0.1)
    lin = make_schedule(TrainConfig(schedule="warmup_linear", warmup_steps=10, max_steps=20))
    assert lin(5) == pytest.approx(0.5) and lin(20) == 0.0


def test_every_task_is_registered_with_a_config():
    for name in TASKS:
        mod = get_task(name)
        assert mod.NAME == name and mod.DESCRIPTION and callable(mod.build)
        assert issubclass(mod.Config, TrainConfig) and mod.Config().max_steps >= 1
    with pytest.raises(ConfigError, match="unknown task 'nope'; choose one of: toy-classifier"):
        get_task("nope")


@pytest.mark.parametrize("task, key, value, words", [
    ("sst2-transformer", "max_train_examples", "-5", "max_train_examples must be >= 0 (0 = all), got -5"),
    ("sst2-transformer", "nhead", "0", "nhead must be >= 1, got 0"),
    ("sst2-transformer", "pooling", "foo", "pooling must be one of mean, max, first, got 'foo'"),
    ("sst2-transformer", "positional", "foo", "positional must be one of sinusoidal"),
    ("sst2-transformer", "dropout", "2", "dropout must be in [0, 1], got 2.0"),
    ("sst2-lstm", "max_dev_examples", "-3", "max_dev_examples must be >= 0"),
    ("sst2-bert", "layer_lr_decay", "0", "layer_lr_decay must be in (0, 1] (1 = no decay), got 0.0"),
    ("sst2-bert", "pooling", "max", "pooling must be one of mean, cls, got 'max'"),
    ("shakespeare-gpt", "eval_iters", "0", "eval_iters must be >= 1, got 0"),
    ("shakespeare-gpt", "temperature", "-1", "temperature must be > 0, got -1.0"),
    ("shakespeare-gpt", "temperature", "0", "temperature must be > 0, got 0.0"),
    ("shakespeare-gpt", "sample_chars", "-1", "sample_chars must be >= 0 (0 = no sample), got -1"),
    ("shakespeare-gpt", "train_frac", "1.5", "train_frac must be in (0, 1), got 1.5"),
    ("mlm-pretrain", "eval_batches", "0", "eval_batches must be >= 1, got 0"),
    ("mlm-pretrain", "val_every_nth", "0", "val_every_nth must be >= 2 (every n-th line is held out), got 0"),
    ("mlm-pretrain", "mask_prob", "0", "mask_prob must be in (0, 1], got 0.0"),
    ("clm-pretrain", "max_len", "0", "max_len must be >= 2, got 0"),
    ("toy-classifier", "n_dev", "0", "n_dev must be >= 1, got 0"),
    ("toy-classifier", "seed", "-1", "seed must be >= 0, got -1"),
    ("multi30k-rnn", "train_limit", "-1", "train_limit must be >= 0 (0 = all), got -1"),
    ("multi30k-rnn", "beam_size", "0", "beam_size must be >= 1, got 0"),
    ("multi30k-rnn", "cell", "rnn", "cell must be one of gru, lstm, got 'rnn'"),
    ("multi30k-transformer", "num_encoder_layers", "0", "num_encoder_layers must be >= 1, got 0"),
])
def test_each_task_refuses_settings_outside_their_range_when_the_config_is_built(task, key, value, words):
    """Before any data is read: `--print-config` and `--config` files are checked as `train` is."""
    with pytest.raises(ConfigError) as e:
        build_config(get_task(task).Config, ({key: value}, "--set"))
    assert words in str(e.value)


def test_every_bound_names_a_field_and_every_default_is_in_range():
    from seqlab.train.config import check_settings

    for name in TASKS:
        cls = get_task(name).Config
        fields = set(TrainConfig.__dataclass_fields__) | set(cls.__dataclass_fields__)
        for base in cls.__mro__:
            for key in {**vars(base).get("BOUNDS", {}), **vars(base).get("CHOICES", {})}:
                assert key in fields, f"{name}: {key} is bounded but is not a setting"
        check_settings(cls())  # the defaults themselves pass
