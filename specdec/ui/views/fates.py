"""A token's fate, drawn one way everywhere: its name, what it means, its colour (Okabe-Ito, colour-blind safe) and a
shape cue that reads without colour. The tokens' CSS (style.py, from fate_css), their legend (render.py), the run's
plots (plots.py) and the inspector (inspector.py) all take them from here, so a fate cannot be green in the text and
blue in a plot."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fate:
    name: str  # the CSS class is tok-<key>
    meaning: str
    color: str  # the fate's colour in the text (its mark), the legend and every plot
    cue: str  # the shape that tells it apart without colour, in words (the text's mark; in plots, `pattern`)
    pattern: str = ""  # a plot's bar pattern for it (Plotly's marker.pattern.shape)


FATES = {
    "accepted": Fate("Accepted draft token", "the draft proposed it, the target agreed", "#009E73",
                     "solid underline"),
    "rejected": Fate("Rejected draft token", "struck through where the draft proposed it", "#D55E00",
                     "struck through, dashed box", "x"),
    "unchecked": Fate("Discarded unchecked", "proposed after a rejection, never evaluated", "#D55E00",
                      "struck through, dotted box, faded", "."),
    "resampled": Fate("Resampled", "drawn by the target after a rejection (greedy: its argmax there)", "#E69F00",
                      "double underline", "-"),
    "bonus": Fate("Bonus token", "drawn by the target after all K were accepted", "#0072B2",
                  "overline, dotted outline", "/"),
    "target": Fate("Target-only token", "plain decoding, one target forward per token", "#777777", "grey box"),
}
FATE_COLORS = {key: fate.color for key, fate in FATES.items()}

# Colours of what is not a fate (a decoder, a distribution, the theory): none of them is a fate's colour, except that
# the target alone is drawn like its tokens (plain decoding).
ROLE_COLORS = {"target": FATES["target"].color, "spec": "#56B4E9", "draft": "#56B4E9", "theory": "#CC79A7",
               "k": "#000000"}


def _rgba(color: str, alpha: float) -> str:
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha:g})"


def fate_css() -> str:
    """The tokens' classes: each fate's tint, mark and shape cue in its colour (style.CSS includes it)."""
    c = FATE_COLORS
    return f"""
.tok-accepted {{ background: {_rgba(c['accepted'], .18)}; text-decoration: underline solid {c['accepted']} 2px;
  text-underline-offset: 3px; }}
.tok-rejected {{ background: {_rgba(c['rejected'], .16)}; text-decoration: line-through {c['rejected']} 2px;
  border: 1px dashed {c['rejected']}; color: #A34400; }}
.tok-unchecked {{ background: transparent; opacity: .55; text-decoration: line-through {c['unchecked']} 1px;
  border: 1px dotted {c['unchecked']}; }}
.tok-resampled {{ background: {_rgba(c['resampled'], .25)}; text-decoration: underline double {c['resampled']} 3px;
  text-underline-offset: 3px; }}
.tok-bonus {{ background: {_rgba(c['bonus'], .18)}; outline: 1px dotted {c['bonus']};
  text-decoration: overline {c['bonus']} 2px; }}
.tok-target {{ background: {_rgba(c['target'], .16)}; }}
"""
