"""The learning run of issue 33: a small open model trained on our environment's train split, measured on held-out
test episodes before and after (docs/learning.md).

``scripts/learn`` drives it (``bench/learning/__main__.py``). Modules, one concept each:

- ``plan``: what the run is (plan.json): environment, tier, held-out episodes, dev slice, settings per stage.
- ``ledger``: where the run is (state.json): stages done, units done, every piece's wall and CPU time.
- ``llama``: llama.cpp's ``llama-server`` processes the evaluations and the sampling play against.
- ``episodes``: held-out and sampled episodes played through ``openenv-mcp eval``, split over the servers.
- ``examples``: training examples (token ids and a loss mask) from exported conversations.
- ``sft``: the LoRA update, run in the learning venv (torch, transformers, peft), resumable after every step.
- ``adapter``: the LoRA adapter as a llama.cpp GGUF file.
- ``stats``: Wilson and Newcombe intervals, a mean's interval.
- ``report``: results.json, manifest.json and the curve.
- ``stages``: the stages in order, each resumable.
"""
