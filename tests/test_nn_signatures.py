"""Every module in both `seqlab.nn` and `torch.nn` takes torch's constructor and forward arguments (names, order,
kinds, defaults), so `nn.Linear(4, 3)(input=x)` and `nn.CrossEntropyLoss(w, None, 2)` read as in torch; every
function in both `seqlab.functional` and `torch.nn.functional` takes torch's positional parameters first.

The differences seqlab keeps are listed below as data, each with its reason: extra trailing arguments
(`EXTRA`), other defaults (`DEFAULTS`) and the few signatures not compared at all (`SKIP`). A class added to
`seqlab.nn` is checked the moment it exists.
"""
import ast
import inspect
import typing
import warnings

import numpy as np
import pytest
import torch

import seqlab
import seqlab.functional as F
import seqlab.nn as nn

P = inspect.Parameter
POSITIONAL = (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)
BATCH_FIRST = "seqlab is batch-first everywhere (DESIGN.md); batch_first=False is refused on purpose"
ACTIVATION = "the string 'relu' (torch's default is the function F.relu; both take a string or a callable)"

# seqlab's arguments after all of torch's, per (class, method): each has a default, so torch's calls work.
EXTRA = {
    # fused: the recurrent scan kernel (True) or one composed cell per step, the reference it is held to
    ("RNNBase", "__init__"): ("fused",),
    ("LSTM", "__init__"): ("fused",),
    # proj_size: accepted as 0 only (torch's own message otherwise), so a config dict fits all three layers
    ("RNN", "__init__"): ("fused", "proj_size"),
    ("GRU", "__init__"): ("fused", "proj_size"),
    # lengths: (B,) real lengths of a padded batch, torch's PackedSequence without packing
    ("RNN", "forward"): ("lengths",),
    ("LSTM", "forward"): ("lengths",),
    ("GRU", "forward"): ("lengths",),
    # rotary / position_bias: RoPE and ALiBi/T5 biases; weights_grad=False: weights detached, no T × T kept
    ("MultiheadAttention", "forward"): ("rotary", "position_bias", "weights_grad"),
    # output_attentions: the layers also return their attention weights (the viewer); rotary / position_bias
    ("TransformerEncoderLayer", "forward"): ("output_attentions", "rotary", "position_bias"),
    ("TransformerEncoder", "forward"): ("output_attentions", "rotary", "position_bias"),
    ("TransformerDecoderLayer", "forward"): ("output_attentions", "rotary", "position_bias"),
    ("TransformerDecoder", "forward"): ("output_attentions", "rotary", "position_bias"),
}

# (class, method, argument): (seqlab's default, why it differs from torch's)
DEFAULTS = {
    **{(name, "__init__", "batch_first"): (True, BATCH_FIRST)
       for name in ("RNNBase", "RNN", "LSTM", "GRU", "MultiheadAttention", "TransformerEncoderLayer",
                    "TransformerDecoderLayer", "Transformer")},
    **{(name, "__init__", "activation"): ("relu", ACTIVATION)
       for name in ("TransformerEncoderLayer", "TransformerDecoderLayer", "Transformer")},
    # torch's None is its deprecated implicit dim (0 for a 3-d input), the batch axis of a (B, T, C) input
    ("Softmax", "__init__", "dim"): (-1, "dim=-1: torch's None picks dim 0 of a batch-first (B, T, C) input"),
    ("LogSoftmax", "__init__", "dim"): (-1, "dim=-1: as Softmax"),
}

# (class, method): why the signature is not compared
SKIP = {
    ("RNNCellBase", "__init__"): "a base exported for isinstance only; seqlab's cells set `gates` as a class "
                                 "attribute where torch's base takes num_chunks",
}

# (class, method): known differences still to fix, in files another change is writing (strict: an entry that
# starts passing fails, so it is removed then)
PENDING: dict = {}  # (class, method): reason, for a mismatch known and not fixed yet (a strict xfail)


def _accepts_device(fn) -> bool:
    """True where `fn` takes `device=` as a keyword (seqlab's `@takes_device` wrapper adds it)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    return "device" in code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]


def _torch_signature(cls, method: str):
    """torch's signature of cls.method, or None where torch has none to compare (an unimplemented forward)."""
    fn = getattr(cls, method)
    if method == "forward" and fn is torch.nn.Module.forward:
        return None                                                 # containers and bases: no forward
    if method == "__init__" and fn is torch.nn.Module.__init__:
        return inspect.Signature([P("self", P.POSITIONAL_OR_KEYWORD)])
    sig = inspect.signature(fn)
    if {P.VAR_POSITIONAL, P.VAR_KEYWORD} <= {p.kind for p in sig.parameters.values()}:
        for overload in typing.get_overloads(fn):                  # RNN, LSTM, GRU: (*args, **kwargs) + overloads
            o = inspect.signature(overload)
            if not any(p.kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD) for p in o.parameters.values()):
                return o
    return sig


