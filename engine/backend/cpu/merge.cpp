#include "engine/backend/cpu/merge.h"

#include <stdexcept>

#include "engine/core/error.h"
#include "engine/ops/merge.h"

namespace mixlab::cpu {

namespace {

// A Concatenate's layout: the per-sample shape split at the axis into (outer, axis, inner),
// the batch folded into outer.
struct ConcatLayout {
  std::int64_t outer = 1, inner = 1, out_axis = 0;
};

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
  with_storage(y.storage, [&](auto s) {
#pragma omp parallel for schedule(static)
    for (std::int64_t e = 0; e < n; ++e) {
      float acc = 0.0f;
      for (int i = 0; i < count; ++i) {
        acc = merge_step(op_, acc, load<s()>(xs[static_cast<std::size_t>(i)]->data, e), i, count);
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
  with_storage(dy.storage, [&](auto sd) {
    with_storage(y.storage, [&](auto s) {
      with_storage(dx.storage, [&](auto so) {
#pragma omp parallel for schedule(static)
        for (std::int64_t e = 0; e < n; ++e) {
          const float g = load<sd()>(dy.data, e);
          float v = 0.0f;
          if (op_ == MergeOp::multiply) {
            v = g;
            for (int j = 0; j < count; ++j) {
              if (j != i)
                v = multiply_grad_step(v, load<s()>(xs[static_cast<std::size_t>(j)]->data, e));
            }
          } else if (op_ == MergeOp::maximum) {
            const float best = load<s()>(y.data, e);
            bool first = true;
            for (int j = 0; j < i; ++j) {
              first = first && load<s()>(xs[static_cast<std::size_t>(j)]->data, e) != best;
            }
            v = maximum_grad(g, load<s()>(xs[static_cast<std::size_t>(i)]->data, e), best, first);
          } else {
            v = merge_grad_linear(op_, g, i, count);
          }
          store<so()>(dx.data, e, v);
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
