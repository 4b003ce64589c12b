// C entry points for the narrow-float conversions generated host code calls
// (declared with the rest of the host kernel ABI in codegen/HostKernelAbi.h).
#include "codegen/HostKernelAbi.h"

#include "support/FloatConvert.h"

extern "C" {
uint8_t kiln_cpu_f32_to_f8e4m3(float value) { return kiln::floatToF8E4M3Bits(value); }
uint8_t kiln_cpu_f64_to_f8e4m3(double value) { return kiln::doubleToF8E4M3Bits(value); }
float kiln_cpu_f8e4m3_to_f32(uint8_t bits) { return kiln::f8e4m3BitsToFloat(bits); }
uint8_t kiln_cpu_f32_to_f8e5m2(float value) { return kiln::floatToF8E5M2Bits(value); }
uint8_t kiln_cpu_f64_to_f8e5m2(double value) { return kiln::doubleToF8E5M2Bits(value); }
float kiln_cpu_f8e5m2_to_f32(uint8_t bits) { return kiln::f8e5m2BitsToFloat(bits); }
uint16_t kiln_cpu_f32_to_f16(float value) { return kiln::floatToHalfBits(value); }
uint16_t kiln_cpu_f64_to_f16(double value) { return kiln::doubleToHalfBits(value); }
float kiln_cpu_f16_to_f32(uint16_t bits) { return kiln::halfBitsToFloat(bits); }
uint16_t kiln_cpu_f64_to_bf16(double value) { return kiln::doubleToBFloat16Bits(value); }
}
