"""``gymkit train``: a small policy trained from scratch against the gym (issue 20).

One module per job: :mod:`.tokenizer` (DSL + brief vocabulary), :mod:`.grammar` (random
formulas for the warm start), :mod:`.policy` (a Hugging Face Llama config, sampling, log
probabilities), :mod:`.sft` (warm start), :mod:`.rl` (GDPO + CISPO + REPO-R + KL loop),
:mod:`.protocol` (frozen probe, checkpoint rule, holdout once), :mod:`.report` (table and
red-team read-out), :mod:`.cli` (the ``gymkit train`` subcommand).  Scoring never imports
torch; only this package does.
"""
