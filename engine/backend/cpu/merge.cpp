#include "engine/backend/cpu/merge.h"

#include <stdexcept>
#include <vector>

#include "engine/core/error.h"
#include "engine/ops/merge.h"

namespace mixlab::cpu {

namespace {

// A Concatenate's layout: the per-sample shape split at the axis into (outer, axis, inner),
// the batch folded into outer.
struct ConcatLayout {
  std::int64_t outer = 1, inner = 1, out_axis = 0;
};

// Each input's broadcast into the output (rank 0: none), and whether any input has one.
std::vector<Broadcast> broadcasts(std::span<const Tensor* const> xs, const Tensor& y, bool* any) {
  std::vector<Broadcast> b;
  *any = false;
  for (const Tensor* x : xs) {
    b.push_back(broadcast_of(x->dims, y.dims));
    *any = *any || b.back().rank != 0;
  }
  return b;
}

ConcatLayout concat_layout(const Shape& out, int axis, std::int64_t batch) {
  ConcatLayout l;
  l.outer = batch;
  for (int d = 0; d < axis; ++d) l.outer *= out[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < out.size(); ++d) l.inner *= out[d];
  l.out_axis = out[static_cast<std::size_t>(axis)];
  return l;
}

}  // namespace

MergeNode::MergeNode(int layer_index, const PlanNode& node, Storage storage)
    : op_(node.merge), axis_(node.axis), out_shape_(node.out_shape) {
  layer = layer_index;
  label = std::string(to_string(node.merge));
  out_storage = storage;
}

void MergeNode::forward(CpuContext&, const Tensor&, const Tensor&, Phase, std::uint64_t) {
  throw std::logic_error("MergeNode::forward: the executor calls forward_inputs()");
}

void MergeNode::backward(CpuContext&, const Tensor&, const Tensor&, const Tensor&, const Tensor*) {
  throw std::logic_error("MergeNode::backward: the executor calls backward_input()");
}

void MergeNode::forward_inputs(std::span<const Tensor* const> xs, const Tensor& y) const {
  const int count = static_cast<int>(xs.size());
  if (op_ == MergeOp::concatenate) {
    const std::int64_t batch = y.dims.front();
    const ConcatLayout l = concat_layout(out_shape_, axis_, batch);
    std::int64_t offset = 0;
    for (int i = 0; i < count; ++i) {
      const Tensor& x = *xs[static_cast<std::size_t>(i)];
      const std::int64_t extent = x.dims[static_cast<std::size_t>(axis_) + 1];
      const std::int64_t run = extent * l.inner;  // contiguous per outer index
      with_storage(x.storage, [&](auto si) {
        with_storage(y.storage, [&](auto so) {
#pragma omp parallel for schedule(static)
          for (std::int64_t o = 0; o < l.outer; ++o) {
            const std::int64_t src = o * run;
            const std::int64_t dst = o * l.out_axis * l.inner + offset * l.inner;
            for (std::int64_t j = 0; j < run; ++j) {
              store<so()>(y.data, dst + j, load<si()>(x.data, src + j));
            }
          }
        });
      });
      offset += extent;
    }
    return;
  }
  const std::int64_t n = y.elements();
  bool broadcast = false;
  const std::vector<Broadcast> b = broadcasts(xs, y, &broadcast);
  with_storage(y.storage, [&](auto s) {
    if (!broadcast) {
#pragma omp parallel for schedule(static)
      for (std::int64_t e = 0; e < n; ++e) {
        float acc = 0.0f;
        for (int i = 0; i < count; ++i) {
          acc = merge_step(op_, acc, load<s()>(xs[static_cast<std::size_t>(i)]->data, e), i, count);
        }
        store<s()>(y.data, e, acc);
      }
      return;
    }
#pragma omp parallel for schedule(static)
    for (std::int64_t e = 0; e < n; ++e) {
      float acc = 0.0f;
      for (int i = 0; i < count; ++i) {
        const auto k = static_cast<std::size_t>(i);
        acc = merge_step(op_, acc, load<s()>(xs[k]->data, b[k].input_index(e)), i, count);
      }
      store<s()>(y.data, e, acc);
    }
  });
}

void MergeNode::backward_input(std::span<const Tensor* const> xs, const Tensor& y, const Tensor& dy,
                               int i, const Tensor& dx) const {
  const int count = static_cast<int>(xs.size());
  if (op_ == MergeOp::concatenate) {
    const std::int64_t batch = y.dims.front();
    const ConcatLayout l = concat_layout(out_shape_, axis_, batch);
    std::int64_t offset = 0;
    for (int j = 0; j < i; ++j)
      offset += xs[static_cast<std::size_t>(j)]->dims[static_cast<std::size_t>(axis_) + 1];
    const std::int64_t extent = dx.dims[static_cast<std::size_t>(axis_) + 1];
    const std::int64_t run = extent * l.inner;
    with_storage(dy.storage, [&](auto si) {
      with_storage(dx.storage, [&](auto so) {
#pragma omp parallel for schedule(static)
        for (std::int64_t o = 0; o < l.outer; ++o) {
          const std::int64_t src = o * l.out_axis * l.inner + offset * l.inner;
          for (std::int64_t j = 0; j < run; ++j) {
            store<so()>(dx.data, o * run + j, load<si()>(dy.data, src + j));
          }
        }
      });
    });
    return;
  }
  const std::int64_t n = dx.elements();
  bool broadcast = false;
  const std::vector<Broadcast> b = broadcasts(xs, y, &broadcast);
  with_storage(dy.storage, [&](auto sd) {
    with_storage(y.storage, [&](auto s) {
      with_storage(dx.storage, [&](auto so) {
        // Input i's gradient from output element e (each input read where e reads it).
        const auto gradient = [&](std::int64_t e) {
          const auto at = [&](int j) {
            const auto k = static_cast<std::size_t>(j);
            return load<s()>(xs[k]->data, b[k].input_index(e));
          };
          const float g = load<sd()>(dy.data, e);
          if (op_ == MergeOp::multiply) {
            float v = g;
            for (int j = 0; j < count; ++j) {
              if (j != i) v = multiply_grad_step(v, at(j));
            }
            return v;
          }
          if (op_ == MergeOp::maximum) {
            const float best = load<s()>(y.data, e);
            bool first = true;
            for (int j = 0; j < i; ++j) first = first && at(j) != best;
            return maximum_grad(g, at(i), best, first);
          }
          return merge_grad_linear(op_, g, i, count);
        };
        const Broadcast& mine = b[static_cast<std::size_t>(i)];
        if (mine.rank == 0) {
#pragma omp parallel for schedule(static)
          for (std::int64_t e = 0; e < n; ++e) store<so()>(dx.data, e, gradient(e));
          return;
        }
        // A broadcast input: the sum, in float32, over the output elements that read each of
        // its elements (TensorFlow's reduce_sum over the broadcast axes).
        const std::int64_t fan = mine.fan();
#pragma omp parallel for schedule(static)
        for (std::int64_t j = 0; j < n; ++j) {
          float sum = 0.0f;
          for (std::int64_t k = 0; k < fan; ++k) sum += gradient(mine.output_index(j, k));
          store<so()>(dx.data, j, sum);
        }
      });
    });
  });
}

void accumulate(const Tensor& src, const Tensor& dst) {
  const std::int64_t n = dst.elements();
  with_storage(src.storage, [&](auto si) {
    with_storage(dst.storage, [&](auto so) {
#pragma omp parallel for simd schedule(static)
      for (std::int64_t e = 0; e < n; ++e) {
        store<so()>(dst.data, e, load<so()>(dst.data, e) + load<si()>(src.data, e));
      }
    });
  });
}

}  // namespace mixlab::cpu
