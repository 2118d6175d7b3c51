"""Which sub-model of a model file serves a query: its precursor type, else the type its ion mode implies.

A model file holds one sub-model per precursor type it was trained on (:mod:`._submodels`). A query is routed by
its :class:`~._adducts.PrecursorIon` (adduct, ion mode and charge as the file gives them):

- a query naming an adduct the model was trained on is served by that type's sub-model;
- a query without an adduct is taken as the default type of its polarity (:data:`DEFAULT_TYPES`: ``[M+H]+`` for a
  positive, ``[M-H]-`` for a negative singly charged ion), said in ``detail``; without an ion mode or a charge either,
  as the default type of the model's only polarity, else status ``unknown ion mode``;
- a multiply charged query gets status ``unsupported charge`` (never ``[M+H]+``) unless the model has a sub-model
  of that charge, under either ``--adduct-policy``: the cross-validation that chose the mapping below
  (``reports/metabolites_ion_modes.md``) had no multiply charged training spectra to support ranking them with a
  singly charged sub-model, whose fragments are singly charged;
- any other type gets status ``unsupported adduct`` naming the model's types, or under ``--adduct-policy assume``
  is ranked by the sub-model :data:`ASSUME_MAPPING` names (else by the default type of its polarity), the neutral
  mass still computed from the query's own adduct.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..chemistry._adducts import AdductError, parse_adduct
from ..defaults import DEFAULT_TYPES

#: Sub-model that ranks a rarer precursor type under ``--adduct-policy assume`` (the neutral mass is always the
#: query's own adduct's). Types not listed go to the default type of their polarity (:data:`DEFAULT_TYPES`).
ASSUME_MAPPING_TEXT = {
    "[M+Na]+": "[M+H]+", "[M+NH4]+": "[M+H]+", "[M+K]+": "[M+H]+", "[M-H2O+H]+": "[M+H]+",
    "[M+H-H2O]+": "[M+H]+", "[M]+": "[M+H]+",
    "[M+FA-H]-": "[M-H]-", "[M+HCOO]-": "[M-H]-", "[M+Cl]-": "[M-H]-", "[M+CH3COO]-": "[M-H]-",
    "[M+CH3COOH-H]-": "[M-H]-", "[M-H2O-H]-": "[M-H]-", "[M]-": "[M-H]-",
}


def _canonical_mapping(mapping):
    """The mapping keyed by canonical adduct names (texts the adduct reader cannot read are left out)."""
    out = {}
    for source, target in mapping.items():
        try:
            out[parse_adduct(source).name] = parse_adduct(target).name
        except AdductError:
            continue
    return out


ASSUME_MAPPING = _canonical_mapping(ASSUME_MAPPING_TEXT)


def polarity(precursor_type):
    """``"positive"`` or ``"negative"`` of a canonical precursor type."""
    return parse_adduct(precursor_type).ion_mode


@dataclass(frozen=True)
class Route:
    """Where one query goes.

    Attributes
    ----------
    status : str
        ``"ok"`` or why the query is not scored (``unsupported adduct``, ``unsupported charge``, ``unknown
        adduct``, ``unknown ion mode``).
    detail : str
        What was assumed or why it was refused (one line; ``""`` when the query's own type is served).
    adduct : Adduct or None
        The query's precursor ion type (its own, or the assumed one): its neutral mass is computed from it. A
        refused query keeps the type it was refused as (its own, or the one assumed for it, said in ``detail``);
        ``None`` when no type was read or assumed.
    submodel : str or None
        Canonical precursor type of the sub-model that ranks it.
    """

    status: str
    detail: str = ""
    adduct: object = None
    submodel: str | None = None


def _types_text(model_types):
    return ", ".join(sorted(model_types))


def _charge_text(charge):
    return f"{abs(charge)}{'+' if charge > 0 else '-'}"


def _assumed(adduct, model_types, policy, detail_prefix=""):
    """Route of an adduct the model has no sub-model of (``adduct_policy`` decides; multiply charged: refused)."""
    if abs(adduct.charge) > 1 and all(abs(parse_adduct(t).charge) != abs(adduct.charge) for t in model_types):
        return Route("unsupported charge", f"{detail_prefix}{adduct.name}: charge {_charge_text(adduct.charge)}; "
                                           f"the model serves {_served(model_types)}", adduct)
    if policy == "assume":
        target = ASSUME_MAPPING.get(adduct.name) or DEFAULT_TYPES[adduct.ion_mode]
        if target not in model_types:
            # a model without its polarity's default type: its only type of that polarity, if it has one
            same = sorted(t for t in model_types if polarity(t) == adduct.ion_mode)
            target = same[0] if len(same) == 1 else None
        if target is not None:
            return Route("ok", f"{detail_prefix}warning: {adduct.name} ranked with the {target} sub-model "
                               "(--adduct-policy assume)", adduct, target)
    return Route("unsupported adduct", f"{detail_prefix}{adduct.name}; model: {_types_text(model_types)}", adduct)


def _served(model_types):
    charges = {abs(parse_adduct(t).charge) for t in model_types}
    return ("singly charged " if charges == {1} else "") + _types_text(model_types)


def route_query(ion, model_types, policy="refuse", adduct_text=None):
    """The :class:`Route` of a query (see the module docstring).

    Parameters
    ----------
    ion : PrecursorIon
        ``adduct`` (Adduct or None), ``ion_mode`` ("positive" / "negative" / None), ``charge`` (signed int or
        None), ``problem`` ("" or one line).
    model_types : collection of str
        Canonical precursor types of the model's sub-models.
    policy : {"refuse", "assume"}
    adduct_text : str, optional
        The adduct text as the file gives it (named in the detail when it cannot be read).

    Returns
    -------
    Route
    """
    model_types = set(model_types)
    if ion.problem:
        return Route("unknown adduct", ion.problem)
    if ion.adduct is not None:
        if ion.adduct.name in model_types:
            return Route("ok", "", ion.adduct, ion.adduct.name)
        return _assumed(ion.adduct, model_types, policy)
    if adduct_text:  # text present but unreadable, without a problem said: say it here
        return Route("unknown adduct", f"{adduct_text!r} is not an adduct such as [M+H]+ or [M-H]-")
    polarities = {polarity(t) for t in model_types}
    mode = ion.ion_mode
    given = ("no adduct, ion mode or charge given" if ion.unsigned_charge is None
             else f"no adduct or ion mode given and charge {ion.unsigned_charge} has no sign")
    if ion.unread_ion_mode:  # the file's ion-mode field was read, and named neither mode: say so
        given += f" (ion mode {ion.unread_ion_mode!r} is neither positive nor negative)"
    if mode is None:
        if len(polarities) != 1:
            return Route("unknown ion mode", f"{given} and the model serves both polarities "
                                             f"({_types_text(model_types)}): state it with --ion-mode (ion_mode)")
        mode = next(iter(polarities))
        reason = f"{given}: assumed {DEFAULT_TYPES[mode]} (the model's only polarity)"
    elif ion.ion_mode_assumed:
        reason = f"{given}: assumed {DEFAULT_TYPES[mode]} ({mode} ion mode from --ion-mode)"
    else:
        reason = f"no adduct given: assumed {DEFAULT_TYPES[mode]} ({mode} ion mode)"
    size = abs(ion.charge) if ion.charge else 1
    if size > 1:
        sign = "+" if mode == "positive" else "-"
        assumed = parse_adduct(f"[M{sign}{size}H]{size}{sign}")
        said = (f"charge {size}{sign} (no sign in the file: {mode} ion mode from --ion-mode)"
                if ion.ion_mode_assumed and ion.unsigned_charge else f"charge {size}{sign}")
        if policy == "assume":
            return _assumed(assumed, model_types, policy, f"no adduct given: {said} assumed {assumed.name}; ")
        return Route("unsupported charge", f"{said}; the model serves {_served(model_types)}")
    default = parse_adduct(DEFAULT_TYPES[mode])
    if default.name in model_types:
        return Route("ok", reason, default, default.name)
    if mode not in polarities:  # refused as the type it is taken as (shown in the adduct column, said here)
        return Route("unsupported adduct", f"{reason}; model: {_types_text(model_types)}", default)
    return _assumed(default, model_types, policy, "no adduct given: ")
