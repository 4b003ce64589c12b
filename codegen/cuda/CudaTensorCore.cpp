// Tensor-core statements and asynchronous copies in CUDA C, as inline PTX:
// mma.sync with "r" (packed operand words) and "f" (f32) operands, ldmatrix
// and cp.async on shared addresses from __cvta_generic_to_shared, and the
// cp.async group commit and wait. NVRTC's PTX version has all of them.
#include "codegen/cuda/CudaEmitter.h"

#include "ir/kernel/MmaLayout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::codegen::cuda {
namespace {

/// "{%first, %first+1, ...}": `count` asm operand placeholders.
std::string operandList(int first, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i)
    names.push_back(fmt::format("%{}", first + i));
  return fmt::format("{{{}}}", fmt::join(names, ", "));
}

/// `constraint`(value) for each value.
std::vector<std::string> constrained(std::string_view constraint,
                                     const std::vector<std::string> &values) {
  std::vector<std::string> operands;
  for (const std::string &value : values)
    operands.push_back(fmt::format("\"{}\"({})", constraint, value));
  return operands;
}

} // namespace

Expected<void> CudaEmitter::requireSm(int minSm, std::string_view what) const {
  if (target_.sm >= minSm)
    return {};
  return fail(ErrorCode::Unsupported, fmt::format("{} needs sm_{} or newer; the target is {}", what,
                                                  minSm, target_.archName()));
}

Expected<std::vector<std::string>> CudaEmitter::fragmentElements(const kir::Fragment &fragment,
                                                                 DType dtype, int64_t count,
                                                                 std::string_view what) {
  const kir::Buffer *buffer = fragment.buffer.get();
  auto found = bufferNames_.find(buffer);
  KILN_CHECK(found != bufferNames_.end() && buffer->dtype == dtype &&
                 fragment.offset + count <= buffer->size,
             fmt::format("{}: the verifier admits only fragments inside an allocated register "
                         "buffer of {}",
                         what, dtypeName(dtype)));
  std::vector<std::string> elements;
  for (int64_t i = 0; i < count; ++i)
    elements.push_back(fmt::format("{}[{}]", found->second, fragment.offset + i));
  return elements;
}

Expected<std::vector<std::string>> CudaEmitter::fragmentOperands(const kir::Fragment &fragment,
                                                                 DType dtype, int64_t count,
                                                                 bool toTf32,
                                                                 std::string_view what) {
  KILN_TRY(std::vector<std::string> elements, fragmentElements(fragment, dtype, count, what));
  int64_t perWord = 4 / dtypeByteSize(dtype);
  if (perWord == 1) {
    if (toTf32)
      for (std::string &element : elements)
        element = fmt::format("kiln_f32_to_tf32({})", element);
    return elements;
  }
  int bits = 32 / static_cast<int>(perWord);
  std::vector<std::string> words;
  for (int64_t w = 0; w < count / perWord; ++w) {
    std::string word = fmt::format("(unsigned){}", elements[w * perWord]);
    for (int64_t part = 1; part < perWord; ++part)
      word += fmt::format(" | (unsigned){} << {}", elements[w * perWord + part], bits * part);
    words.push_back(word);
  }
  return words;
}

Expected<void> CudaEmitter::emitMma(const kir::Mma &mma) {
  const kir::MmaShapeInfo &info = kir::mmaShapeInfo(mma.mmaKind);
  std::string name = fmt::format("mma.{}", kir::mmaKindName(mma.mmaKind));
  KILN_TRY_VOID(requireSm(info.minSm, fmt::format("{} (PTX mma.sync.aligned.{})", name,
                                                  info.ptxName)));
  bool tf32 = mma.mmaKind == kir::MmaKind::TF32_M16N8K8;
  KILN_TRY(std::vector<std::string> a,
           fragmentOperands(mma.a, info.operandDtype, info.aElements, tf32, name + " a"));
  KILN_TRY(std::vector<std::string> b,
           fragmentOperands(mma.b, info.operandDtype, info.bElements, tf32, name + " b"));
  KILN_TRY(std::vector<std::string> c,
           fragmentElements(mma.c, DType::F32, info.cElements, name + " c"));
  KILN_TRY(std::vector<std::string> d,
           fragmentElements(mma.d, DType::F32, info.cElements, name + " d"));
  int na = static_cast<int>(a.size()), nb = static_cast<int>(b.size());
  int nc = static_cast<int>(c.size()), nd = static_cast<int>(d.size());
  // d may be c: the asm reads every input before it writes an output.
  line(fmt::format("{{ // {}", name));
  ++indent_;
  line(fmt::format("const unsigned kiln_a[{}] = {{{}}};", na, fmt::join(a, ", ")));
  line(fmt::format("const unsigned kiln_b[{}] = {{{}}};", nb, fmt::join(b, ", ")));
  std::vector<std::string> aWords, bWords;
  for (int i = 0; i < na; ++i)
    aWords.push_back(fmt::format("kiln_a[{}]", i));
  for (int i = 0; i < nb; ++i)
    bWords.push_back(fmt::format("kiln_b[{}]", i));
  std::vector<std::string> inputs = constrained("r", aWords);
  std::vector<std::string> bInputs = constrained("r", bWords), cInputs = constrained("f", c);
  inputs.insert(inputs.end(), bInputs.begin(), bInputs.end());
  inputs.insert(inputs.end(), cInputs.begin(), cInputs.end());
  line(fmt::format("asm volatile(\"mma.sync.aligned.{} {}, {}, {}, {};\"", info.ptxName,
                   operandList(0, nd), operandList(nd, na), operandList(nd + na, nb),
                   operandList(nd + na + nb, nc)));
  line(fmt::format("             : {}", fmt::join(constrained("=f", d), ", ")));
  line(fmt::format("             : {});", fmt::join(inputs, ", ")));
  --indent_;
  line("}");
  return {};
}

