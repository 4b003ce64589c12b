#!/usr/bin/env bash
# Regenerates the generated tables of the docs from the tables in the code: the op reference
# in docs/ir.md (from the op table, with kiln-opt) and the supported ONNX ops in docs/onnx.md
# (from the converter registry, with kiln). Usage: scripts/update-op-reference.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build/release}"
"$build/kiln-opt" --print-op-reference > "$root/build/op-reference.md"
"$build/kiln" import --list-ops > "$root/build/onnx-ops.md"
replace() { # replace DOC MARKER GENERATED
  python3 - "$1" "$2" "$3" <<'PY'
import re, sys
doc_path, marker, ref_path = sys.argv[1], sys.argv[2], sys.argv[3]
ref = open(ref_path).read()
doc = open(doc_path).read()
doc = re.sub(rf"(?ms)^(<!-- {marker}:begin -->\n).*^(<!-- {marker}:end -->)$",
             lambda m: m[1] + ref + m[2], doc)
open(doc_path, "w").write(doc)
PY
}
replace "$root/docs/ir.md" op-reference "$root/build/op-reference.md"
replace "$root/docs/onnx.md" onnx-ops "$root/build/onnx-ops.md"
