"""Take-aways: the session's HTML report (one self-contained, well-formed file) and the plots' SVG buttons."""
import re
from html.parser import HTMLParser
from pathlib import Path

from specdec.ui.controls import add_svg_buttons
from specdec.ui.layout import build_app
from specdec.ui.session import Session
from specdec.ui.tabs.generate.callbacks import Lab, build_report, download_report
from specdec.ui.views.report import run_figure_set

import gradio as gr
import pytest
from plotly.offline import get_plotlyjs

from tests.ui.tabs.tour.test_ui_tour import sweep_rows
from tests.ui_fakes import FakeEngine

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
ARGS = dict(prompt="def f(x):", clean_whitespace=False, target="lab-target", draft="lab-draft", target_custom="",
            draft_custom="", k=4, temperature=0.0, top_p=1.0, top_k=0, max_new_tokens=24, seed=0)


class Structure(HTMLParser):
    """Open/close balance of the elements, and every attribute and tag seen."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.tags, self.attributes = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes.extend(attrs)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
        else:
            self.stack.pop()


def parse(html: str) -> Structure:
    parser = Structure()
    parser.feed(html)
    parser.close()
    return parser


@pytest.fixture(scope="module")
def lab():
    return Lab(FakeEngine(), token_interval_s=0.0, heavy_interval_s=0.0, settle_s=0.0)


@pytest.fixture(scope="module")
def session(lab):
    session = Session()
    list(lab.generate(session, **ARGS))
    return session


@pytest.fixture(scope="module")
def report(lab, session):
    return build_report(lab, session)


def test_the_report_is_one_well_formed_html_document(report):
    structure = parse(report)
    assert report.startswith("<!DOCTYPE html>") and structure.tags[:2] == ["html", "head"]
    assert structure.errors == [] and structure.stack == []


def test_the_report_loads_nothing_from_the_network(report):
    structure = parse(report)
    linked = [value for name, value in structure.attributes if name in ("src", "href", "data", "action") and value]
    assert linked == [] and "link" not in structure.tags and "iframe" not in structure.tags
    outside_plotly = report.replace(get_plotlyjs(), "")
    assert "http://" not in outside_plotly and "https://" not in outside_plotly and "@import" not in outside_plotly


def test_plotly_js_is_inlined_exactly_once(report):
    assert report.count(get_plotlyjs()) == 1


def test_every_run_figure_is_embedded_as_a_plotly_div(report, session):
    assert report.count("Plotly.newPlot(") == len(run_figure_set(session.last_run)) >= 4


def test_the_report_states_the_run_settings_and_the_prompt(report):
    assert "<td>lab-target</td>" in report and "<td>lab-draft</td>" in report and "def f(x):" in report
    assert re.search(r"<td>max new tokens</td>\s*<td>24</td>", report)


def test_the_report_gives_the_measured_speedup_with_its_interval(report, session):
    estimate = session.last_run.estimate
    assert "95% interval" in estimate.describe() and estimate.describe() in report


def test_the_report_shows_the_runs_tokens_coloured_by_fate_with_the_legend(report):
    assert 'class="tok tok-accepted"' in report and 'class="tok tok-rejected"' in report and "tok-legend" in report


def test_the_report_has_the_metric_cards_steps_table_and_definitions(report):
    assert 'data-metric="acceptance"' in report and "verify ms</th>" in report and "<dt>alpha</dt>" in report


def test_the_report_lists_every_measurement_of_the_session(report):
    assert "Every measurement in this session" in report and report.count("<td>lab-draft</td>") >= 2


def test_the_report_includes_the_sessions_sweep(lab, session):
    session.sweep_rows = sweep_rows("lab-draft")
    try:
        report = build_report(lab, session)
    finally:
        session.sweep_rows = []
    assert "<h2>Sweep</h2>" in report and "best measured K=" in report
    assert report.count("Plotly.newPlot(") > len(run_figure_set(session.last_run))


def test_the_prompt_is_escaped(lab):
    session = Session()
    list(lab.generate(session, **{**ARGS, "prompt": "<script>alert(1)</script>"}))
    report = build_report(lab, session)
    assert "<script>alert(1)" not in report and "&lt;script&gt;alert(1)" in report


def test_a_stopped_run_reports_that_no_speedup_was_measured(lab, session):
    session.last_run.estimate, estimate = None, session.last_run.estimate
    try:
        report = build_report(lab, session)
    finally:
        session.last_run.estimate = estimate
    assert "No speedup measured" in report


def test_the_download_button_writes_the_report_as_an_html_file(lab, session):
    update = download_report(lab, session)
    path = Path(update["report_file"])
    assert path.suffix == ".html" and path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_the_download_button_without_a_run_says_to_run_first(lab):
    update = download_report(lab, Session())
    assert "No run to report yet" in update["error"] and "report_file" not in update


def svg_scripts(config: dict) -> dict[int, str]:
    """The JS of every SVG button's click, by the button's id."""
    ids = {b["id"] for c in config["components"] if c["type"] == "plot" for b in c["props"]["buttons"]
           if b["value"] == "SVG"}
    return {t[0]: d["js"] for d in config["dependencies"] for t in d["targets"] if t[0] in ids}


def test_every_plot_with_an_elem_id_gets_an_svg_button_that_downloads_it_in_the_browser():
    with gr.Blocks() as demo:
        c = {"named": gr.Plot(elem_id="named-plot"), "anonymous": gr.Plot(), "text": gr.Textbox()}
        add_svg_buttons(c)
    scripts = list(svg_scripts(demo.get_config_file()).values())
    assert [b.value for b in c["named"].buttons] == ["SVG"] and c["anonymous"].buttons == []
    assert len(scripts) == 1 and "#named-plot" in scripts[0] and "format: 'svg'" in scripts[0]


def test_the_app_gives_every_plot_an_svg_button():
    config = build_app(Lab(FakeEngine())).get_config_file()
    plots = [c for c in config["components"] if c["type"] == "plot"]
    scripts = svg_scripts(config)
    assert plots and len(scripts) == len(plots) and all("format: 'svg'" in js for js in scripts.values())
