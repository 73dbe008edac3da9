"""The paper's statements in closed form, one module per result.

Each submodule holds the formulas one chapter derives with sympy and checks numerically; the names
it exports are re-exported here, so ``from scansnap import theory; theory.lemma1_gradients(...)``
works for all of them. Submodules (and the chapter that uses each):

- :mod:`scansnap.theory.gradients`: Lemma 1, the gradients of Y and Z (Chapter 1).
- :mod:`scansnap.theory.long_sequences`: Lemma 2, the long-sequence limit, and Lemma 18, its
  concentration (Chapter 2).
- :mod:`scansnap.theory.decoder`: Section 4 and Appendix D, the decoder's dynamics with frozen
  attention: Lemma 3's reparameterization, Lemmas 5-7 (the margin ``h``), Theorem 1 (``gamma``,
  ``iota``, ``beta``, ``xi``), Remark 1, Lemma 10 (Chapter 3). Its ``lemma6_h`` is not re-exported
  (other modules define functions of that name): use ``theory.decoder.lemma6_h``.

A new result goes in a new submodule, listed here and re-exported below.
"""

from scansnap.theory.decoder import (
    backprop_gradient,
    classes_from_inputs,
    complete_basis,
    decoder_velocity,
    decompose_gradient,
    equal_overlap_classes,
    gamma,
    gamma_early,
    gamma_late,
    gamma_of_h,
    gamma_peak,
    gram,
    hoeffding_count_radius,
    integrate_decoder,
    lemma5_h,
    lemma6_h_ivp,
    remark1_effective_rate,
    remark1_reduced,
    reparameterize,
    sgd_decoder,
    sgd_decoder_model,
    theorem1_coefficients,
    transition_time,
    unit_inputs,
    xi,
)
from scansnap.theory.gradients import (
    autograd_gradients,
    lemma1_gradients,
)
from scansnap.theory.long_sequences import (
    concentration_bound,
    hoeffding_radius,
    limit_errors,
    linearized_std,
    loglog_slope,
    sampled_attention,
)

__all__ = ["autograd_gradients", "backprop_gradient", "classes_from_inputs", "complete_basis", "concentration_bound",
    "decoder_velocity", "decompose_gradient", "equal_overlap_classes", "gamma", "gamma_early", "gamma_late",
    "gamma_of_h", "gamma_peak", "gram", "hoeffding_count_radius", "hoeffding_radius", "integrate_decoder",
    "lemma1_gradients", "lemma5_h", "lemma6_h_ivp", "limit_errors", "linearized_std", "loglog_slope",
    "remark1_effective_rate", "remark1_reduced", "reparameterize", "sampled_attention", "sgd_decoder",
    "sgd_decoder_model", "theorem1_coefficients", "transition_time", "unit_inputs", "xi"]
