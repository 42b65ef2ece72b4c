"""Links that carry a state: "Copy link" writes the current configuration into the address bar and the clipboard
(the sidebar's button, copy_link); what a link carries (LINKED), the browser-side scripts that keep the address
bar and the clipboard, and the note a link's problems become (one visible note above the tour, never an error).
The page's load event, which reads a link into the sidebar, the prompt and the tour, is the tour's
(tabs/tour/callbacks.page_load, wired with these by tabs/tour/layout.wire_links)."""
from __future__ import annotations

import json

from specdec.ui.tour_state import TourState
from specdec.ui.url_state import FIELDS, PASSED_ON, LinkSchema, encode_link

import gradio as gr

# what Copy link reads, and what every exercise sets: the prompt, the typed names (cleared) and the settings
LINKED = ("prompt", "target_custom", "draft_custom", *(f.name for f in FIELDS))
KEPT_PARAMS = json.dumps(sorted(PASSED_ON))  # the page's own parameters, kept in the address when a link is written
# The address bar follows `share_query` (a link's parameters, or "" for none), keeping ?projector=1.
SET_URL_JS = """(query) => {
  const kept = new URLSearchParams();
  const now = new URLSearchParams(window.location.search);
  for (const name of %s) { if (now.has(name)) kept.set(name, now.get(name)); }
  const params = new URLSearchParams(query || '');
  kept.forEach((value, name) => params.set(name, value));
  const text = params.toString();
  history.replaceState(history.state, '', window.location.pathname + (text ? '?' + text : ''));
  return query;
}""" % KEPT_PARAMS
# Copy link: the link (this page's address with the configuration) into the clipboard and the visible field.
COPY_JS = """(query) => {
  const url = window.location.origin + window.location.pathname + (query ? '?' + query : '');
  if (navigator.clipboard) { navigator.clipboard.writeText(url).catch(() => {}); }
  return url;
}"""


def schema_of(c: dict, examples) -> LinkSchema:
    """The link's ranges are the sidebar's own (its sliders' and the seed's limits)."""
    numeric = [f.name for f in FIELDS if f.kind in (int, float)]
    return LinkSchema(limits={name: (c[name].minimum, c[name].maximum) for name in numeric},
                      examples=tuple(examples))


def note_of(problems: list[str], applied: bool) -> str:
    if problems:
        lines = "\n".join(f"- {p}" for p in problems)
        return (f"**This link's settings could not all be used.** The rest of the page keeps its defaults:\n\n"
                f"{lines}")
    return "*Settings loaded from the link.*" if applied else ""


def copy_link(state: TourState, schema: LinkSchema, *values) -> dict:
    """The link's parameters for the page's settings (and the tour's exercise) and what it leaves out."""
    query, notes = encode_link(dict(zip(LINKED, values)), state.current, schema)
    note = " ".join(notes) or "Anyone who opens this link gets these settings."
    return {"share_query": query, "share_note": f"*{note}*", "share_url": gr.update(visible=True)}


def build_copy_link(c: dict) -> None:
    """The sidebar's "Copy link" button, the link it made (to copy by hand where the clipboard is not allowed)
    and what the link leaves out."""
    c["share_btn"] = gr.Button("Copy link to these settings", size="sm", elem_id="share-btn")
    c["share_url"] = gr.Textbox("", label="Link (copied)", visible=False, interactive=False, elem_id="share-url",
                                buttons=["copy"], lines=1, max_lines=3)
    c["share_note"] = gr.Markdown("", elem_id="share-note", elem_classes=["explain-note"])
