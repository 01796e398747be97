"""rc-judge-v1's three processors and chat templates as their model cards publish them.

Where it sits: test fixtures and ``bench.gpu_check`` build the production models' processors
here (no weights, no hub): Qwen2.5-VL-7B-Instruct, Gemma-3-12b-it and SmolVLM2-2.2B-Instruct,
each with its published image processor settings, tokens per image and chat template text,
and a byte-level BPE tokenizer trained locally (``models.tiny.build_tokenizer``) holding the
model's special tokens. ``models.production_configs.build(name, tiny)`` adds a model config
whose vision geometry matches the processor: real sizes, or 2-layer test widths (``tiny``).

The local tokenizer splits English into more tokens than the real ones (~400 merges), so a
prompt's text tokens here are an over-count: token budgets checked on these fixtures hold
for the real tokenizers (their image tokens are exact). ``tiny=True`` processors keep each
model's settings (Gemma: a fixed square, SmolVLM: splitting on, 4 tiles a side at most) at a
test-size geometry (64-px inputs, 16-px patches) so test-size models run on CPU.
"""

from __future__ import annotations

from models.tiny import build_tokenizer

NAMES = ("qwen2.5-vl-7b", "gemma3-12b", "smolvlm2-2.2b")  # rc-judge-v1's model names
MODEL_TYPES = {"qwen2.5-vl-7b": "qwen2_5_vl", "gemma3-12b": "gemma3",
               "smolvlm2-2.2b": "smolvlm"}

# Qwen2.5-VL-7B-Instruct's chat_template (tokenizer_config.json), as published.
QWEN_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
    "{{ message['content'] }}<|im_end|>\n{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}"
    "Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}"
    "Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
# Gemma-3-12b-it's chat_template, as published: it starts with the BOS token itself.
GEMMA_TEMPLATE = (
    "{{ bos_token }}\n{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}\n"
    "    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}\n"
    "    {%- endif -%}\n    {%- set loop_messages = messages[1:] -%}\n{%- else -%}\n"
    "    {%- set first_user_prefix = \"\" -%}\n    {%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    "        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/"
    "assistant/...\") }}\n    {%- endif -%}\n"
    "    {%- if (message['role'] == 'assistant') -%}\n        {%- set role = \"model\" -%}\n"
    "    {%- else -%}\n        {%- set role = message['role'] -%}\n    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n        {{ message['content'] | trim }}\n"
    "    {%- elif message['content'] is iterable -%}\n"
    "        {%- for item in message['content'] -%}\n"
    "            {%- if item['type'] == 'image' -%}\n                {{ '<start_of_image>' }}\n"
    "            {%- elif item['type'] == 'text' -%}\n                {{ item['text'] | trim }}\n"
    "            {%- endif -%}\n        {%- endfor -%}\n    {%- else -%}\n"
    "        {{ raise_exception(\"Invalid content type\") }}\n    {%- endif -%}\n"
    "    {{ '<end_of_turn>\n' }}\n{%- endfor -%}\n{%- if add_generation_prompt -%}\n"
    "    {{'<start_of_turn>model\n'}}\n{%- endif -%}\n")
# SmolVLM2-2.2B-Instruct's chat_template (chat_template.json), as published.
SMOLVLM_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{message['role'] | capitalize}}"
    "{% if message['content'][0]['type'] == 'image' %}{{':'}}{% else %}{{': '}}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{line['text']}}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}"
    "<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}")

QWEN_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>",
                "<|image_pad|>", "<|vision_end|>", "<|video_pad|>"]
GEMMA_SPECIAL = ["<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>",
                 "<image_soft_token>", "<end_of_image>"]
SMOLVLM_SPECIAL = (["<|im_start|>", "<end_of_utterance>", "<fake_token_around_image>",
                    "<image>", "<global-img>"]
                   + [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)])


def _images_only(cls):
    """``cls`` without its video processor (transformers' video processors need torchvision,
    which the CPU environments here lack); saved under ``cls``'s own name, so a folder it
    writes loads with ``AutoProcessor`` where torchvision is installed."""
    attrs = [a for a in cls.get_attributes() if a != "video_processor"]
    return type(cls.__name__, (cls,), {"get_attributes": classmethod(lambda c: list(attrs))})


def _unchecked_video(cls):
    """``cls`` accepting a video processor that transformers' class check cannot resolve
    without torchvision (SmolVLM's own is pure torch; its chat template reads it)."""
    def check(self, name, arg):
        return None if name == "video_processor" else cls.check_argument_for_proper_class(
            self, name, arg)

    return type(cls.__name__, (cls,), {"check_argument_for_proper_class": check})


