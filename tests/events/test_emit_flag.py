"""`tunegate check/lint --emit-event`: one event on the wire when the data passed, a clear exit 2 (an environment
error, not a bug) when no Prefect API takes it, nothing sent when the data failed, and no record text in what is sent.

The receiving end here is a plain HTTP listener on 127.0.0.1 that records what arrives at
`/api/events` (the route a Prefect server takes events on); the end-to-end test sends to a real server.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.paths import ROOT
from tunegate.dataset.fingerprint import fingerprint_file

QUICKSTART = ROOT / "examples" / "quickstart.yaml"
DATA = ROOT / "examples" / "data"


class Recorder(BaseHTTPRequestHandler):
    received: list[tuple[str, object]] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).received.append((self.path, json.loads(body or b"null")))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def listener():
    Recorder.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api", Recorder.received
    server.shutdown()
    server.server_close()


def tunegate(args: list[str], tmp_path, api_url: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), TUNEGATE_LOG_FILE=str(tmp_path / "tunegate.log"))
    if api_url:
        # The listener is not a Prefect server: it hands out no CSRF token, so the client asks for none.
        env.update(PREFECT_API_URL=api_url, PREFECT_CLIENT_CSRF_SUPPORT_ENABLED="false")
    return subprocess.run([sys.executable, "-m", "tunegate", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_check_sends_one_dataset_event_with_the_specs_path_and_the_data_digests(tmp_path, listener):
    url, received = listener
    run = tunegate(["check", str(QUICKSTART), "--emit-event", "--json"], tmp_path, url)
    assert run.returncode == 0, run.stderr
    json.loads(run.stdout)  # stdout stays the one JSON document; the note goes to stderr
    assert "tunegate: sent tunegate.dataset.version tunegate.dataset." in run.stderr
    ((path, body),) = received
    assert path == "/api/events"
    (event,) = body
    assert event["event"] == "tunegate.dataset.version"
    assert event["payload"]["spec_path"] == "examples/quickstart.yaml"  # relative to the project root
    for role in ("train", "validation"):
        assert event["payload"]["data"][role]["digest"] == fingerprint_file(DATA / f"{role}.jsonl").digest
    sent = json.dumps(received)  # and no record of the data travels with it
    for line in (DATA / "train.jsonl").read_text().splitlines():
        for message in json.loads(line)["messages"]:
            if len(message.get("content") or "") > 12:
                assert message["content"] not in sent


def test_lint_sends_the_files_digests_for_the_spec_named_with_spec(tmp_path, listener):
    url, received = listener
    files = [str(DATA / "train.jsonl"), str(DATA / "validation.jsonl")]
    run = tunegate(["lint", "--emit-event", "--spec", str(QUICKSTART), *files], tmp_path, url)
    assert run.returncode == 0, run.stderr
    ((_, (event,)),) = received
    assert event["payload"]["spec_path"] == "examples/quickstart.yaml"  # relative to the project root
    assert {d["digest"] for d in event["payload"]["data"].values()} == {
        fingerprint_file(DATA / n).digest for n in ("train.jsonl", "validation.jsonl")}


def test_data_that_fails_sends_nothing_and_says_so(tmp_path, listener, data_dir):
    url, received = listener
    run = tunegate(["check", str(data_dir / "flows" / "bad_data.yaml"), "--emit-event"], tmp_path, url)
    assert run.returncode == 1
    assert "no event sent: the gate rejected" in run.stderr
    lint = tunegate(["lint", "--emit-event", "--spec", str(QUICKSTART), str(data_dir / "flows" / "bad_train.jsonl")],
                    tmp_path, url)
    assert lint.returncode == 1 and "no event sent: the data did not pass" in lint.stderr
    assert received == []


def test_no_prefect_api_configured_is_exit_2_after_the_report_with_the_setting_to_set(tmp_path):
    run = tunegate(["check", str(QUICKSTART), "--emit-event"], tmp_path, None)
    assert run.returncode == 2 and "bug" not in run.stderr
    assert "approved" in run.stdout.lower() or "passed" in run.stdout.lower()  # the verdict was shown first
    assert "set PREFECT_API_URL" in run.stderr and "Traceback" not in run.stderr


def test_an_unreachable_prefect_api_is_exit_2_naming_the_url_not_a_traceback(tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/api"
    run = tunegate(["check", str(QUICKSTART), "--emit-event"], tmp_path, url)
    assert run.returncode == 2 and "bug" not in run.stderr
    assert f"the Prefect API at {url} did not take the event" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize("args", [["check", "--train", str(DATA / "train.jsonl"), "--emit-event"],
                                  ["lint", "--emit-event", str(DATA / "train.jsonl")],
                                  ["lint", "--emit-event", "--spec", "/dev/zero", str(DATA / "train.jsonl")],
                                  ["check", str(QUICKSTART), "--train", str(DATA / "train.jsonl"), "--emit-event"]])
def test_an_event_without_a_spec_of_its_own_data_is_a_usage_error(tmp_path, args):
    run = tunegate(args, tmp_path, "http://127.0.0.1:9/api")
    assert run.returncode == 2 and "--emit-event" in run.stderr


def test_the_help_says_the_event_is_sent_only_when_the_data_passed(tmp_path):
    for command in ("check", "lint"):
        text = " ".join(tunegate([command, "--help"], tmp_path, None).stdout.split())
        assert "Sent only when the data passed" in text


def test_without_prefect_installed_the_flag_is_a_usage_error_naming_the_extra(tmp_path):
    # sys.modules['prefect'] = None is how Python marks a package absent: find_spec says None, import fails.
    code = ("import sys; sys.modules['prefect'] = None\nfrom tunegate.cli.main import main\n"
            f"sys.exit(main(['check', {str(QUICKSTART)!r}, '--emit-event']))")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api",
                              "TUNEGATE_LOG_FILE": str(tmp_path / "log")})
    assert run.returncode == 2
    assert "pip install 'tunegate[orchestrate]'" in run.stderr and "Traceback" not in run.stderr
