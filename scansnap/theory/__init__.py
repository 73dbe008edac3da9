"""The paper's statements in closed form, one module per result.

Each submodule holds the formulas one chapter derives with sympy and checks numerically; the names
it exports are re-exported here, so ``from scansnap import theory; theory.lemma1_gradients(...)``
works for all of them. Submodules (and the chapter that uses each):

- :mod:`scansnap.theory.gradients`: Lemma 1, the gradients of Y and Z (Chapter 1).
- :mod:`scansnap.theory.long_sequences`: Lemma 2, the long-sequence limit, and Lemma 18, its
  concentration (Chapter 2).

A new result goes in a new submodule, listed here and re-exported below.
"""

from scansnap.theory.gradients import autograd_gradients, lemma1_gradients
from scansnap.theory.long_sequences import (
    concentration_bound,
    hoeffding_radius,
    limit_errors,
    linearized_std,
    loglog_slope,
    sampled_attention,
)

__all__ = ["autograd_gradients", "lemma1_gradients"]
__all__ += ["concentration_bound", "hoeffding_radius", "limit_errors", "linearized_std", "loglog_slope",
            "sampled_attention"]