Expected<void> CudaEmitter::emitLdMatrix(const kir::LdMatrix &load) {
  std::string shape = fmt::format("x{}{}", load.matrices, load.transpose ? ".trans" : "");
  std::string name = "ldmatrix." + shape;
  KILN_TRY_VOID(requireSm(75, name));
  const kir::Buffer &source = *load.source;
  int elementBytes = static_cast<int>(dtypeByteSize(source.dtype));
  int perMatrix = kir::ldMatrixElementsPerMatrix(elementBytes);
  auto found = bufferNames_.find(&source);
  KILN_CHECK(found != bufferNames_.end(), "the verifier admits ldmatrix from buffers in scope only");
  KILN_TRY(std::vector<std::string> destination,
           fragmentElements(load.destination, source.dtype, perMatrix * load.matrices,
                            name + " destination"));
  KILN_TRY(CCode row, emitScalar(load.rowIndex));
  line(fmt::format("{{ // {}", name));
  ++indent_;
  line(fmt::format("unsigned kiln_m[{}];", load.matrices));
  std::vector<std::string> words;
  for (int j = 0; j < load.matrices; ++j)
    words.push_back(fmt::format("kiln_m[{}]", j));
  line(fmt::format("asm volatile(\"ldmatrix.sync.aligned.m8n8.{}.shared.b16 {}, [%{}];\"", shape,
                   operandList(0, load.matrices), load.matrices));
  line(fmt::format("             : {}", fmt::join(constrained("=r", words), ", ")));
  line(fmt::format("             : \"r\"((unsigned)__cvta_generic_to_shared(&{}[{}])) : \"memory\");",
                   found->second, row.text));
  // Each word holds the lane's elements of one matrix, the first in the low bits.
  int bits = 8 * elementBytes;
  std::string_view part = elementBytes == 2 ? "unsigned short" : "unsigned char";
  for (int j = 0; j < load.matrices; ++j)
    for (int e = 0; e < perMatrix; ++e)
      line(fmt::format("{} = ({})(kiln_m[{}] >> {});", destination[perMatrix * j + e], part, j,
                       bits * e));
  --indent_;
  line("}");
  return {};
}

Expected<void> CudaEmitter::emitAsyncCopy(const kir::AsyncCopy &copy) {
  const kir::Buffer &destination = *copy.destination, &source = *copy.source;
  int bytes = copy.lanes * static_cast<int>(dtypeByteSize(source.dtype));
  std::string name = fmt::format("async copy of {} bytes into {}", bytes, destination.name);
  KILN_TRY_VOID(requireSm(80, name + " (cp.async)"));
  auto to = bufferNames_.find(&destination), from = bufferNames_.find(&source);
  KILN_CHECK(to != bufferNames_.end() && from != bufferNames_.end(),
             "the verifier admits async copies between buffers in scope only");
  KILN_TRY(CCode destinationIndex, emitScalar(copy.destinationIndex));
  KILN_TRY(CCode sourceIndex, emitScalar(copy.sourceIndex));
  // cp.async.cg (bypassing L1) exists only for 16 bytes.
  std::string instruction =
      fmt::format("cp.async.{}.shared.global", bytes == 16 ? "cg" : "ca");
  std::string shared = fmt::format("\"r\"((unsigned)__cvta_generic_to_shared(&{}[{}]))",
                                   to->second, destinationIndex.text);
  if (!copy.predicate) {
    line(fmt::format("asm volatile(\"{} [%0], [%1], {};\" :: {}, \"l\"(__cvta_generic_to_global(&{}[{}])) "
                     ": \"memory\");",
                     instruction, bytes, shared, from->second, sourceIndex.text));
    return {};
  }
  // A false predicate copies 0 source bytes, which zero-fills the
  // destination, from element 0, which is in bounds where the index is not
  // (a choice of addresses, as the LLVM backend makes it).
  KILN_TRY(CCode predicate, emitScalar(copy.predicate));
  predicate = materialize(predicate, DType::Bool, "copy_ok");
  line(fmt::format("asm volatile(\"{} [%0], [%1], {}, %2;\" :: {}, "
                   "\"l\"(__cvta_generic_to_global({} ? &{}[{}] : &{}[0])), \"r\"({} ? {} : 0) "
                   ": \"memory\");",
                   instruction, bytes, shared, predicate.text, from->second, sourceIndex.text,
                   from->second, predicate.text, bytes));
  return {};
}

Expected<void> CudaEmitter::emitAsyncCommit() {
  KILN_TRY_VOID(requireSm(80, "async commit (cp.async.commit_group)"));
  line("asm volatile(\"cp.async.commit_group;\" ::: \"memory\");");
  return {};
}

Expected<void> CudaEmitter::emitAsyncWait(const kir::AsyncWait &wait) {
  KILN_TRY_VOID(requireSm(80, "async wait (cp.async.wait_group)"));
  line(fmt::format("asm volatile(\"cp.async.wait_group {};\" ::: \"memory\");",
                   wait.pendingGroups));
  return {};
}

} // namespace kiln::codegen::cuda
