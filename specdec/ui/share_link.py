"""Links that carry a state, wired: the page's load event reads the link's query parameters (url_state.py) into
the sidebar, the prompt and the tour, and restores the tour's records from the browser's storage; "Copy link"
writes the current configuration into the address bar and the clipboard; a tour step puts its exercise there
(the tour's `share_query`). A link's problems are one visible note above the tour, never an error."""
from __future__ import annotations

import json

from specdec.ui.session import Session
from specdec.ui.tabs import tour
from specdec.ui.tabs.exercises import EXERCISES
from specdec.ui.tabs.tour_state import TourState, from_store
from specdec.ui.url_state import FIELDS, PASSED_ON, LinkSchema, decode_link, encode_link
from specdec.ui.wiring import on

import gradio as gr

LINKED = tour.SETTINGS  # what Copy link reads: what an exercise sets
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


def page_load(session: Session, state: TourState, stored, schema: LinkSchema, request: gr.Request = None) -> dict:
    """The page opens: the tour's records come back from the browser's storage, then the link's exercise (as its
    step button would load it) and the link's settings over it."""
    restored = from_store(stored)
    state.observations, state.predictions = restored.observations, restored.predictions
    state.checks, state.revealed = restored.checks, restored.revealed
    params = dict(request.query_params) if request is not None else {}
    decoded = decode_link(params, schema)
    update = tour.load_exercise(session, state, decoded.exercise) if decoded.exercise else tour.lesson_view(
        session, state)
    update.update(decoded.values)
    if "target" in decoded.values:
        update.update(tour.preset_for(decoded.values["target"]))
    if decoded.values:
        update.update(target_custom="", draft_custom="")  # they would override the link's dropdowns
    update.pop("share_query", None)  # the address keeps the link as opened
    update.pop("tour_store", None)  # the browser keeps what it has (nothing here is new)
    update["link_note"] = note_of(decoded.notes, bool(decoded.exercise or decoded.values))
    return update


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


def wire_links(c: dict, session, load_trigger, examples) -> None:
    """The page's load event, the address bar following a tour step, and Copy link. `examples`: the example
    prompts, in the order the page shows them (a link names one by its number)."""
    schema = schema_of(c, examples)
    quiet = dict(api_visibility="private", concurrency_limit=None)
    names = (*tour.reset_values(c), "tabs", "tour_box", "tour_question", "tour_answer", "tour_prediction",
             "share_query", "link_note", "tour_progress", *(f"tour_{e.key}" for e in EXERCISES), "tour_compare",
             "tour_state", "tour_store", "target_custom", "draft_custom")
    outputs = {name: c[name] for name in dict.fromkeys(names) if name in c}

    def load(session_value, state, stored, request: gr.Request):
        return page_load(session_value, state, stored, schema, request)

    on(load_trigger, load, [session, c["tour_state"], c["tour_store"]], outputs, **quiet)
    c["share_query"].change(None, [c["share_query"]], None, js=SET_URL_JS, api_visibility="private")
    if "share_btn" in c:
        copied = on(c["share_btn"].click, lambda state, *values: copy_link(state, schema, *values),
                    [c["tour_state"], *(c[name] for name in LINKED)],
                    {n: c[n] for n in ("share_query", "share_note", "share_url")}, **quiet)
        copied.then(None, [c["share_query"]], [c["share_url"]], js=COPY_JS, api_visibility="private")
