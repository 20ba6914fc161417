"""Which parts of ``reproduce mfa`` run: the ``sections`` setting and the configurations
(``cluster_variants``, ``synthetic_variants``) of the synthetic experiments."""

from __future__ import annotations

from ._experiment import selected_sections
from ._mfa_synthetic import VARIANTS

__all__ = ["SECTIONS", "sections", "variants"]

#: §4.5.1, §4.5.2, §4.5.3, §4.6, §4.7 and Fig 4.12 (§4.7, after each accepted epoch)
SECTIONS = ("clusters", "embedded", "spiral", "digits", "is", "trace")


def sections(config):
    """The parts to run (``sections`` resolved)."""
    return selected_sections(config.get("sections", "all"), SECTIONS)


def variants(config, name):
    """The configurations of a synthetic experiment (``cluster_variants`` or
    ``synthetic_variants``), checked against :data:`._mfa_synthetic.VARIANTS`."""
    value = config[name]
    value = [v.strip() for v in value.split(",")] if isinstance(value, str) else list(value)
    bad = [v for v in value if v not in VARIANTS]
    if bad or not value:
        raise ValueError(f"{name} must be a comma-separated list of {tuple(VARIANTS)}; "
                         f"got {config[name]!r}.")
    return value
