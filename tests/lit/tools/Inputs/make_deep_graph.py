"""Prints a graph whose loss is a chain of N alternating sin/tanh ops on f32[4]:
input %x, param %w, %a = x * w, the chain, then reduce_sum -> "loss"."""
import sys

count = int(sys.argv[1])
print("graph @deep {")
print("  input %x: f32[4]")
print("  param %w: f32[4]")
print("  %a: f32[4] = mul(%x, %w)")
previous = "%a"
for i in range(count):
    print(f"  %{i}: f32[4] = {'sin' if i % 2 == 0 else 'tanh'}({previous})")
    previous = f"%{i}"
print(f"  %loss: f32[] = reduce_sum({previous}) {{axes = [0]}}")
print('  output "loss" = %loss')
print("}")
