"""Model configs of rc-judge-v1's three architectures, matched to their production processors.

Where it sits: ``bench.gpu_check`` and the tests build Qwen2.5-VL-7B, Gemma-3-12B and
SmolVLM2-2.2B from these configs with random (or vLLM's dummy) weights: the published text
and vision sizes, or 2-layer test widths (``tiny``). The vision geometry (input side, patch,
pooling, tokens per image) always follows the processor it is built with, so any model built
here accepts what its processor sends. The text vocabulary keeps its real size at real
widths (the local tokenizer's ids are all below it).
"""

from __future__ import annotations

from models.production import processor as production_processor


def _tiny_text(tok) -> dict:
    return dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=1, vocab_size=len(tok))


def _tiny_vision(**geometry) -> dict:
    return dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=2, **geometry)


def qwen25vl(proc, tiny: bool):
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    tok = proc.tokenizer
    ids = {t: tok.convert_tokens_to_ids(t) for t in
           ("<|vision_start|>", "<|image_pad|>", "<|vision_end|>", "<|video_pad|>")}
    text = (_tiny_text(tok) if tiny else
            dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                 num_attention_heads=28, num_key_value_heads=4, vocab_size=152064))
    text.update(rope_theta=1e6, max_position_embeddings=32768,
                bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
                eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
                rope_scaling={"type": "mrope",
                              "mrope_section": [4, 6, 6] if tiny else [16, 24, 24]})
    vision = (dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2,
                   out_hidden_size=64, fullatt_block_indexes=[1]) if tiny else
              dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16,
                   out_hidden_size=3584, fullatt_block_indexes=[7, 15, 23, 31]))
    vision.update(patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=112)
    cfg = Qwen2_5_VLConfig(text_config=text, vision_config=vision,
                           image_token_id=ids["<|image_pad|>"],
                           video_token_id=ids["<|video_pad|>"],
                           vision_start_token_id=ids["<|vision_start|>"],
                           vision_end_token_id=ids["<|vision_end|>"])
    return Qwen2_5_VLForConditionalGeneration, cfg


def gemma3(proc, tiny: bool):
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration

    tok = proc.tokenizer
    side = proc.image_processor.size["height"]
    patch = 16 if side == 64 else 14
    text = (dict(_tiny_text(tok), head_dim=32, sliding_window=512) if tiny else
            dict(hidden_size=3840, intermediate_size=15360, num_hidden_layers=48,
                 num_attention_heads=16, num_key_value_heads=8, head_dim=256,
                 vocab_size=262208, sliding_window=1024))
    vision = (_tiny_vision(image_size=side, patch_size=patch) if tiny else
              dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27,
                   num_attention_heads=16, image_size=side, patch_size=patch))
    cfg = Gemma3Config(text_config=text, vision_config=vision,
                       mm_tokens_per_image=proc.image_seq_length,
                       boi_token_index=tok.convert_tokens_to_ids("<start_of_image>"),
                       eoi_token_index=tok.convert_tokens_to_ids("<end_of_image>"),
                       image_token_index=tok.convert_tokens_to_ids("<image_soft_token>"))
    return Gemma3ForConditionalGeneration, cfg


def smolvlm(proc, tiny: bool):
    from transformers import SmolVLMConfig, SmolVLMForConditionalGeneration

    tok = proc.tokenizer
    tile = proc.image_processor.max_image_size["longest_edge"]
    patch, scale = (16, 2) if tile == 64 else (14, 3)
    text = (_tiny_text(tok) if tiny else
            dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=24,
                 num_attention_heads=32, num_key_value_heads=32, vocab_size=49280))
    text.update(model_type="llama", max_position_embeddings=8192, rope_theta=273768.0)
    vision = (_tiny_vision(image_size=tile, patch_size=patch) if tiny else
              dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27,
                   num_attention_heads=16, image_size=tile, patch_size=patch))
    cfg = SmolVLMConfig(text_config=text, vision_config=vision, scale_factor=scale,
                        image_token_id=tok.convert_tokens_to_ids("<image>"))
    return SmolVLMForConditionalGeneration, cfg


CONFIGS = {"qwen2.5-vl-7b": qwen25vl, "gemma3-12b": gemma3, "smolvlm2-2.2b": smolvlm}
#: The hub repositories whose published configs these are (rc-judge-v1's ``repo`` fields).
REPOS = {"Qwen/Qwen2.5-VL-7B-Instruct": "qwen2.5-vl-7b", "google/gemma-3-12b-it": "gemma3-12b",
         "HuggingFaceTB/SmolVLM2-2.2B-Instruct": "smolvlm2-2.2b"}


def build(name: str, tiny: bool, processor_tiny: bool | None = None):
    """(model class, config, processor) of rc-judge-v1's model ``name``: test widths when
    ``tiny``; the processor at test geometry when ``processor_tiny`` (default: ``tiny``)."""
    proc = production_processor(name, tiny if processor_tiny is None else processor_tiny)
    cls, cfg = CONFIGS[name](proc, tiny)
    cfg.architectures = [cls.__name__]
    return cls, cfg, proc
