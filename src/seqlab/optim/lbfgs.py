"""L-BFGS (Liu & Nocedal 1989; Nocedal & Wright, Numerical Optimization, 2nd ed., §7.2), torch.optim.LBFGS's
iteration, stopping tests and state."""
from __future__ import annotations

from seqlab import backend
from seqlab.backend import xp_of
from seqlab.optim.common import check_non_negative
from seqlab.optim.line_search import strong_wolfe
from seqlab.optim.optimizer import Optimizer, run_closure

_ONE_GROUP = "LBFGS doesn't support per-parameter options (parameter groups)"


class LBFGS(Optimizer):
    """A quasi-Newton method: each step(closure) runs up to `max_iter` iterations on the flattened parameters
    x (all of them in one vector), each moving along the direction d = −H g, where H approximates the inverse
    Hessian from the last `history_size` pairs

        s = xₖ₊₁ − xₖ (state 'old_stps'),  y = gₖ₊₁ − gₖ (state 'old_dirs'),  ρ = 1 / yᵀs (state 'ro')

    applied by the two-loop recursion (N&W Algorithm 7.4), starting from H₀ = γ I, γ = sᵀy / yᵀy of the
    newest pair (eq. 7.20; state 'H_diag'):

        q ← −g;  for i newest … oldest: αᵢ = ρᵢ sᵢᵀq;  q ← q − αᵢ yᵢ          (αᵢ: state 'al')
        r ← γ q;  for i oldest … newest: βᵢ = ρᵢ yᵢᵀr;  r ← r + (αᵢ − βᵢ) sᵢ;  d = r

    A pair with yᵀs ≤ 1e-10 (no positive curvature) is not stored. The first iteration ever is a gradient step
    d = −g of length t = lr · min(1, 1/‖g‖₁); later ones take t = lr, or with line_search_fn="strong_wolfe"
    the step `line_search.strong_wolfe` finds from t = lr (N&W Algorithms 3.5/3.6). A step ends after
    max_iter iterations or max_eval closure calls, or when max|g| ≤ tolerance_grad, when g·d >
    −tolerance_change, when max|t d| ≤ tolerance_change, or when the loss changed by less than
    tolerance_change. Without a line search the last iteration's move is not re-evaluated.

    torch's rules kept: one parameter group only; step needs the closure (recompute the loss, call backward,
    return the loss), run with gradients on; it returns the closure's first loss. The state (d, t, the
    history, the previous flat gradient and loss, func_evals and n_iter counted over all steps) lives under
    the first parameter, as torch keeps it; its arrays are flat, the size of all parameters together.
    """

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None):
        check_non_negative(lr=lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, {"lr": lr, "max_iter": max_iter, "max_eval": max_eval,
                                  "tolerance_grad": tolerance_grad, "tolerance_change": tolerance_change,
                                  "history_size": history_size, "line_search_fn": line_search_fn})
        if len(self.param_groups) != 1:
            raise ValueError(_ONE_GROUP)

    # ---- the parameters as one flat vector ----------------------------------------------------------
    def _params(self) -> list:
        if len(self.param_groups) != 1:
            raise ValueError(_ONE_GROUP)
        return self.param_groups[0]["params"]

    def _flat_grad(self):
        """All gradients in one vector (zeros for a parameter without one)."""
        params = self._params()
        xp = xp_of(params[0].data)
        return xp.concatenate([(p.grad if p.grad is not None else xp.zeros_like(p.data)).reshape(-1)
                               for p in params])

    def _move(self, t: float, d) -> None:
        """x ← x + t·d."""
        offset = 0
        for p in self._params():
            n = p.data.size
            p.data += t * d[offset:offset + n].reshape(p.data.shape)
            offset += n

    def _evaluate(self, closure, t: float, d) -> tuple[float, object]:
        """(loss, flat gradient) at x + t·d; the parameters are left at x."""
        saved = [p.data.copy() for p in self._params()]
        self._move(t, d)
        loss = float(run_closure(closure))
        flat_grad = self._flat_grad()
        for p, x in zip(self._params(), saved):
            p.data[...] = x
        return loss, flat_grad

    # ---- one step: up to max_iter iterations ------------------------------------------------------
    def step(self, closure):
        """Up to max_iter L-BFGS iterations; `closure` recomputes the loss and its gradients (required, as
        torch). Returns the loss the first call of the closure gave."""
        if closure is None:
            raise TypeError("LBFGS.step needs a closure that recomputes the loss, calls backward and returns "
                            "the loss; got None")
        params = self._params()
        group = self.param_groups[0]
        lr, tolerance_grad, tolerance_change = map(float, (group["lr"], group["tolerance_grad"],
                                                          group["tolerance_change"]))
        max_iter, max_eval, history_size = group["max_iter"], group["max_eval"], group["history_size"]
        line_search_fn = group["line_search_fn"]

        state = self.state.setdefault(id(params[0]), {})  # torch keeps LBFGS's state under the first parameter
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = run_closure(closure)
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        xp = xp_of(flat_grad)
        if float(xp.abs(flat_grad).max()) <= tolerance_grad:
            return orig_loss                               # already stationary

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_flat_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # the direction d
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, H_diag = [], [], [], 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = float(y.dot(s))
                if ys > 1e-10:                             # positive curvature: remember the pair
                    if len(old_dirs) == history_size:
                        del old_dirs[0], old_stps[0], ro[0]
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / float(y.dot(y))          # γ = sᵀy / yᵀy
                al = state.setdefault("al", [None] * history_size)
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = float(old_stps[i].dot(q)) * ro[i]
                    q -= al[i] * old_dirs[i]
                d = q * H_diag
                for i in range(len(old_dirs)):
                    be_i = float(old_dirs[i].dot(d)) * ro[i]
                    d += (al[i] - be_i) * old_stps[i]

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.copy()
            else:
                prev_flat_grad[...] = flat_grad
            prev_loss = loss

            # the step length t
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(xp.abs(flat_grad).sum())) * lr
            else:
                t = lr
            gtd = float(flat_grad.dot(d))                  # directional derivative g·d
            if gtd > -tolerance_change:
                break                                      # not a descent direction (any more)

            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                def evaluate(step: float, d=d):
                    return self._evaluate(closure, step, d)

                loss, flat_grad, t, ls_evals = strong_wolfe(evaluate, t, d, loss, flat_grad, gtd,
                                                            max_ls=max_eval - evals)
                self._move(t, d)
                opt_cond = float(xp.abs(flat_grad).max()) <= tolerance_grad
            else:
                self._move(t, d)
                ls_evals = 0
                opt_cond = False
                if n_iter != max_iter:                     # the last move is not evaluated (torch's choice)
                    loss = float(run_closure(closure))
                    flat_grad = self._flat_grad()
                    opt_cond = float(xp.abs(flat_grad).max()) <= tolerance_grad
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals

            # stopping tests
            if n_iter == max_iter or evals >= max_eval or opt_cond:
                break
            if float(xp.abs(d * t).max()) <= tolerance_change:
                break                                      # the move was negligible
            if abs(loss - prev_loss) < tolerance_change:
                break                                      # so was the loss's change

        state["d"], state["t"] = d, t
        state["old_dirs"], state["old_stps"], state["ro"], state["H_diag"] = old_dirs, old_stps, ro, H_diag
        state["prev_flat_grad"], state["prev_loss"] = prev_flat_grad, prev_loss
        return orig_loss

    # ---- state_dict: flat arrays and lists, not shaped as a parameter ---------------------------------
    def state_dict(self) -> dict:
        sd = super().state_dict()
        for s in sd["state"].values():  # the history's arrays too, so later steps leave the snapshot alone
            for key, v in s.items():
                if isinstance(v, list):
                    s[key] = [x.copy() if hasattr(x, "copy") else x for x in v]
        return sd

    def load_state_dict(self, state_dict: dict) -> None:
        """Also a state saved by torch.optim.LBFGS (tensors, 0-d tensors for t, H_diag and ro)."""
        params = [p for g in self.param_groups for p in g["params"]]
        state = {}
        for i, s in state_dict["state"].items():
            if not 0 <= int(i) < len(params):
                raise ValueError(f"optimizer state names parameter {i}; this optimizer has {len(params)}")
            p = params[int(i)]
            state[id(p)] = {k: _loaded(v, p) for k, v in s.items()}
        super().load_state_dict({**state_dict, "state": {}})  # the groups, checked
        self.state.update(state)


def _loaded(v, p):
    """A value of a loaded LBFGS state: arrays on p's device in p's dtype, 0-d arrays Python numbers, lists
    element by element."""
    if isinstance(v, (list, tuple)):
        return [_loaded(x, p) for x in v]
    v = backend.from_torch(v)
    if not hasattr(v, "shape"):
        return v
    if v.ndim == 0:
        return v.item()
    return backend.to_device(v, p.device).astype(p.dtype)
