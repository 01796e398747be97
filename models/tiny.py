"""Tiny random-weight VLMs of three architectures, built offline for tests and the demo.

``rcjudge models build-tiny [--profile P] --out DIR`` writes ``gemma3/``, ``idefics3/`` and
``llava/`` under DIR: each a real ``transformers`` checkpoint (config, weights,
processor, a locally trained byte-level BPE tokenizer and a chat template),
under 5 MB, that loads with ``from_pretrained`` exactly like a hub model.

Three profiles share the text model and differ in how much they see (``PROFILES``):
``plumbing`` (the ``tiny`` judge: 64-px inputs, 4-16 tokens a frame, fast; for tests and the
demo), ``vision`` (the ``tiny-vision`` judges: 128-px inputs, 16-65 tokens a frame and a
vision tower twice as wide, which ``rcjudge train`` can teach to see success on physics
rollouts: docs/judge-quality.md) and ``vision-224`` (the same towers at 224 px, 49-197
tokens a frame; 1.4 times 128 px's training step, `python -m bench.train_step`). After
saving, each is reloaded and every weight compared, so a checkpoint that would
silently re-initialise a tensor is refused.

Nothing is downloaded; weights are never committed. Image processors are the
PIL variants, so nothing imports torchvision.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from models.base import ModelError
from models.hf import save_checkpoint

# Text attention heads of 32 dims: vLLM's CPU attention supports head sizes 32, 64, 80, … only.
TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1, max_position_embeddings=4096, rms_norm_eps=1e-6)
ARCHITECTURES = ("gemma3", "idefics3", "llava")
SPECIAL = {
    "gemma3": ["<start_of_image>", "<image_soft_token>", "<end_of_image>"],
    "idefics3": ["<fake_token_around_image>", "<image>", "<global-img>", "<end_of_utterance>"],
    "llava": ["<image>"],
}
IMAGE_MARK = {
    "gemma3": "<start_of_image>",
    "idefics3": "<image>",
    "llava": "<image>",
}
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: "
    "{% for c in message['content'] %}{% if c['type'] == 'image' %}@IMAGE@"
    "{% else %}{{ c['text'] }}{% endif %}{% endfor %}{{ '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)
CORPUS = [
    "The robot arm reaches for the object, closes the gripper, lifts it and places it.",
    "Did the robot attempt the task? Did the robot complete the task? Answer yes or no.",
    "Which kind of failure happened? Answer with one letter: A B C D E F G H I J K L M N O P.",
    "grasp slip miss collision motion perception timeout placement hardware operator env task",
    "put the cube in the tray, pick up the mug, place the can on the shelf, user assistant",
]


@dataclass(frozen=True)
class Vision:
    """The vision tower and input size of a profile."""

    hidden: int
    layers: int
    image: int  # square input side, px
    patch: int  # px per patch (LLaVA's CLIP at the plumbing size uses half the input)


PROFILES = {
    "plumbing": Vision(hidden=32, layers=2, image=64, patch=16),
    "vision": Vision(hidden=64, layers=2, image=128, patch=16),
    # The same towers over 224-px inputs (196 patches a frame): a 320 x 240 frame keeps
    # detail a 128-px resize loses, such as the goal marker beside a held object.
    "vision-224": Vision(hidden=64, layers=2, image=224, patch=16),
}
#: Where each profile's models go under {models_dir} (the judge versions name these folders).
FOLDERS = {"plumbing": "tiny", "vision": "tiny-vision", "vision-224": "tiny-vision-224"}


def _tower(v: Vision) -> dict:
    return dict(hidden_size=v.hidden, intermediate_size=2 * v.hidden, num_hidden_layers=v.layers,
                num_attention_heads=2, image_size=v.image, patch_size=v.patch)


@dataclass(frozen=True)
class TinyModel:
    """Where a built tiny model lives and what it is."""

    name: str
    path: Path
    architecture: str
    bytes: int
    parameters: int


EXTRA_TOKENS = {"gemma3": {"boi_token": "<start_of_image>", "image_token": "<image_soft_token>",
                           "eoi_token": "<end_of_image>"}}
# Real Gemma 3 tokenizers have runs of 1-4 newlines as single tokens; vLLM's Gemma 3 prompt
# processing looks them up by text (it merges the "\n\n" it inserts around each image).
EXTRA_WORDS = {"gemma3": ["\n", "\n\n", "\n\n\n", "\n\n\n\n"]}


def build_tokenizer(special: list[str], extra: dict[str, str] | None = None,
                    words: list[str] | None = None, corpus: list[str] | None = None,
                    answers: tuple[str, ...] = ("yes", "no")):
    """A ~400-token byte-level BPE trained on ``corpus`` (default ``CORPUS``), with ``answers``
    (default yes/no), ``words`` and ``special`` added as single tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, show_progress=False,
                                  special_tokens=["<pad>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator((corpus or CORPUS) * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>", extra_special_tokens=extra or {})
    fast.add_tokens([*answers, *(words or [])])
    fast.add_special_tokens({"additional_special_tokens": special})
    return fast


