"""The screen's FastAPI app (what `rcjudge serve` runs), through httpx's TestClient."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from fastapi.testclient import TestClient

from verdict.engine import build_from_inputs
from verdict.grade import grade, write_result
from verdict.model import card_to_dict
from verdict.screen.app import ScreenState, create_app
from verdict.tables import load_inputs

SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "verdict" / "schema"
                     / "verdict_card.schema.json").read_text(encoding="utf-8"))


def test_all_gold_cards_are_schema_valid(gold_dir: Path) -> None:
    inputs = load_inputs(gold_dir / "evaluation_run.jsonl", gold_dir / "task_spec.csv",
                         gold_dir / "dataset_index.csv", "RLDX-1-rc7")
    cards = [card_to_dict(c) for c in build_from_inputs(inputs)]
    assert len(cards) == 30
    for card in cards:
        jsonschema.validate(card, SCHEMA)


def test_before_new_records_the_last_round_shows(seed_cards: list[dict], tmp_path: Path,
                                                 gold_dir: Path) -> None:
    grade_file = tmp_path / "grade.json"
    client = TestClient(create_app(ScreenState(None, None, seed_cards, str(grade_file))))
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert '<section data-round="current" hidden>' in html
    assert '<section data-round="previous">' in html
    assert html.count('<details class="card"') == 7
    assert '<span id="self-grade-figure"></span>' in html
    # no cards this round, no tables: the panel's 14 checks read not run, the seven saved
    # cards' 14 each too
    assert html.count('data-state="not-run"') == 14 + 7 * 14
    write_result(grade(gold_dir), grade_file)  # the runner writes a result: figure appears
    assert '<span id="self-grade-figure">30/30</span>' in client.get("/").text
    assert client.get("/api/cards").json() == {"current": None, "previous": seed_cards}
    assert client.get("/healthz").json() == {"status": "ok"}
