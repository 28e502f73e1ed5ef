#!/usr/bin/env bash
# Step distillation on the demo model, measured: the demo's text-to-video checks (tests/e2e/demo_checks.h)
# over 8 prompts x 2 seeds, 16 videos per row:
#   teacher   demo-t2v.vgflow as shipped: 8 UniPC steps, guidance 3, vsa (16 model calls a video)
#   base_3    the same model at the student's 3 dmd steps without guidance (3 calls)
#   student   the student distill-demo.vgflow makes (one run; extra arguments go to it, e.g. --set
#             distill.steps=300), through Load LoRA at the same 3 dmd steps without guidance, with
#             its own attention: STUDENT_METHOD (default sla_star, the workflow's; or vsa) (3 calls)
# Usage: [STUDENT_METHOD=vsa] tests/bench/train/distill_passes.sh BUILD OUT [vidgraph-run options...]
# Prints vidgraph-demo-passes' JSON for the three sweeps and writes it to OUT/passes.json.
set -euo pipefail
BUILD=$1 OUT=$2
shift 2
METHOD=${STUDENT_METHOD:-sla_star}
FLOWS=$BUILD/share/vidgraph/workflows
PROMPTS="a green square moving left on a black background,a red circle moving right on a dark blue background"
PROMPTS+=",a yellow circle moving left on a grey background,a blue square moving right on a black background"
PROMPTS+=",a white square moving left on a dark blue background,an orange circle moving right on a grey background"
PROMPTS+=",a red square moving left on a grey background,a green circle moving right on a dark blue background"
FEW_STEPS=(--set sampler.scheduler=dmd --set sampler.steps=3 --set sampler.dmd_timesteps=1000,757,522
           --set sampler.guidance=1)
mkdir -p "$OUT"
sweep() {  # NAME WORKFLOW [options...]
  local name=$1 flow=$2
  shift 2
  local start=$SECONDS
  "$BUILD/bin/vidgraph-run" run "$flow" --output-dir "$OUT/$name" --sweep "prompt.positive=$PROMPTS" \
    --sweep sampler.seed=1,2 "$@" > "$OUT/$name.log" 2>&1
  echo "$name: $((SECONDS - start)) s" >&2
}
sweep teacher "$FLOWS/demo-t2v.vgflow"
sweep base_3 "$FLOWS/demo-t2v.vgflow" "${FEW_STEPS[@]}"

# The distillation, once: distill-demo without its validation clips (a sweep would distil per run:
# each run's output folder is part of the node's key).
python3 - "$FLOWS" "$OUT" "$METHOD" <<'PY'
import json, sys
flows, out, method = sys.argv[1], sys.argv[2], sys.argv[3]
distill = json.load(open(flows + "/distill-demo.vgflow"))
for node in distill["nodes"]:
    if node["id"] == "distill":
        node["inputs"].pop("validation", None)
        node["params"]["validate_every"] = 0
        node["params"]["method"] = method
json.dump(distill, open(out + "/distill.vgflow", "w"), indent=1)
# The student: demo-t2v with Load LoRA between the model and the sampler.
student = json.load(open(flows + "/demo-t2v.vgflow"))
student["nodes"].append({"id": "lora", "type": "LoadLoRA", "params": {"path": out + "/distilled/student.safetensors"},
                         "inputs": {"model": {"node": "model", "output": "model"}}})
for node in student["nodes"]:
    if node["id"] == "sampler":
        node["inputs"]["model"] = {"node": "lora", "output": "model"}
        node["params"]["attention"] = method
json.dump(student, open(out + "/student.vgflow", "w"), indent=1)
PY
start=$SECONDS
"$BUILD/bin/vidgraph-run" run "$OUT/distill.vgflow" --output-dir "$OUT/distilled" "$@" > "$OUT/distill.log" 2>&1
echo "distillation: $((SECONDS - start)) s" >&2
sweep student "$OUT/student.vgflow" "${FEW_STEPS[@]}"
"$BUILD/bin/vidgraph-demo-passes" "$OUT/teacher" "$OUT/base_3" "$OUT/student" | tee "$OUT/passes.json"
