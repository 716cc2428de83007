"""The names the generated code reads, and the functions behind them.

The ANF pass rewrites containers, attribute access, unpacking and in-place
updates into calls of helpers (``rules_containers``, ``rules_iteration``,
``rules_objects``), each an ordinary function with an ``rrule`` under ad's
own ``ADConfig``; the reverse pass adds its runtime (``reverse``) and fast
paths (``scalar_paths``, ``array_arithmetic``). This table binds them all; codegen gives each a closure cell.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ad.runtime import reverse as _runtime
from ad.runtime import rules_iteration as _rules_iteration
from ad.runtime.array_arithmetic import FAST_HELPERS
from ad.runtime.constant_reads import (
    global_get,
    global_set,
    unfollowed,
    unfollowed_call,
)
from ad.runtime.context_managers import CONTEXT_HELPERS
from ad.runtime.control import CONTROL_HELPERS
from ad.runtime.forward import FORWARD_NAMES
from ad.runtime.forward_arithmetic import FAST_HELPERS as FORWARD_ARITHMETIC
from ad.runtime.fused_regions import NOVALUE, fused_fit, fused_full, fused_seed, fused_shape
from ad.runtime.inline_arithmetic import mul_adjoint, pow_adjoint
from ad.runtime.item_reads import ITEM_HELPERS
from ad.runtime.obtained_holders import entries as obtained_entries
from ad.runtime.obtained_holders import unchanged as obtained_unchanged
from ad.runtime.ownership import own
from ad.runtime.plain_functions import plain_entry
from ad.runtime.rules_containers import (
    apply,
    aslist,
    concat_list,
    concat_tuple,
    merge_dicts,
    merge_kw,
    mk_dict,
    mk_list,
    mk_tuple,
    unpack,
    unpack_star,
)
from ad.runtime.rules_deletes import delitem, last_key
from ad.runtime.rules_item_writes import append, inplace_fast, inplace_helper, setitem
from ad.runtime.rules_objects import (
    follow_after,
    follow_written,
    getattr_,
    getattr_object,
    holder_print,
    setattr_,
    setattr_object,
    setdict,
    super_init,
)
from ad.runtime.scalar_paths import FLAGS, SCALAR_FUNCTIONS, scalar_adjoint
from ad.runtime.star_calls import rcall_star, rcall_star_tail
from ad.runtime.state import Stateful, follow
from ad.runtime.writers import in_place, method_form, writer
from ad.transform import bindings
from ad.transform.anf_base import BINOPS, UNARYOPS
from rulescore import NoTangent, ZeroTangent

__all__ = ["FORWARD_HELPERS", "HELPERS"]

_Z = ZeroTangent()
_NO = NoTangent()


HELPERS: dict[str, Any] = {
    "_ad_rcall": _runtime.rcall,
    "_ad_rcall_masked": _runtime.rcall_masked,
    "_ad_rcall_tail": _runtime.rcall_tail,
    "_ad_rcall_kw": _runtime.rcall_kw,
    "_ad_rcall_star": rcall_star,
    "_ad_rcall_star_tail": rcall_star_tail,
    "_ad_acc": _runtime.acc,
    "_ad_Z": _Z,
    "_ad_NoTangent": _NO,
    "_ad_unpack_error": _runtime.unpack_error,
    "_ad_argument_write": _runtime.argument_write,
    "_ad_own": own,
    "_ad_Stateful": Stateful,
    "_ad_kw_ct": _runtime.kw_ct,
    "_ad_field": _runtime.field_ct,
    "_ad_fn_tangent": _runtime.fn_tangent,
    "_ad_tuple_ct": _runtime.tuple_ct,
    "_ad_getattr": getattr_,
    "_ad_setattr": setattr_,
    # the object protocol spelled out (transform.protocols)
    "_ad_getattr_object": getattr_object,
    "_ad_setattr_object": setattr_object,
    "_ad_setdict": setdict,
    "_ad_super_init": super_init,
    "_ad_setitem": setitem,
    # numpy's in-place functions (transform.writers)
    "_ad_writer": writer,
    "_ad_method_form": method_form,
    "_ad_in_place": in_place,
    "_ad_append": append,
    "_ad_delitem": delitem,
    "_ad_last_key": last_key,
    "_ad_next": _rules_iteration.next_of,
    "_ad_next_or": _rules_iteration.next_or,
    "_ad_follow": follow,
    "_ad_follow_written": follow_written,
    "_ad_holder_print": holder_print,
    "_ad_follow_after": follow_after,
    "_ad_obtained_entries": obtained_entries,
    "_ad_obtained_unchanged": obtained_unchanged,
    "_ad_unfollowed": unfollowed,
    "_ad_unfollowed_parameter": unfollowed,
    "_ad_unfollowed_call": unfollowed_call,
    "_ad_global_get": global_get,
    "_ad_global_set": global_set,
    "_ad_unpack": unpack,
    "_ad_apply": apply,
    "_ad_merge_kw": merge_kw,
    "_ad_merge_dicts": merge_dicts,
    "_ad_unpack_star": unpack_star,
    "_ad_mk_tuple": mk_tuple,
    "_ad_mk_list": mk_list,
    "_ad_mk_dict": mk_dict,
    "_ad_concat_tuple": concat_tuple,
    "_ad_concat_list": concat_list,
    "_ad_aslist": aslist,
    "_ad_op_getitem": operator.getitem,
    "_ad_mul_adjoint": mul_adjoint,
    "_ad_SF": SCALAR_FUNCTIONS,
    "_ad_scalar_adjoint": scalar_adjoint,
    "_ad_pow_adjoint": pow_adjoint,
    # fused regions (transform.fuse)
    "_ad_FLAGS": FLAGS,
    "_ad_NOVALUE": NOVALUE,
    "_ad_np": np,
    "_ad_ndarray": np.ndarray,
    "_ad_f64": np.dtype(np.float64),
    "_ad_f32": np.dtype(np.float32),
    "_ad_slice": slice,
    "_ad_fused_seed": fused_seed,
    "_ad_fused_shape": fused_shape,
    "_ad_fused_fit": fused_fit,
    "_ad_fused_full": fused_full,
    # builtins the generated code calls, under names a user's local cannot shadow
    "_ad_type": type,
    "_ad_len": len,
    "_ad_range": range,
    "_ad_reversed": reversed,
    "_ad_isinstance": isinstance,
    "_ad_hasattr": hasattr,
    "_ad_float": float,
    "_ad_int": int,
    "_ad_ValueError": ValueError,
}
HELPERS.update(FAST_HELPERS)
HELPERS.update(ITEM_HELPERS)  # list and dict reads on a lean tape (_fast_items)
HELPERS.update(CONTROL_HELPERS)  # try, with and match (transform.patterns, tracking)
HELPERS.update(CONTEXT_HELPERS)  # with: a user class's __enter__ (transform.anf_control)
for _op in [*BINOPS.values(), *UNARYOPS.values()]:
    HELPERS[f"_ad_op_{_op}"] = getattr(operator, _op)
for _op in BINOPS.values():
    if _op != "matmul" or hasattr(operator, "imatmul"):
        HELPERS[f"_ad_iop_{_op}"] = inplace_helper(_op)
        if f"_ad_fasti_{_op}" in FAST_HELPERS:  # transform.inline.fast_helper
            HELPERS[f"_ad_fasti_iop_{_op}"] = inplace_fast(
                FAST_HELPERS[f"_ad_fasti_{_op}"], HELPERS[f"_ad_iop_{_op}"]
            )

#: The forward pass's table: reverse mode's names, forward mode's own, and its
#: specialised scalar arithmetic (``forward_arithmetic``).
FORWARD_HELPERS: dict[str, Any] = {**HELPERS, **FORWARD_NAMES, **FORWARD_ARITHMETIC}

bindings.bind(HELPERS, FORWARD_HELPERS, plain_entry)
