"""What generated code calls: dispatch, the tape, accumulation, both modes.

The transform (``ad.transform``) writes code that calls these functions by
name (the tables in ``helpers`` and ``forward``); the entry points
(``ad.api``) run that code. Nothing here imports ``ad.api`` or ``ad.higher``.

- reverse mode: ``reverse`` (``rcall``: dispatch to a rule, a transformed
  function, or plain Python), ``reverse_functions`` (transformed Python
  functions), ``reverse_fallback`` (bound methods, partials, constructors,
  callable objects), ``item_reads``, ``star_calls``, ``accumulate``,
  ``single_use``;
- specialised calls, the hot path: ``scalar_paths`` (floats and numpy
  scalars; the flags saying which fast paths hold), ``array_arithmetic`` and
  ``inline_arithmetic`` (operators on float arrays), ``lean_rules`` (numpy's
  functions on float64 arrays);
- forward mode: ``forward`` (``fcall``), ``forward_arithmetic``,
  ``forward_rules``;
- the rules of what the transform emits: ``rules_containers``,
  ``rules_objects`` (attributes, ``super()``), ``rules_item_writes`` (item
  writes, ``append``, ``x op= y``), ``rules_iteration``, ``rules_callbacks``,
  ``control``, ``writers``, ``fused_regions``;
- Python's semantics: ``attribute_routes`` (properties, descriptors,
  ``__getattr__``: the user code an attribute access runs), ``dunders``
  (operators on user classes), ``wrappers`` (callables standing for a
  function), ``plain_calls`` (library code run as plain Python; what is
  library code: ``library_code``; what it may not do: ``plain_checks``; its
  Python functions: ``plain_functions``), ``keywords``;
- objects and in-place writes: ``state`` (derivatives kept by identity),
  ``ownership``, ``buffer``, ``checks``;
- ``nested_kernels``: the kernels nested differentiation (``ad.higher``)
  differentiates, ``reverse_over_forward`` among them;
- ``config`` (``ADConfig``), ``tracebacks`` (errors that show the user's line),
  ``rules_check``.
"""