def _pairs():
    """(class name, method) for every Module class in both seqlab.nn and torch.nn (read with dir(), so a class
    a concurrent edit adds without listing it in __all__ is checked too)."""
    pairs = []
    for name in sorted(dir(nn)):
        ours, theirs = getattr(nn, name), getattr(torch.nn, name, None)
        if (isinstance(ours, type) and issubclass(ours, nn.Module) and isinstance(theirs, type)
                and issubclass(theirs, torch.nn.Module)):
            pairs += [(name, "__init__"), (name, "forward")]
    return pairs


def _same_default(a, b) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - an array-like default: compare as arrays
        return False


def _lazy_shim(cls, params) -> bool:
    """A Lazy* module's forward(input, *args, **kwargs): it sizes its parameters from `input`, becomes its eager
    class (`cls_to_become`, as torch's) and hands every argument on to that class's forward, checked here
    under its own name."""
    return (hasattr(cls, "cls_to_become") and [p.kind for p in params] ==
            [P.POSITIONAL_OR_KEYWORD, P.POSITIONAL_OR_KEYWORD, P.VAR_POSITIONAL, P.VAR_KEYWORD]
            and params[1].name == "input")


@pytest.mark.parametrize("name, method", _pairs())
def test_signature_matches_torch(name, method, request):
    if (name, method) in SKIP:
        pytest.skip(SKIP[name, method])
    if (name, method) in PENDING:
        request.applymarker(pytest.mark.xfail(reason=PENDING[name, method], strict=True))
    ours_cls, theirs_cls = getattr(nn, name), getattr(torch.nn, name)
    theirs = _torch_signature(theirs_cls, method)
    if theirs is None:
        return
    fn = getattr(ours_cls, method)
    ours = list(inspect.signature(fn).parameters.values())
    if method == "forward" and _lazy_shim(ours_cls, ours):
        assert [p.name for p in theirs.parameters.values()][:2] == ["self", "input"]
        return
    want = list(theirs.parameters.values())
    if method == "__init__" and "device" not in [p.name for p in ours] and _accepts_device(fn):
        want = [p for p in want if p.name != "device"]             # seqlab's @takes_device takes it as a keyword
    extra = EXTRA.get((name, method), ())
    assert [p.name for p in ours[len(want):]] == list(extra), (
        f"{name}.{method}: seqlab's {[p.name for p in ours]} vs torch's {[p.name for p in want]}; "
        f"extra trailing arguments must be listed in EXTRA")
    for p in ours[len(want):]:
        assert p.default is not P.empty and p.kind not in (P.VAR_POSITIONAL, P.VAR_KEYWORD), (name, method, p)
    for o, t in zip(ours[:len(want)], want):
        where = f"{name}.{method}({t.name})"
        if t.kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD):             # *args / **kwargs: the kind, not the name
            assert o.kind == t.kind, f"{where}: seqlab has {o}"
            continue
        assert (o.name, o.kind) == (t.name, t.kind), f"{where}: seqlab has {o}, torch {t}"
        if (name, method, t.name) in DEFAULTS:
            assert _same_default(o.default, DEFAULTS[name, method, t.name][0]), f"{where}: seqlab has {o}"
        else:
            assert _same_default(o.default, t.default), (f"{where}: seqlab's default {o.default!r}, "
                                                         f"torch's {t.default!r}")


def test_allowlists_name_real_arguments():
    """Each entry in EXTRA / DEFAULTS / SKIP still names a class and argument seqlab has (no stale entries)."""
    for (name, method), args in EXTRA.items():
        params = inspect.signature(getattr(getattr(nn, name), method)).parameters
        assert all(a in params for a in args), (name, method, args)
    for name, method, arg in DEFAULTS:
        assert arg in inspect.signature(getattr(getattr(nn, name), method)).parameters, (name, method, arg)
    for name, method in SKIP:
        assert hasattr(getattr(nn, name), method)


