// Narrow-float conversions that generated host code calls where no
// instruction does the job (fp8 both ways; f64 -> f16/bf16 rounding once;
// f16 on CPUs without F16C). Thin C wrappers over support/FloatConvert.h, so
// the JIT's results match the reference interpreter bit for bit.
#pragma once

#include <cstdint>

extern "C" {
uint8_t kiln_cpu_f32_to_f8e4m3(float value);
uint8_t kiln_cpu_f64_to_f8e4m3(double value);
float kiln_cpu_f8e4m3_to_f32(uint8_t bits);
uint8_t kiln_cpu_f32_to_f8e5m2(float value);
uint8_t kiln_cpu_f64_to_f8e5m2(double value);
float kiln_cpu_f8e5m2_to_f32(uint8_t bits);
uint16_t kiln_cpu_f32_to_f16(float value);
uint16_t kiln_cpu_f64_to_f16(double value);
float kiln_cpu_f16_to_f32(uint16_t bits);
uint16_t kiln_cpu_f64_to_bf16(double value);
}
