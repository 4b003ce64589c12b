// Reference interpreter: collectives seen from one rank. The reference is a
// single process, so all_reduce (sum or mean) leaves its operand as it is;
// across ranks it runs in the compiled model (tests/dist).
#include "ir/ReferenceTestUtil.h"

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::test;

TEST_CASE("all_reduce on one rank is the identity", "[reference][op:all_reduce]") {
  HostTensor values = f32({2, 3}, {1.5, -2, 3, 0.25, 5, -6});
  checkExact(run(OpKind::AllReduce, {values}), DType::F32, {2, 3}, {1.5, -2, 3, 0.25, 5, -6});
  checkExact(run(OpKind::AllReduce, {values}, {{"op", std::string("mean")}}), DType::F32, {2, 3},
             {1.5, -2, 3, 0.25, 5, -6});
  checkExact(run(OpKind::AllReduce, {i64({3}, {7, -8, 9})}), DType::I64, {3}, {7, -8, 9});
}