def _pil(module: str, name: str):
    """The PIL variant of an image processor (no torchvision); where a transformers release
    has none, its default class (the lent GPU's image has torchvision)."""
    import importlib

    short = module.rsplit(".", 1)[-1]
    try:
        return getattr(importlib.import_module(f"{module}.image_processing_pil_{short}"),
                       f"{name}Pil")
    except (ImportError, AttributeError):
        import transformers

        return getattr(transformers, name)


def qwen_processor(tiny: bool = False):
    """Qwen2.5-VL: patch 14, merge 2 (one token per 28×28 px), min 3,136 / max 12,845,056 px."""
    from transformers import Qwen2_5_VLProcessor

    image = _pil("transformers.models.qwen2_vl", "Qwen2VLImageProcessor")(
        min_pixels=3136, max_pixels=12845056, patch_size=14, merge_size=2,
        temporal_patch_size=2)
    parts = dict(image_processor=image, tokenizer=build_tokenizer(QWEN_SPECIAL),
                 chat_template=QWEN_TEMPLATE)
    try:  # the real video processor where torchvision works (vLLM loads the saved folder)
        from transformers.models.qwen2_vl.video_processing_qwen2_vl import (
            Qwen2VLVideoProcessor,
        )

        return Qwen2_5_VLProcessor(video_processor=Qwen2VLVideoProcessor(), **parts)
    except (ImportError, RuntimeError):  # no torchvision, or one whose ops cannot load
        return _images_only(Qwen2_5_VLProcessor)(**parts)


def _gemma_tokenizer():
    from tokenizers import processors

    from models.tiny import EXTRA_WORDS

    tok = build_tokenizer(GEMMA_SPECIAL, {"boi_token": "<start_of_image>",
                                          "image_token": "<image_soft_token>",
                                          "eoi_token": "<end_of_image>"},
                          EXTRA_WORDS["gemma3"])
    tok.bos_token, tok.eos_token = "<bos>", "<eos>"
    bos = tok.convert_tokens_to_ids("<bos>")
    # GemmaTokenizer adds <bos> when encoding with special tokens (add_bos_token: true)
    tok._tokenizer.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", bos)])
    return tok


def gemma_processor(tiny: bool = False):
    """Gemma 3: SigLIP at a fixed 896² (patch 14) pooled to 256 tokens; pan-and-scan off."""
    from transformers import Gemma3Processor

    side, tokens = (64, 4) if tiny else (896, 256)
    image = _pil("transformers.models.gemma3", "Gemma3ImageProcessor")(
        size={"height": side, "width": side}, do_pan_and_scan=False,
        image_mean=[0.5] * 3, image_std=[0.5] * 3)
    return Gemma3Processor(image_processor=image, tokenizer=_gemma_tokenizer(),
                           image_seq_length=tokens, chat_template=GEMMA_TEMPLATE)


def smolvlm_processor(tiny: bool = False):
    """SmolVLM2: 384² tiles, 81 tokens a tile, splitting on, longest edge 1,536 (4 tiles)."""
    from PIL import Image
    from transformers import SmolVLMProcessor

    tile, per_tile = (64, 4) if tiny else (384, 81)
    image = _pil("transformers.models.smolvlm", "SmolVLMImageProcessor")(
        do_image_splitting=True, size={"longest_edge": 4 * tile},
        max_image_size={"longest_edge": tile}, resample=Image.LANCZOS,
        image_mean=[0.5] * 3, image_std=[0.5] * 3)
    tok = build_tokenizer(SMOLVLM_SPECIAL, {"fake_image_token": "<fake_token_around_image>",
                                            "image_token": "<image>",
                                            "global_image_token": "<global-img>",
                                            "end_of_utterance_token": "<end_of_utterance>"})
    tok.bos_token = "<|im_start|>"
    from transformers.models.smolvlm.video_processing_smolvlm import SmolVLMVideoProcessor

    return _unchecked_video(SmolVLMProcessor)(
        image_processor=image, tokenizer=tok, video_processor=SmolVLMVideoProcessor(),
        image_seq_len=per_tile, chat_template=SMOLVLM_TEMPLATE)


PROCESSORS = {"qwen2.5-vl-7b": qwen_processor, "gemma3-12b": gemma_processor,
              "smolvlm2-2.2b": smolvlm_processor}


def processor(name: str, tiny: bool = False):
    """The production processor of rc-judge-v1's model ``name`` (``NAMES``)."""
    return PROCESSORS[name](tiny)

