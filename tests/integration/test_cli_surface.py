"""The command surface (issue 40): the help's groups, old spellings as hidden aliases with
their notice, ``--judge`` resolved by one function, ``--db`` a URL or a path, read-only
commands that never create a ledger."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rcjudge.cli import GROUPS, _registrars, build_parser, commands_action, main

ROOT = Path(__file__).resolve().parents[2]


def _run(*argv: str, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RCJUDGE_DB", "RCJUDGE_DATA", "RCJUDGE_MODELS")}  # all under the home
    env["RCJUDGE_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "rcjudge.cli", *argv], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=120)


def test_every_command_is_in_exactly_one_group_registered_by_that_group():
    import argparse

    names = [n for _, group in GROUPS for n in group]
    assert len(names) == len(set(names)) == 36
    for (title, group), (title2, registrars) in zip(GROUPS, _registrars().items(), strict=True):
        assert title == title2
        sub = argparse.ArgumentParser().add_subparsers()
        for register in registrars:
            if register.__name__ == "register_aliases":  # the old `api serve`, `review serve`
                continue
            register(sub)
        assert sorted(a.dest for a in sub._choices_actions) == sorted(group), title
    shown = [a.dest for a in commands_action(build_parser())._choices_actions]
    assert sorted(shown) == sorted(names)


def test_help_prints_the_groups_in_order_main_path_first(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    headings = [line[:-1] for line in out.splitlines() if line.endswith(":")
                and not line.startswith((" ", "exit codes"))]
    assert headings == [t for t, _ in GROUPS] + ["options"]
    listed = [line.split()[0] for line in out.splitlines()
              if line.startswith("  ") and not line.startswith("   ")
              and not line.lstrip().startswith("-") and line.split()[0].isascii()
              and not line.split()[0].isdigit()]
    assert listed == [n for _, group in GROUPS for n in group]
    for hidden in ("lerobot", "screen"):
        assert f"  {hidden} " not in out
    assert "exit codes (every command):" in out


NOTICE = "rcjudge: '{}' is now '{}'; the old spelling goes in the next release"


def test_lerobot_export_is_export_lerobot_with_a_notice(tmp_path):
    p = _run("lerobot", "export", str(tmp_path), "--dataset", "a/b", "--db",
             str(tmp_path / "x.db"), home=tmp_path / "home")
    assert p.returncode == 2
    assert p.stderr.splitlines() == [
        NOTICE.format("lerobot export", "export lerobot"),
        "rcjudge: error: rcjudge export lerobot writes the outcome sidecar only: pass "
        "--include-outcomes"]


def test_bare_verdict_and_verdict_screen_are_verdict_build(tmp_path):
    cards = ROOT / "tests" / "unit" / "verdict" / "data" / "verdict_cards.seed.json"
    for argv, old in ((["verdict", "--cards"], "verdict --evaluation-run ..."),
                      (["verdict", "screen", "--cards"], "verdict screen")):
        page = tmp_path / f"{len(argv)}.html"
        p = _run(*argv, str(cards), "--html", str(page), home=tmp_path / "home")
        assert p.returncode == 0, p.stderr
        new = ("verdict build --evaluation-run ..." if old.startswith("verdict --") else
               "verdict build --cards CARDS --html PAGE")
        assert p.stderr.splitlines() == [NOTICE.format(old, new)]
        assert p.stdout == f"screen written: {page}\n" and page.stat().st_size > 1000
    p = _run("verdict", "build", "--cards", str(cards), "--html", str(tmp_path / "n.html"),
             home=tmp_path / "home")
    assert (p.returncode, p.stderr) == (0, "")
    assert (tmp_path / "n.html").read_bytes() == (tmp_path / "2.html").read_bytes()


@pytest.mark.parametrize(("argv", "old", "new"), [
    (["api", "serve", "--db", "mysql://h/x"], "api serve", "serve --only api"),
    (["review", "serve", "--judge", "tiny", "--host", "0.0.0.0"], "review serve",
     "serve --only review"),
    (["serve", "--no-api", "--db", "sqlite:///x.db"], "serve --no-api", "serve --only screen"),
])
def test_old_server_spellings_print_their_notice_then_run(tmp_path, argv, old, new):
    p = _run(*argv, home=tmp_path / "home")
    lines = p.stderr.splitlines()
    assert (p.returncode, len(lines), lines[0]) == (2, 2, NOTICE.format(old, new))
    assert lines[1].startswith("rcjudge: error: ")


def test_serve_only_parts(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from rcjudge.serve import build

    monkeypatch.setenv("RCJUDGE_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("RCJUDGE_DB", raising=False)
    db = str(tmp_path / "a.db")  # --db as a path
    app, service = build(build_parser().parse_args(["serve", "--only", "api", "--db", db]))
    try:
        with TestClient(app) as c:
            assert c.get("/v1/taxonomy").status_code == 401
            assert c.get("/review").status_code == 404
    finally:
        service.close()
    assert Path(db).is_file()
    app, service = build(build_parser().parse_args(["serve", "--db", db]))
    try:
        with TestClient(app) as c:
            assert c.get("/review").status_code == 200
    finally:
        service.close()
    assert main(["serve", "--only", "api,nope"]) == 2
    assert main(["serve", "--only", "review"]) == 2  # needs --judge
    assert not (tmp_path / "data").exists()


def _trained_copy(home: Path, name: str) -> None:
    """A trained version found only beside its weights, as `train --config ELSEWHERE`
    leaves it (models/NAME/version.yaml)."""
    doc = yaml.safe_load((ROOT / "configs" / "judges" / "tiny.yaml").read_text())
    doc["name"] = name
    (home / "models" / name).mkdir(parents=True)
    (home / "models" / name / "version.yaml").write_text(yaml.safe_dump(doc))


@pytest.mark.parametrize("argv", [
    ["explain", "nope", "--out", "{d}/x.html", "--db", "{d}/l.db"],
    ["judge", "{d}/empty"],
    ["inspect", "{d}/empty"],
    ["judges", "show", "my-v2"],
    ["review", "next", "--db", "{d}/l.db"],
    ["export", "evaluation-run", "--out", "{d}/o", "--db", "{d}/l.db"],
    ["eval", "--db", "{d}/l.db"],
    ["rates", "--db", "{d}/l.db"],
    ["calibrate", "--out", "c2", "--config", "{d}/c2.yaml", "--db", "{d}/l.db"],
])
def test_every_judge_flag_resolves_a_trained_version_by_name(tmp_path, argv):
    home = tmp_path / "home"
    _trained_copy(home, "my-v2")
    (tmp_path / "empty").mkdir()
    assert main(["db", "upgrade", "--db", str(tmp_path / "l.db")]) == 0  # an empty ledger
    args = [a.format(d=tmp_path) for a in argv]
    flag = [] if args[:2] == ["judges", "show"] else ["--judge", "my-v2"]
    p = _run(*args, *flag, home=home)
    assert "unknown judge version" not in p.stderr
    if args[0] == "explain":
        assert p.stderr == (f"rcjudge: error: nope: neither a bundle path nor a run id in the "
                            f"ledger sqlite:///{tmp_path / 'l.db'}\n")
    if args[0] == "judges":
        assert (p.returncode, p.stdout.splitlines()[0]) == (0, "judge version my-v2")


def test_a_read_only_command_never_creates_a_ledger(tmp_path):
    home = tmp_path / "home"
    p = _run("explain", "nope", "--out", str(tmp_path / "x.html"), home=home)
    assert (p.returncode, p.stderr) == (2, f"rcjudge: error: --db {home / 'rcjudge.db'}: no "
                                        "ledger there (rcjudge batch or rcjudge labels import "
                                        "makes one; --db names another)\n")
    assert not home.exists()


def test_db_takes_a_path_or_a_url(tmp_path):
    from judge.ledgers.store import resolve_url

    assert resolve_url(str(tmp_path / "l.db")) == f"sqlite:///{tmp_path / 'l.db'}"
    assert resolve_url("postgresql://h/db") == "postgresql+psycopg://h/db"
    helps = set()
    parser = build_parser()

    def walk(p):
        import argparse

        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for child in a.choices.values():
                    walk(child)
            elif "--db" in a.option_strings:
                helps.add((a.metavar, a.help))

    walk(parser)
    assert len(helps) == 1 and next(iter(helps))[0] == "URL|PATH"


def test_train_recipe_defaults_and_overrides():
    from judge.learn.recipe import RECIPES

    assert RECIPES["judge-quality"] == {"epochs": 20, "patience": 5, "small_lr": 5e-4,
                                        "warmup_steps": 60, "blank_images": 0.5,
                                        "blank_text": 0.0, "travel_jitter": 0.0}
    args = build_parser().parse_args(["train", "--from", "tiny", "--plan"])
    assert (args.recipe, args.epochs, args.patience) == ("judge-quality", None, None)


def test_docs_cli_md_holds_the_parsers_table_and_help():
    from rcjudge.cli import EXIT_1, _leaves, command_table

    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    table = doc.split("<!-- commands:start -->\n", 1)[1].split("\n<!-- commands:end -->", 1)[0]
    assert table == command_table()
    assert set(EXIT_1) <= set(_leaves(build_parser()))
    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run([sys.executable, "-m", "rcjudge.cli", "--help"], capture_output=True,
                         text=True, cwd=ROOT, env=env, check=True).stdout
    assert f"### After\n\n```\n{out.rstrip()}\n```\n" in doc


def test_review_help_points_to_docs_review_md(capsys):
    with pytest.raises(SystemExit):
        main(["review", "--help"])
    out = capsys.readouterr().out
    assert "(docs/review.md; the page: rcjudge serve, /review?judge=V)" in out
    assert "judge-quality" not in out


def test_the_local_ray_rcjudge_starts_prints_no_token_notice():
    """Ray's "Token authentication is enabled for this Ray cluster..." is not shown to a user
    of the local Ray that batch and rejudge start (docs/batch.md)."""
    code = ("import os, ray\nfrom judge.batch.place import start_ray\nstart_ray(None)\n"
            "print(os.environ['RAY_AUTH_MODE'])\nray.shutdown()\n")
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_ADDRESS")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env=env, timeout=180)
    assert (p.returncode, p.stdout) == (0, "disabled\n"), p.stderr
    assert "Token authentication" not in p.stderr
