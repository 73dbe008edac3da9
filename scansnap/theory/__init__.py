"""The paper's statements in closed form, one module per result.

Each submodule holds the formulas one chapter derives with sympy and checks numerically. Every name in a
submodule's ``__all__`` is re-exported here, so ``from scansnap import theory; theory.lemma1_gradients(...)``
works for all of them; each quantity has one function (one name), and two submodules never export the
same name for different objects (importing the package fails if they do). Submodules (and the chapter that
uses each):

- :mod:`scansnap.theory.gradients`: Lemma 1, the gradients of Y and Z (Chapter 1).
- :mod:`scansnap.theory.long_sequences`: Lemma 2, the long-sequence limit, and Lemma 18, its
  concentration (Chapter 2).
- :mod:`scansnap.theory.decoder`: Section 4 and Appendix D, the decoder's dynamics with frozen
  attention: Lemma 3's reparameterization, Lemmas 5-7 (the margin ``h``), Theorem 1 (``gram``,
  ``theorem1_coefficients``, ``xi``, ``gamma``, ``gamma_of_h``: numpy, or torch batched over leading
  axes), Remark 1, Lemma 10 (Chapter 3).
- :mod:`scansnap.theory.decoder_sgd`: the same dynamics simulated (SGD with the full batch or batch size 1,
  ``solve_ivp``) and measured against Theorem 1; Remark 1 with ``M > K`` (Chapter 3).
- :mod:`scansnap.theory.overlaps`: the overlaps ``E`` of Assumption 2: Lemma 3's modification and its
  Lemma-17 bound, random and "star" families of inputs (Chapters 2, 3), and the book's test of Assumption 2
  for a family at given learning rates (``assumption2``, Chapter 4).
- :mod:`scansnap.theory.families`: families of sequence classes on which Section 5 is checked (Chapters 4, 5).
- :mod:`scansnap.theory.fates`: Section 5's attention dynamics: Eqn 10 (``eqn10_zdot``, checked against
  the exact ``population_zdot``), Theorem 2 and Corollary 2 (the fates of distinct and common tokens),
  reading the logits back from attention snapshots, and sign counts along training (Chapter 4).
- :mod:`scansnap.theory.scanning`: Theorem 3, relative gain, growth factor, Eqn 12's ``B_n``
  (``growth_bound``), with an ODE integration of Eqn 10 (Chapter 5); :mod:`scansnap.theory.scanning_measures`
  measures a trajectory against it (Eqn 11's deviation, Eqn 12's band, the scanning order, picked subsets).
- :mod:`scansnap.theory.snapping`: what Theorems 3-4 predict for the entropy of the attention over
  distinct tokens and for its dependence on both learning rates at a fixed horizon (Chapter 7).

A new result goes in a new submodule (with an ``__all__``); it is found and re-exported without
registration.
"""

from __future__ import annotations

import importlib
import pkgutil

__all__: list[str] = []


def _reexport() -> None:
    found: dict[str, tuple[object, str]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if name in found and found[name][0] is not obj:
                raise ImportError(f"scansnap.theory: {name!r} is exported by both {found[name][1]} and "
                                  f"{module.__name__}: one quantity, one name")
            found[name] = (obj, module.__name__)
    globals().update({name: obj for name, (obj, _) in found.items()})
    __all__.extend(sorted(found))


_reexport()
