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
- :mod:`scansnap.theory.fates`: Section 5's attention dynamics: Eqn 10 (``eqn10_zdot``, checked against
  the exact ``population_zdot``), Theorem 2 and Corollary 2 (the fates of distinct and common tokens),
  reading the logits back from attention snapshots, and sign counts along training (Chapter 4).
- :mod:`scansnap.theory.scanning`: Theorem 3, relative gain, growth factor and the scanning order,
  with an ODE integration of Eqn 10 (Chapter 5).
- :mod:`scansnap.theory.snapping`: what Theorems 3-4 predict for the entropy of the attention over
  distinct tokens and for its dependence on both learning rates at a fixed horizon (Chapter 7).
  Re-exported: ``growth_law_attention``, ``entropy_tail``, ``horizon_optimum``; the rest
  (``entropy``, ``lemma6_time``, ``eqn14_bound``, ``optimum_root``) as ``theory.snapping.<name>``.

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
from scansnap.theory.fates import (
    FateCounts,
    class_gradients,
    classes_from_weights,
    corollary2_beta,
    corollary2_rate,
    decoder_coefficients,
    eqn10_zdot,
    example_families,
    fate_counts,
    logits_from_attention,
    overlap_gram,
    population_zdot,
    random_classes,
    single_common_rate,
    span_coefficients,
    speed_gamma,
    speed_gamma_at,
    theorem1_decoder,
    unit_scores,
    xi_coefficients,
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
from scansnap.theory.scanning import (
    Eqn10Run,
    distinct_flow,
    dominant_token,
    dominant_token_bounds,
    drop_steps,
    eqn11_deviation,
    growth_factor,
    integrate_eqn10,
    rank_correlation,
    relative_gain,
    top_set,
)
from scansnap.theory.snapping import (
    entropy_tail,
    growth_law_attention,
    horizon_optimum,
)

__all__ = ["Eqn10Run", "FateCounts", "autograd_gradients", "backprop_gradient", "class_gradients",
    "classes_from_inputs", "classes_from_weights", "complete_basis", "concentration_bound", "corollary2_beta",
    "corollary2_rate", "decoder_coefficients", "decoder_velocity", "decompose_gradient", "distinct_flow",
    "dominant_token", "dominant_token_bounds", "drop_steps", "entropy_tail", "eqn10_zdot", "eqn11_deviation",
    "equal_overlap_classes", "example_families", "fate_counts", "gamma", "gamma_early", "gamma_late", "gamma_of_h",
    "gamma_peak", "gram", "growth_factor", "growth_law_attention", "hoeffding_count_radius", "hoeffding_radius",
    "horizon_optimum", "integrate_decoder", "integrate_eqn10", "lemma1_gradients", "lemma5_h", "lemma6_h_ivp",
    "limit_errors", "linearized_std", "logits_from_attention", "loglog_slope", "overlap_gram",
    "population_zdot", "random_classes", "rank_correlation", "relative_gain", "remark1_effective_rate",
    "remark1_reduced", "reparameterize", "sampled_attention", "sgd_decoder", "sgd_decoder_model",
    "single_common_rate", "span_coefficients", "speed_gamma", "speed_gamma_at", "theorem1_coefficients",
    "theorem1_decoder", "top_set", "transition_time", "unit_inputs", "unit_scores", "xi", "xi_coefficients"]