# ---- forward(input=...) and the loss constructors' legacy slots, by behaviour ------------------------------
def _x(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("make, shape", [
    (lambda m: m.Linear(4, 3), (2, 4)), (lambda m: m.LayerNorm(4), (2, 4)), (lambda m: m.ReLU(), (2, 4)),
    (lambda m: m.GELU(), (2, 4)), (lambda m: m.Tanh(), (2, 4)), (lambda m: m.Sigmoid(), (2, 4)),
    (lambda m: m.SiLU(), (2, 4)), (lambda m: m.Softmax(-1), (2, 4)), (lambda m: m.LogSoftmax(-1), (2, 4)),
    (lambda m: m.LeakyReLU(), (2, 4)), (lambda m: m.Dropout(0.5).eval(), (2, 4)), (lambda m: m.Identity(), (2, 4)),
    (lambda m: m.Flatten(), (2, 2, 2)), (lambda m: m.Sequential(m.Identity(), m.ReLU()), (2, 4)),
])
def test_forward_takes_input_by_keyword(make, shape):
    x = _x(*shape)
    ours, theirs = make(nn), make(torch.nn)
    if hasattr(ours, "weight") and ours.weight is not None and hasattr(theirs, "weight"):
        ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    got = ours(input=seqlab.tensor(x)).numpy()
    np.testing.assert_allclose(got, theirs(input=torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"])
def test_recurrent_forward_takes_input_and_hx_by_keyword(name):
    ours = getattr(nn, name)(3, 5)
    theirs = getattr(torch.nn, name)(3, 5, **({} if name.endswith("Cell") else {"batch_first": True}))
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = _x(2, 3) if name.endswith("Cell") else _x(2, 4, 3)
    got, want = ours(input=seqlab.tensor(x), hx=None), theirs(input=torch.from_numpy(x), hx=None)
    got = got[0] if isinstance(got, tuple) else got
    want = want[0] if isinstance(want, tuple) else want
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_embedding_takes_input_by_keyword():
    ids = np.array([[1, 2], [0, 3]])
    assert nn.Embedding(4, 2)(input=seqlab.tensor(ids)).shape == (2, 2, 2)


@pytest.mark.parametrize("name", ["CrossEntropyLoss", "NLLLoss"])
@pytest.mark.parametrize("args, kwargs", [
    ((None, None, 2), {}),                                     # ignore_index in torch's third slot
    ((None, False), {}),                                       # size_average=False: 'sum'
    ((), {"reduce": False}),                                   # reduce=False: 'none'
    ((), {"size_average": True, "reduce": True}),              # 'mean'
])
def test_loss_legacy_slots_as_torch(name, args, kwargs):
    logits, y = _x(5, 4), np.array([0, 2, 1, 3, 2])
    if name == "NLLLoss":
        logits = torch.log_softmax(torch.from_numpy(logits), -1).numpy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = getattr(nn, name)(*args, **kwargs)
    legacy = any(k in kwargs for k in ("size_average", "reduce")) or len(args) == 2
    assert any("size_average and reduce args will be deprecated" in str(w.message) for w in caught) == legacy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = getattr(torch.nn, name)(*args, **kwargs)
    assert (ours.reduction, ours.ignore_index) == (theirs.reduction, theirs.ignore_index)
    got = ours(seqlab.tensor(logits), y).numpy()
    np.testing.assert_allclose(got, theirs(torch.from_numpy(logits), torch.from_numpy(y)).numpy(), rtol=1e-5)


def test_loss_legacy_slot_refuses_a_reduction_string():
    with pytest.raises(TypeError, match="reduction='sum'"):
        nn.CrossEntropyLoss(None, "sum")
    with pytest.raises(TypeError, match="reduction='sum'"):
        F.nll_loss(seqlab.tensor(_x(2, 3)), np.array([0, 1]), None, "sum")


def test_functional_losses_take_torch_positional_order():
    logits, y = _x(5, 4), np.array([0, 2, 1, 3, 2])
    got = F.cross_entropy(seqlab.tensor(logits), y, None, None, 2, None, "sum", 0.1).numpy()
    want = torch.nn.functional.cross_entropy(torch.from_numpy(logits), torch.from_numpy(y), None, None, 2, None,
                                             "sum", 0.1)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5)
    with pytest.warns(UserWarning, match="reduction='none'"):
        F.cross_entropy(input=seqlab.tensor(logits), target=y, reduce=False)


# ---- functional: torch's positional parameters, in torch's order, lead seqlab's -------------------------------
# name: why seqlab's leading parameters differ (none at present; add an entry with its reason)
FUNCTIONAL_SKIP: dict[str, str] = {}


def _torch_positional(fn, name: str):
    """The names of torch's positional parameters, from the signature or, for a builtin, its docstring's first
    line (`gelu(input, approximate = 'none') -> Tensor`); None where neither says."""
    try:
        params = list(inspect.signature(fn).parameters.values())
        if not any(p.kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD) for p in params):
            return [p.name for p in params if p.kind in POSITIONAL]
    except (TypeError, ValueError):
        pass
    doc = (fn.__doc__ or "").strip()
    if not doc.startswith(name + "("):
        return None
    depth = 0
    for end, ch in enumerate(doc):
        depth += (ch == "(") - (ch == ")")
        if ch == ")" and depth == 0:
            break
    try:
        args = ast.parse("def f" + doc[len(name):end + 1] + ": pass").body[0].args
    except SyntaxError:
        return None
    return [a.arg for a in args.posonlyargs + args.args]


FUNCTIONS = sorted(n for n in dir(F) if not n.startswith("_") and inspect.isfunction(getattr(F, n))
                   and callable(getattr(torch.nn.functional, n, None)))


def test_functional_is_compared():
    assert len(FUNCTIONS) > 80  # seqlab.functional and torch.nn.functional share most names


@pytest.mark.parametrize("name", FUNCTIONS)
def test_functional_leading_parameters_match_torch(name):
    if name in FUNCTIONAL_SKIP:
        pytest.skip(FUNCTIONAL_SKIP[name])
    want = _torch_positional(getattr(torch.nn.functional, name), name)
    if want is None:
        pytest.skip(f"torch.nn.functional.{name} states no signature")
    ours = [p.name for p in inspect.signature(getattr(F, name)).parameters.values() if p.kind in POSITIONAL]
    assert ours[:len(want)] == want, f"F.{name}: seqlab's {ours}, torch's {want}"
