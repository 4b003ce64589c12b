// Tensor-core statements and asynchronous copies in CUDA C, as the inline PTX of
// codegen/PtxInstructions.h: mma.sync on packed operand words, ldmatrix and cp.async on shared
// addresses from __cvta_generic_to_shared, and the cp.async group commit and wait; and the
// asm statement every GPU instruction is printed as. NVRTC's PTX version has all of them.
#include "codegen/cuda/CudaEmitter.h"

#include "ir/kernel/MmaLayout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::codegen::cuda {
void CudaEmitter::emitAsm(const InlinePtx &instruction, const std::vector<std::string> &operands) {
  KILN_CHECK(operands.size() == instruction.constraints.size(),
             fmt::format("{}: an operand per constraint", instruction.mnemonic));
  std::vector<std::string> outputs, inputs;
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::string &constraint = instruction.constraints[i];
    bool output = constraint[0] == '=' || constraint[0] == '+';
    (output ? outputs : inputs).push_back(fmt::format("\"{}\"({})", constraint, operands[i]));
  }
  std::string text;
  for (char c : instruction.text)
    text += c == '\n' ? std::string("\\n") : std::string(1, c);
  std::string clobber = instruction.clobbersMemory ? " : \"memory\"" : "";
  if (outputs.empty()) {
    std::string tail;
    if (!inputs.empty() || instruction.clobbersMemory)
      tail = " ::";
    if (!inputs.empty())
      tail += fmt::format(" {}", fmt::join(inputs, ", "));
    if (instruction.clobbersMemory)
      tail += inputs.empty() ? ": \"memory\"" : " : \"memory\"";
    line(fmt::format("asm volatile(\"{}\"{});", text, tail));
    return;
  }
  line(fmt::format("asm volatile(\"{}\"", text));
  line(fmt::format("             : {}", fmt::join(outputs, ", ")));
  line(fmt::format("             : {}{});", fmt::join(inputs, ", "), clobber));
}

Expected<void> CudaEmitter::require(const InlinePtx &instruction, std::string_view what) const {
  Expected<void> supported = requireInstruction(target_, instruction, what);
  return supported ? supported : fail(supported.error().code(), supported.error().message());
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
  InlinePtx instruction = mmaSync(mma.mmaKind);
  std::string name = fmt::format("mma.{}", kir::mmaKindName(mma.mmaKind));
  KILN_TRY_VOID(require(instruction, name));
  bool tf32 = mma.mmaKind == kir::MmaKind::TF32_M16N8K8;
  KILN_TRY(std::vector<std::string> a,
           fragmentOperands(mma.a, info.operandDtype, info.aElements, tf32, name + " a"));
  KILN_TRY(std::vector<std::string> b,
           fragmentOperands(mma.b, info.operandDtype, info.bElements, tf32, name + " b"));
  KILN_TRY(std::vector<std::string> c,
           fragmentElements(mma.c, DType::F32, info.cElements, name + " c"));
  KILN_TRY(std::vector<std::string> operands,
           fragmentElements(mma.d, DType::F32, info.cElements, name + " d"));
  // d may be c: the asm reads every input before it writes an output.
  line(fmt::format("{{ // {}", name));
  ++indent_;
  line(fmt::format("const unsigned kiln_a[{}] = {{{}}};", a.size(), fmt::join(a, ", ")));
  line(fmt::format("const unsigned kiln_b[{}] = {{{}}};", b.size(), fmt::join(b, ", ")));
  for (size_t i = 0; i < a.size(); ++i)
    operands.push_back(fmt::format("kiln_a[{}]", i));
  for (size_t i = 0; i < b.size(); ++i)
    operands.push_back(fmt::format("kiln_b[{}]", i));
  operands.insert(operands.end(), c.begin(), c.end());
  emitAsm(instruction, operands);
  --indent_;
  line("}");
  return {};
}

Expected<void> CudaEmitter::emitLdMatrix(const kir::LdMatrix &load) {
  InlinePtx instruction = ldMatrix(load.matrices, load.transpose);
  std::string name = fmt::format("ldmatrix.x{}{}", load.matrices, load.transpose ? ".trans" : "");
  KILN_TRY_VOID(require(instruction, name));
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
  std::vector<std::string> operands;
  for (int j = 0; j < load.matrices; ++j)
    operands.push_back(fmt::format("kiln_m[{}]", j));
  operands.push_back(
      fmt::format("(unsigned)__cvta_generic_to_shared(&{}[{}])", found->second, row.text));
  emitAsm(instruction, operands);
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
  InlinePtx instruction = cpAsync(bytes, copy.predicate != nullptr);
  KILN_TRY_VOID(requireInstruction(
      target_, instruction, fmt::format("async copy of {} bytes into {}", bytes, destination.name)));
  auto to = bufferNames_.find(&destination), from = bufferNames_.find(&source);
  KILN_CHECK(to != bufferNames_.end() && from != bufferNames_.end(),
             "the verifier admits async copies between buffers in scope only");
  KILN_TRY(CCode destinationIndex, emitScalar(copy.destinationIndex));
  KILN_TRY(CCode sourceIndex, emitScalar(copy.sourceIndex));
  std::string shared = fmt::format("(unsigned)__cvta_generic_to_shared(&{}[{}])", to->second,
                                   destinationIndex.text);
  if (!copy.predicate) {
    emitAsm(instruction, {shared, fmt::format("__cvta_generic_to_global(&{}[{}])", from->second,
                                              sourceIndex.text)});
    return {};
  }
  // A false predicate copies 0 source bytes, which zero-fills the
  // destination, from element 0, which is in bounds where the index is not
  // (a choice of addresses, as the LLVM backend makes it).
  KILN_TRY(CCode predicate, emitScalar(copy.predicate));
  predicate = materialize(predicate, DType::Bool, "copy_ok");
  emitAsm(instruction,
          {shared,
           fmt::format("__cvta_generic_to_global({} ? &{}[{}] : &{}[0])", predicate.text,
                       from->second, sourceIndex.text, from->second),
           fmt::format("{} ? {} : 0", predicate.text, bytes)});
  return {};
}

Expected<void> CudaEmitter::emitAsyncCommit(const kir::AsyncCommit &) {
  InlinePtx instruction = cpAsyncCommit();
  KILN_TRY_VOID(require(instruction, "async commit"));
  emitAsm(instruction, {});
  return {};
}

Expected<void> CudaEmitter::emitAsyncWait(const kir::AsyncWait &wait) {
  InlinePtx instruction = cpAsyncWait(wait.pendingGroups);
  KILN_TRY_VOID(require(instruction, "async wait"));
  emitAsm(instruction, {});
  return {};
}

} // namespace kiln::codegen::cuda
