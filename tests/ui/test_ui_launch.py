"""Server options (flags and environment) and the callback-to-components adapter."""
from specdec.models import presets
from specdec.ui.launch import parse_options
from specdec.ui.sidebar import models_note, pick_preset
from specdec.ui.wiring import bind

import gradio as gr


def test_defaults_bind_localhost_7860():
    options = parse_options([], env={})
    assert (options.host, options.port, options.share, options.allow_local_paths) == ("127.0.0.1", 7860, False, True)


def test_environment_sets_host_port_and_share():
    options = parse_options([], env={"SPECDEC_HOST": "0.0.0.0", "SPECDEC_PORT": "8080", "SPECDEC_SHARE": "1"})
    assert (options.host, options.port, options.share) == ("0.0.0.0", 8080, True)


def test_flags_win_over_environment():
    options = parse_options(["--port", "9000", "--no-share"], env={"SPECDEC_PORT": "8080", "SPECDEC_SHARE": "1"})
    assert (options.port, options.share) == (9000, False)


def test_on_a_space_the_app_listens_publicly_and_refuses_local_paths():
    options = parse_options([], env={"SPACE_ID": "user/specdec-lab"})
    assert options.host == "0.0.0.0" and not options.allow_local_paths


def test_bind_orders_outputs_and_skips_what_a_callback_leaves_out():
    with gr.Blocks():
        a, b = gr.HTML(), gr.HTML()
    fn, components = bind(lambda x: {"b": x}, {"a": a, "b": b})
    first, second = fn(1)
    assert components == [a, b] and second == 1 and first == gr.skip()


def test_bind_returns_a_lone_output_as_its_value_not_a_tuple():
    with gr.Blocks():
        a = gr.HTML()
    fn, _ = bind(lambda: {}, {"a": a})
    assert fn() == gr.skip()


def test_bind_keeps_generators_streaming_and_the_signature():
    def callback(session, prompt):
        yield {"a": prompt}
        yield {"a": prompt * 2}
    with gr.Blocks():
        a = gr.HTML()
    fn, _ = bind(callback, {"a": a})
    assert [out for out in fn(None, "x")] == ["x", "xx"]
    import inspect
    assert list(inspect.signature(fn).parameters) == ["session", "prompt"]


def test_a_pair_preset_fills_target_and_draft_and_leaves_the_sweeps_drafts_to_the_sidebar():
    picked = pick_preset("smollm2-1.7b")
    assert picked == {"target": "HuggingFaceTB/SmolLM2-1.7B-Instruct", "draft": "HuggingFaceTB/SmolLM2-135M-Instruct"}


def test_the_notes_follow_the_target_however_it_was_chosen():
    note = models_note("HuggingFaceTB/SmolLM2-1.7B-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct")
    assert "Hugging Face Hub" in note["preset_note"]
    lab = models_note(presets.LAB_TARGET, presets.LAB_DRAFT)
    assert "bundled" in lab["preset_note"] and "0.3 GB" not in lab["preset_note"]
