#!/usr/bin/env bash
# Regenerates the op reference in docs/ir.md (between its markers) from the op
# table, using a built kiln-opt. Usage: scripts/update-op-reference.sh [path/to/kiln-opt]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tool="${1:-$root/build/release/kiln-opt}"
"$tool" --print-op-reference > "$root/build/op-reference.md"
python3 - "$root/docs/ir.md" "$root/build/op-reference.md" <<'PY'
import re, sys
doc_path, ref_path = sys.argv[1], sys.argv[2]
ref = open(ref_path).read()
doc = open(doc_path).read()
doc = re.sub(r"(?ms)^(<!-- op-reference:begin -->\n).*^(<!-- op-reference:end -->)$",
             lambda m: m[1] + ref + m[2], doc)
open(doc_path, "w").write(doc)
PY
