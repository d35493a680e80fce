"""Write a byte-level tokenizer with a tool-aware ChatML template to a folder: offline, no hub download.

    .venv/atropos/bin/python tests/interop/atropos_tokenizer.py DIR

Atropos' BaseEnv loads ``tokenizer_name`` with ``AutoTokenizer.from_pretrained``, which takes a folder
as well as a hub name. The test has no hub, so it builds one here with the ``tokenizers`` library
(a dependency of ``transformers``): token ``i`` < 256 is byte ``i`` (byte-level BPE without merges,
GPT-2's byte-to-character map), then ``<|im_end|>`` (256, end of turn), ``<|endoftext|>`` (257, padding)
and ``<|im_start|>`` (258). A real run uses the policy model's own tokenizer.
"""

from __future__ import annotations

import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

CHAT_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n# Tools\\n' }}"
    "{%- for tool in tools %}{{- (tool | tojson) + '\\n' }}{%- endfor %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') }}"
    "{%- for call in message.tool_calls or [] %}"
    "{{- '\\n<tool_call>' + ({'name': call.function.name, 'arguments': call.function.arguments} | tojson)"
    " + '</tool_call>' }}"
    "{%- endfor %}{{- '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def byte_to_char() -> dict[int, str]:
    """GPT-2's map of the 256 bytes to printable characters, which byte-level BPE vocabularies use."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    shifted = iter(range(256, 512))
    return {b: chr(b) if b in kept else chr(next(shifted)) for b in range(256)}


def main(folder: str) -> None:
    vocab = {char: byte for byte, char in byte_to_char().items()}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
        chat_template=CHAT_TEMPLATE,
    )
    fast.save_pretrained(folder)


if __name__ == "__main__":
    main(sys.argv[1])
