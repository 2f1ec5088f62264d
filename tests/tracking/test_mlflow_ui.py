"""The experiment opens as model training from every way in, in MLflow's own UI (`mlflow ui`, a fresh
headless Chromium): the link `tunegate runs` prints, and MLflow's home page.

MLflow 3.17's UI takes an experiment's layout from its GenAI / Model training switch (the
`workflowType` URL parameter, else the browser's last choice, else GenAI), not from the
`mlflow.experimentKind` tag: from the home page a fresh browser lands in the GenAI layout. There,
the experiment's description (set by tunegate) is shown and carries the link into the runs.
"""
from __future__ import annotations

import shutil

import pytest

from tests.support.browser import Chromium, chromium_binary
from tests.support.mlflow_ui import MlflowUi
from tests.support.tracking import DATA, report, steps
from tunegate.spec.check import load_spec
from tunegate.tracking.runs_listing import ui_hint
from tunegate.tracking.session import close_session, log_report, open_session
from tunegate.tracking.store import open_client

# ~45 s (mlflow ui, two fresh browsers): `make test-nightly`.
pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.nightly]
TRAINING_LAYOUT = "document.body && document.body.innerText.includes('matching runs')"


@pytest.fixture(scope="module")
def ui(tmp_path_factory, store_template):
    """A store as a sweep leaves it (a parent, two candidates), under `mlflow ui`."""
    if chromium_binary() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run installs it)")
    folder = tmp_path_factory.mktemp("mlflow-ui")
    for name in ("spec.yaml", "train.jsonl", "validation.jsonl"):
        shutil.copyfile(DATA / name, folder / name)
    shutil.copyfile(store_template, folder / "mlflow.db")
    approved = report("approved")
    session = open_session(load_spec(folder / "spec.yaml"), folder / "spec.yaml", "flow-1", "sweep",
                           lambda _: "COMPLETED", approved.fingerprints["validation"]["digest"],
                           approved.fingerprints["train"]["digest"])
    for name, loss in (("r8-a16", 1.9), ("r16-a32", 1.4)):
        log_report(session, approved, load_spec(folder / "spec.yaml").model_copy(), kind="sweep candidate",
                   name=name, val_loss=loss, train_steps=steps(4), salt=name)
    close_session(session, candidates=2)
    with MlflowUi(folder / "mlflow.db") as server:
        yield server, open_client(f"sqlite:///{folder / 'mlflow.db'}")


@pytest.fixture
def browser():
    """A fresh browser for each test: MLflow remembers the last layout chosen in the browser's storage."""
    with Chromium(window="1600,900") as fresh:
        yield fresh


def test_the_link_tunegate_runs_prints_opens_the_runs_in_the_training_layout(ui, browser):
    server, client = ui
    hint = ui_hint(f"sqlite:///{server.db}", client.get_experiment_by_name("tunegate"))
    page = hint.rsplit("http://127.0.0.1:5000/", 1)[1].strip()
    opened = browser.load(f"{server.url}/{page}", settle=TRAINING_LAYOUT, wait_s=2)
    assert _training_layout(opened)


def _training_layout(page) -> bool:
    """The model-training runs page (its side bar: Runs, Models, Traces), not GenAI's (Overview, Observability...)."""
    return page.title.startswith("Runs - ") and "3 matching runs" in page.text and "Observability" not in page.text


def test_from_the_home_page_the_experiment_shows_the_link_into_its_training_runs(ui, browser):
    server, client = ui
    experiment = client.get_experiment_by_name("tunegate").experiment_id
    note = f"document.querySelector('a[href*=\"experiments/{experiment}/runs?workflowType=machine_learning\"]')"
    # What a click on the experiment in MLflow's home page opens: its page, no layout asked for.
    landed = browser.load(f"{server.url}/#/experiments/{experiment}", settle=f"!!{note}", wait_s=1,
                          script=f"document.title = {note}.getAttribute('href')")
    assert "Model training layout" in landed.text and "Observability" in landed.text  # GenAI, with the note
    # The note's link opens in a tab of its own (MLflow renders description links target=_blank).
    followed = browser.load(f"{server.url}/{landed.title}", settle=TRAINING_LAYOUT, wait_s=2)
    assert _training_layout(followed)


def test_a_sweep_s_chart_opens_as_an_image_in_mlflow_s_artifact_view(ui, browser):
    from tunegate.tracking.parent_charts import VAL_LOSS_CHART, chart_candidates

    server, client = ui
    experiment = client.get_experiment_by_name("tunegate").experiment_id
    [parent] = client.search_runs([experiment], "tags.`tunegate.kind` = 'parent'")
    chart_candidates(client, parent.info.run_id, "sweep")
    shown = f"[...document.images].some(i => i.alt === '{VAL_LOSS_CHART}' && i.complete && i.naturalWidth > 0)"
    page = browser.load(f"{server.url}/#/experiments/{experiment}/runs/{parent.info.run_id}/artifacts/{VAL_LOSS_CHART}",
                        settle=shown, wait_s=1)
    [chart] = [i for i in page.images if i["alt"] == VAL_LOSS_CHART]
    assert chart["complete"] and chart["naturalWidth"] == 500  # two candidates: the chart's narrowest, 5 inches
