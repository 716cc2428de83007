"""The entry points users call: ``gradient``, ``pullback``, ``jvp``, ``jacobian``,
``grad``, ``Params``, the Zygote utilities.

Each checks and normalises what the user passed, runs the generated code
through ``ad.runtime`` and returns user values. ``ad.higher`` builds on these
(it registers their rules for nested differentiation); nothing here imports it.
"""
