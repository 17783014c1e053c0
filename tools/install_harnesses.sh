#!/usr/bin/env bash
# Install the harness CLIs at the versions polar-hpc is tested with (newest that run on Node 20).
set -euo pipefail
PKGS=(
  "@openai/codex@0.171.0"
  "@anthropic-ai/claude-code@2.1.197"
  "@google/gemini-cli@0.61.0"
  "@qwen-code/qwen-code@0.15.10"
  "opencode-ai@1.18.33"
  "@mariozechner/pi-coding-agent@0.73.1"
)
missing=()
for spec in "${PKGS[@]}"; do
  name=${spec%@*}
  have=$(npm ls -g --depth=0 --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin).get('dependencies',{}); print(d.get('$name',{}).get('version',''))" || true)
  [ "$name@$have" = "$spec" ] || missing+=("$spec")
done
if [ ${#missing[@]} -gt 0 ]; then
  npm install -g --no-fund --no-audit --loglevel=error "${missing[@]}"
fi
