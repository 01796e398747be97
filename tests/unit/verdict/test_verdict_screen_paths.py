"""One rendering path: the same cards show the same check states however the screen is made.

``rcjudge verdict … --out cards.json --html screen.html`` (the tables given) and the screen
served or written from ``cards.json`` alone (``rcjudge serve`` with ``--cards``, ``rcjudge
verdict screen --cards``) must agree: the checks run when the cards were built travel with
them (``cards.checks.json``); without tables or that file every check reads 미실행 with the
reason, in the panel and on every card alike.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from fastapi.testclient import TestClient

from rcjudge.cli import main
from verdict.cli import screen_app

ARTIFACT = "RLDX-1-rc7"


def _tables(d: Path) -> list[str]:
    return ["--evaluation-run", str(d / "evaluation_run.jsonl"), "--task-spec",
            str(d / "task_spec.csv"), "--dataset-index", str(d / "dataset_index.csv")]


def _served(cards: Path, **given: str | None) -> str:
    import argparse

    args = argparse.Namespace(cards=str(cards), evaluation_run=None, task_spec=None,
                              dataset_index=None, artifact=None, previous=None,
                              grade_result="no-grade-file.json", explain_dir=None, rates=None)
    for k, v in given.items():
        setattr(args, k, v)
    with TestClient(screen_app(args)) as client:
        return client.get("/").text


STATES = {"통과": "pass", "실패": "fail", "미실행": "not-run"}


def _state(item: str) -> str:
    return STATES[re.search("통과|실패|미실행", item).group(0)]


def _panel(html: str) -> list[tuple[str, str]]:
    """(check number, its state) of the always-visible 14-check panel."""
    aside = html[html.index('<aside id="checks">'):html.index("</aside>")]
    return [(n, _state(item)) for n, item in
            re.findall(r'<li data-check="(\d+)"[^>]*>(.*?)</li>', aside, re.S)]


def _aside(html: str) -> str:
    return html[html.index('<aside id="checks">'):html.index("</aside>")]


def _card_states(html: str) -> list[str]:
    """The state of every check on every card of this round, in page order."""
    main = html[html.index('<section data-round="current"'):html.index('<aside id="checks">')]
    return [_state(item) for item in re.findall(r'<ol class="card-checks[^"]*">(.*?)</ol>',
                                                main, re.S)
            for item in re.findall(r"<li[^>]*>(.*?)</li>", item, re.S)]


def test_the_cards_alone_show_the_checks_the_built_page_shows(gold_dir: Path,
                                                              tmp_path: Path) -> None:
    cards, page = tmp_path / "cards.json", tmp_path / "screen.html"
    assert main(["verdict", *_tables(gold_dir), "--artifact", ARTIFACT, "--out", str(cards),
                 "--html", str(page)]) == 0
    built = page.read_text(encoding="utf-8")
    assert _panel(built) == [(str(n), "pass") for n in range(1, 15)]
    assert _aside(built).count("30/30") == 14
    served = _served(cards)  # what `rcjudge serve --cards cards.json` shows
    assert _panel(served) == _panel(built)
    assert _aside(served) == _aside(built)
    assert _card_states(served) == _card_states(built) == ["pass"] * (30 * 14)
    again = tmp_path / "again.html"
    assert main(["verdict", "screen", "--cards", str(cards), "--html", str(again)]) == 0
    assert _panel(again.read_text(encoding="utf-8")) == _panel(built)


def test_cards_changed_since_their_checks_or_without_them_read_not_run(
        gold_dir: Path, tmp_path: Path) -> None:
    cards = tmp_path / "cards.json"
    assert main(["verdict", *_tables(gold_dir), "--artifact", ARTIFACT,
                 "--out", str(cards)]) == 0
    assert (tmp_path / "cards.checks.json").is_file()
    doc = json.loads(cards.read_text(encoding="utf-8"))
    doc[0]["summary"] = "바꿨습니다."
    cards.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    html = _served(cards)
    assert _panel(html) == [(str(n), "not-run") for n in range(1, 15)]
    assert _card_states(html) == ["not-run"] * (30 * 14)  # the same word on every card
    assert "cards.json changed after its checks were run (cards.checks.json)" in html
    (tmp_path / "cards.checks.json").unlink()
    html = _served(cards)
    assert _panel(html) == [(str(n), "not-run") for n in range(1, 15)]
    assert "no tables given and no cards.checks.json beside the cards" in html
    # given the tables, the checks run afresh on the cards as they are now
    fresh = _served(cards, evaluation_run=str(gold_dir / "evaluation_run.jsonl"),
                    task_spec=str(gold_dir / "task_spec.csv"),
                    dataset_index=str(gold_dir / "dataset_index.csv"), artifact=ARTIFACT)
    assert _panel(fresh) == [(str(n), "pass") for n in range(1, 15)]


def test_rcjudge_serve_shows_the_cards_their_checks_and_rates(gold_dir: Path,
                                                              tmp_path: Path) -> None:
    from rcjudge.cli import build_parser
    from rcjudge.serve import build
    from tests.unit.verdict.test_verdict_screen_rates import judge_rates

    cards, rates = tmp_path / "cards.json", tmp_path / "rates.json"
    assert main(["verdict", *_tables(gold_dir), "--artifact", ARTIFACT,
                 "--out", str(cards)]) == 0
    rates.write_text(json.dumps(judge_rates({"lid-press-K": (40, 10, 6)})), encoding="utf-8")
    app, closer = build(build_parser().parse_args(
        ["serve", "--no-api", "--cards", str(cards), "--rates", str(rates)]))
    assert closer is None
    with TestClient(app) as client:
        html = client.get("/").text
    assert _panel(html) == [(str(n), "pass") for n in range(1, 15)]
    assert 'data-task="lid-press-K" data-flip="whole"' in html
