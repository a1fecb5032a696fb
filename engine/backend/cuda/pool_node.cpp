#include "engine/backend/cuda/pool_node.h"

namespace mixlab::cuda {

PoolNode::PoolNode(CudaContext& ctx, const ExecutionPlan& plan, const PlanNode& node,
                   const LayerSpec& spec, const LayerInfo& info)
    : CudaNode(node.layer, node.out_dtype, node.label), max_(pool_window(spec, info).max) {
  const PoolWindow window = pool_window(spec, info);
  shape_.n = plan.batch;
  const Shape image = pool_image_shape(spec, info);
  shape_.h = static_cast<int>(image[0]);
  shape_.w = static_cast<int>(image[1]);
  shape_.c = static_cast<int>(image[2]);
  shape_.oh = static_cast<int>(window.out_h);
  shape_.ow = static_cast<int>(window.out_w);
  shape_.kh = window.size.h;
  shape_.kw = window.size.w;
  shape_.sh = window.strides.h;
  shape_.sw = window.strides.w;
  shape_.pad_top = info.pad_top;
  shape_.pad_left = info.pad_left;
  if (info.pad_top == info.pad_bottom && info.pad_left == info.pad_right) {
    PoolDnnShape d;
    d.n = shape_.n;
    d.h = shape_.h;
    d.w = shape_.w;
    d.c = shape_.c;
    d.oh = shape_.oh;
    d.ow = shape_.ow;
    d.kh = shape_.kh;
    d.kw = shape_.kw;
    d.sh = shape_.sh;
    d.sw = shape_.sw;
    d.pad_h = info.pad_top;
    d.pad_w = info.pad_left;
    d.dtype = out_dtype;
    d.max = max_;
    dnn_ = std::make_unique<DnnPool>(ctx.dnn, d, label);
  }
}

// cuDNN pools when it supports the pooling; where it answers "not supported" (bfloat16 is not
// documented for its legacy pooling), MixLab's kernel takes over for the rest of the run, in both
// directions. The first training step runs eagerly, so the switch happens before any CUDA graph
// is captured.
void PoolNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  if (dnn_ && dnn_->forward(x.data, y.data)) return;
  dnn_.reset();
  kernels::pool_forward(max_, x.data, y.data, x.dtype, shape_, ctx.stream);
}

void PoolNode::backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                        const DTensor* dx) {
  if (!dx) return;
  if (dnn_ && dnn_->backward(x.data, y.data, dy.data, dx->data)) return;
  // When cuDNN ran this step's forward, its output stands: the kernel's maxima and averages are
  // cuDNN's, up to which of tied maxima takes the gradient.
  dnn_.reset();
  kernels::pool_backward(max_, x.data, dy.data, dx->data, x.dtype, shape_, ctx.stream);
}

}  // namespace mixlab::cuda