def _gemma3(tok, v: Vision):
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3Processor
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIAL["gemma3"]}
    tokens = (v.image // v.patch // 2) ** 2  # the projector average-pools 2 x 2 patches
    cfg = Gemma3Config(
        text_config=dict(TEXT, head_dim=32, vocab_size=len(tok), sliding_window=512),
        vision_config=_tower(v),
        mm_tokens_per_image=tokens, boi_token_index=ids["<start_of_image>"],
        eoi_token_index=ids["<end_of_image>"], image_token_index=ids["<image_soft_token>"])
    proc = Gemma3Processor(
        image_processor=Gemma3ImageProcessorPil(size={"height": v.image, "width": v.image},
                                                do_pan_and_scan=False),
        tokenizer=tok, image_seq_length=tokens,
        chat_template=CHAT_TEMPLATE.replace("@IMAGE@", IMAGE_MARK["gemma3"]))
    model = Gemma3ForConditionalGeneration(cfg)
    random_image_projection(model)
    return model, proc


def random_image_projection(model) -> None:
    """Draw Gemma 3's image projection at random (std 0.2); other architectures: no-op.

    transformers initialises it to zeros, so the images of a randomly initialised Gemma 3
    would never reach its text model: every answer the same whatever the frames, and no
    gradient into its vision tower (nothing for LoRA adapters there to learn)."""
    projector = getattr(getattr(model, "model", None), "multi_modal_projector", None)
    weight = getattr(projector, "mm_input_projection_weight", None)
    if weight is not None:
        weight.data.normal_(std=0.2)


def _idefics3(tok, v: Vision):
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import (
        Idefics3ImageProcessorPil,
    )

    cfg = Idefics3Config(
        text_config=dict(TEXT, model_type="llama", vocab_size=len(tok)),
        vision_config=_tower(v),
        scale_factor=2, image_token_id=tok.convert_tokens_to_ids("<image>"))
    proc = Idefics3Processor(
        image_processor=Idefics3ImageProcessorPil(do_image_splitting=False,
                                                  size={"longest_edge": v.image},
                                                  max_image_size={"longest_edge": v.image}),
        tokenizer=tok, image_seq_len=(v.image // v.patch // 2) ** 2,
        chat_template=CHAT_TEMPLATE.replace("@IMAGE@", IMAGE_MARK["idefics3"]))
    return Idefics3ForConditionalGeneration(cfg), proc


def _llava(tok, v: Vision):
    from transformers import LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    # The plumbing CLIP sees half the others' input in 8-px patches (16 tokens + CLS); the
    # vision CLIP the whole 128-px frame in 16-px patches (64 + CLS), resized, not cropped.
    clip = Vision(v.hidden, v.layers, v.image // 2, 8) if v.image <= 64 else v
    cfg = LlavaConfig(
        text_config=dict(TEXT, model_type="llama", vocab_size=len(tok)),
        vision_config=dict(_tower(clip), model_type="clip_vision_model",
                           projection_dim=v.hidden),
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="full", vision_feature_layer=-1)
    proc = LlavaProcessor(
        image_processor=CLIPImageProcessorPil(size={"shortest_edge": clip.image},
                                              crop_size={"height": clip.image,
                                                         "width": clip.image})
        if clip.image <= 32 else CLIPImageProcessorPil(
            size={"height": clip.image, "width": clip.image}, do_center_crop=False),
        tokenizer=tok, patch_size=clip.patch, vision_feature_select_strategy="full",
        num_additional_image_tokens=1,
        chat_template=CHAT_TEMPLATE.replace("@IMAGE@", IMAGE_MARK["llava"]))
    return LlavaForConditionalGeneration(cfg), proc


BUILDERS = {"gemma3": _gemma3, "idefics3": _idefics3, "llava": _llava}


def build_tiny(out: str | Path, seed: int = 0, profile: str = "plumbing") -> list[TinyModel]:
    """Build, save and reload-check the three tiny VLMs of ``profile`` under ``out``."""
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    if profile not in PROFILES:
        raise ModelError(f"unknown tiny profile {profile!r}; known: {', '.join(PROFILES)}")
    vision = PROFILES[profile]
    out = Path(out)
    built = []
    for i, arch in enumerate(ARCHITECTURES):
        torch.manual_seed(seed * 100 + i)
        model, proc = BUILDERS[arch](build_tokenizer(SPECIAL[arch], EXTRA_TOKENS.get(arch),
                                                     EXTRA_WORDS.get(arch)), vision)
        model.eval()
        path = out / arch
        save_checkpoint(model, proc, path)
        _check_reload(model, path)
        size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
        if size >= 5 * 2**20:
            raise ModelError(f"{path}: tiny model is {size} bytes, expected < 5 MiB")
        built.append(TinyModel(arch, path, type(model).__name__, size,
                               sum(p.numel() for p in model.parameters())))
    return built


def build_missing(path: str) -> bool:
    """Build the tiny models a judge version names, when they are missing: ``path`` is a
    model entry's unexpanded path; only ``{models_dir}/<profile folder>/<architecture>``
    (``FOLDERS``, ``ARCHITECTURES``) is built, the whole profile at once, into a temporary
    folder renamed into place, so a concurrent build or an interrupted one never leaves a
    partial checkpoint. One line on stderr says so. Returns whether it built.
    """
    import shutil
    import sys
    import tempfile

    from rcjudge.home import models_dir

    profiles = {folder: profile for profile, folder in FOLDERS.items()}
    parts = path.split("/")
    if (len(parts) != 3 or parts[0] != "{models_dir}" or parts[1] not in profiles
            or parts[2] not in ARCHITECTURES):
        return False
    profile = profiles[parts[1]]
    target = models_dir() / parts[1]
    if target.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    print(f"rcjudge: building the tiny models (once) under {target}", file=sys.stderr,
          flush=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{parts[1]}-", dir=target.parent))
    try:
        build_tiny(tmp, profile=profile)
        tmp.rename(target)  # another process's finished build wins: the same weights
    except OSError:
        if not target.exists():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True


def _check_reload(model, path: Path) -> None:
    import torch
    from transformers import AutoModelForImageTextToText

    again = AutoModelForImageTextToText.from_pretrained(path)
    mine, theirs = model.state_dict(), again.state_dict()
    if set(mine) != set(theirs):
        raise ModelError(f"{path}: reloaded weights differ in names: "
                         f"{sorted(set(mine) ^ set(theirs))[:5]}")
    for name, tensor in mine.items():
        if not torch.equal(tensor, theirs[name]):
            raise ModelError(f"{path}: weight {name} changed on reload (re-initialised?)")
