// The elementwise merge layers (Add, Subtract, Multiply, Average, Maximum), forward and
// backward, written once for the CPU and CUDA. Inputs arrive one at a time (a running value
// over inputs 0..i), so that a kernel reads each input once without an array of pointers.
#pragma once

#include "engine/core/hd.h"
#include "engine/ops/broadcast.h"
#include "engine/plan/execution_plan.h"

namespace mixlab {

// The running value after input `i` (0-based) of `count`: acc is the value after input i - 1
// (unused for i == 0). Average sums, then multiplies by 1/count after the last input.
MIXLAB_HD float merge_step(MergeOp op, float acc, float x, int i, int count) {
  if (i == 0) return x;
  float v = x;
  switch (op) {
    case MergeOp::add:
    case MergeOp::average:
      v = acc + x;
      break;
    case MergeOp::subtract:
      v = acc - x;
      break;
    case MergeOp::multiply:
      v = acc * x;
      break;
    case MergeOp::maximum:
      // A NaN in either propagates; else the larger, the earlier on a tie.
      v = x != x ? x : (acc != acc ? acc : (x > acc ? x : acc));
      break;
    case MergeOp::concatenate:
      break;
  }
  if (op == MergeOp::average && i == count - 1) v = v * (1.0f / static_cast<float>(count));
  return v;
}

// The gradient of input `i` from dy, for the merges whose gradient needs no other input:
// add (dy), subtract (dy, -dy), average (dy / count).
MIXLAB_HD float merge_grad_linear(MergeOp op, float dy, int i, int count) {
  if (op == MergeOp::subtract && i == 1) return -dy;
  if (op == MergeOp::average) return dy * (1.0f / static_cast<float>(count));
  return dy;
}

// Multiply: input i's gradient is dy times the product of the other inputs, accumulated one
// input j at a time (j != i): acc starts at dy.
MIXLAB_HD float multiply_grad_step(float acc, float xj) {
  return acc * xj;
}

// Maximum: input i gets dy where it is the maximum, the first such input on ties (as
// TensorFlow's pairwise maximum does), else 0. `best` is the maximum of all inputs (the
// output), `first_at_best` whether no input before i equals it.
MIXLAB_HD float maximum_grad(float dy, float xi, float best, bool first_at_best) {
  return xi == best && first_at_best ? dy : 0.0f;
}

}  // namespace mixlab
