"""PCBench (Li et al., EMNLP 2025 Findings; github MLGroupJLU/Premise_Critique, MIT; data
`ALIENS232/PCBench` on the Hugging Face hub): math problems with a flawed premise (four error
types × three difficulty levels), each asked proactively (as is) and assisted (told to check the
premises); an LLM judge decides whether the response critiques the flawed premise.

One package plus its entry in core/registry.py (docs/adding-a-benchmark.md).
"""

NAME = "pcbench"
# the benchmark's variants: `proactive` asks the flawed problem as is, `assisted` appends the
# paper's check-the-premises instruction (the paper's "active" and "passive" settings)
VARIANTS = ("proactive", "assisted")
# each variant's side in the proactive-vs-passive comparison
MODES = {"proactive": "proactive", "assisted": "passive"}
