"""Prints a graph with N inputs of f32[2] joined by one concat, and each input also an output:
N inputs, N + 1 outputs, a concat of N operands."""
import sys

count = int(sys.argv[1])
print("graph @wide {")
for i in range(count):
    print(f"  input %x{i}: f32[2]")
operands = ", ".join(f"%x{i}" for i in range(count))
print(f"  %joined: f32[{2 * count}] = concat({operands}) {{axis = 0}}")
print('  output "joined" = %joined')
for i in range(count):
    print(f'  output "o{i}" = %x{i}')
print("}")
