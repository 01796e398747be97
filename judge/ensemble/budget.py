"""Prompt token budgets: do a version's questions fit each model's context, at every layout?

Where it sits: beside :mod:`judge.ensemble.prompts`; ``rcjudge doctor`` and the tests ask it
before any GPU time is spent. For each model of a judge version, each question the judge
asks (attempt, success, failure family and the failure class question with the longest
option list), 1-3 cameras tiled as the judge tiles them (:func:`prompts.question_images`,
``frames.images_per_question`` images) and each camera frame size, it counts the real
prompt tokens: the model's processor, called with the kwargs the backends pass
(:func:`models.processing.processor_kwargs`) on the images they send
(:func:`models.processing.model_images`), against the context the engine is given
(:func:`models.processing.context_limit`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from judge.ensemble.prompts import (
    class_request,
    family_request,
    question_images,
    yes_no_requests,
)
from judge.ensemble.taxonomy import load_taxonomy
from judge.ensemble.version import JudgeVersion, ModelEntry
from judge.tasks import task_catalog
from models.processing import (
    MODEL_TYPES,
    chat_prompt,
    context_limit,
    model_images,
    processor_kwargs,
)

SIZES = ((320, 240), (640, 480), (1280, 720))
#: Stand-ins for the ``{sensors}`` and ``{motion}`` slots, as long as the judge writes them.
SENSORS = ("The force sensors recorded: grasp at 0.8 s, slip at 1.4 s, grasp at 1.9 s, "
           "release at 2.6 s; the run lasted 3.0 s.")
MOTION = ("The arm's joints travelled 12.4 rad and were still moving at the end. The fingers "
          "closed to 40 % of their widest at 0.9 s, gripping, and ended at 45 %.")


def questions(version: JudgeVersion) -> dict[str, str]:
    """The text of every question kind, at its longest: the longest task instruction of the
    catalog, and for the class step the family whose question is longest."""
    instruction = max(task_catalog().values(), key=len)
    frames = np.zeros((1, 1, 1, 3), np.uint8)
    fill = {"sensors": SENSORS, "motion": MOTION}
    taxonomy = load_taxonomy()
    attempt, success = yes_no_requests(frames, instruction, version, **fill)
    family = family_request(frames, instruction, version, taxonomy, **fill)
    classes = [class_request(frames, instruction, f, version, taxonomy, **fill)
               for f in taxonomy.families]
    return {"attempt": attempt.prompt, "success": success.prompt,
            "failure_family": family.prompt,
            "failure_class": max((c.prompt for c in classes), key=len)}


def _load(entry: ModelEntry, processors: dict | None) -> tuple[object, str, dict | None]:
    """(processor, model_type, config.json or None) of a model entry."""
    if processors is not None:  # handed in (fixtures, the doctor's loaded processors)
        proc = processors[entry.name]
        path = Path(entry.resolved_path())
        config = (json.loads((path / "config.json").read_text())
                  if entry.path and (path / "config.json").is_file() else None)
        mtype = config["model_type"] if config else MODEL_TYPES.get(type(proc).__name__, "")
        return proc, mtype, config
    from transformers import AutoProcessor

    folder = entry.checkpoint()
    config = json.loads((folder / "config.json").read_text())
    return AutoProcessor.from_pretrained(folder), config["model_type"], config


def prompt_token_table(version: JudgeVersion, processors: dict[str, object] | None = None,
                       cameras: tuple[int, ...] = (1, 2, 3),
                       sizes: tuple[tuple[int, int], ...] = SIZES) -> list[dict]:
    """The prompt tokens of every question, per model, camera count and frame size.

    Args:
        version: the judge version (its models, prompts, frames).
        processors: model name -> processor (models not in it are left out); None loads
            each from its checkpoint folder.
        cameras: camera counts to tile; sizes: (width, height) of one camera's frame.
    Returns:
        Rows {"model", "cameras", "width", "height", "question", "tokens",
        "max_model_len", "fits"}, in model, cameras, size, question order.
    """
    texts = questions(version)
    k = version.frames.images_per_question
    rows = []
    for entry in version.models:
        if processors is not None and entry.name not in processors:
            continue  # not loaded (its folder is missing: the caller says so)
        proc, mtype, config = _load(entry, processors)
        spec = entry.spec()
        kwargs = processor_kwargs(mtype, spec.max_pixels, spec.options, proc)
        limit = context_limit(spec.backend, spec.device, spec.options, config)
        for n in cameras:
            for w, h in sizes:
                cams = np.zeros((n, k, h, w, 3), np.uint8)  # (n_cams, K, H, W, 3)
                images = model_images(question_images(cams, version), spec.max_pixels,
                                      spec.options)
                for kind, text in texts.items():
                    prompt = chat_prompt(proc, len(images), text)
                    ids = proc(text=[prompt], images=[images], **kwargs)["input_ids"][0]
                    rows.append({"model": entry.name, "cameras": n, "width": w, "height": h,
                                 "question": kind, "tokens": len(ids),
                                 "max_model_len": limit,
                                 "fits": limit is None or len(ids) <= limit})
    return rows
