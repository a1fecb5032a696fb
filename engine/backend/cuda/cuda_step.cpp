// The CUDA executor's step protocol: a training step is one asynchronous launch (the batch taken
// from staging, forward, loss, backward, the overflow check, the loss-scale state machine and
// the optimizer, all on the device) followed by one readback of the step's state; with
// cuda_graphs the launch replays a captured graph. An evaluation step is forward and loss.
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_executor.h"
#include "engine/backend/cuda/merge_node.h"
#include "engine/backend/cuda/sequence_nodes.h"

namespace mixlab::cuda {

namespace {

double elapsed_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  return static_cast<double>(ms);
}

}  // namespace

void CudaExecutor::write_params(std::uint64_t step, bool train) {
  // The previous copy from the pinned parameters must be done before they change.
  CUDA_CHECK(cudaEventSynchronize(params_copied_));
  host_params_->step = step;
  host_params_->real_samples = real_samples_;
  host_params_->train = train ? 1 : 0;
  CUDA_CHECK(cudaMemcpyAsync(params_, host_params_, sizeof(StepParams), cudaMemcpyHostToDevice,
                             ctx_.stream));
  CUDA_CHECK(cudaEventRecord(params_copied_, ctx_.stream));
}

void CudaExecutor::prepare_step(std::uint64_t step, bool train) {
  if (!staging_->pending()) {
    if (real_samples_ < 1) throw ConfigError("a step before a batch was loaded");
    write_params(step, train);  // the same batch again
    return;
  }
  staging_->wait_ready();
  real_samples_ = staging_->pending_samples();
  // A gather reads the step parameters' real_samples: they are written first.
  write_params(step, train);
  staging_->take(params_, static_cast<float*>(input_.data), labels_);
}

void CudaExecutor::run_forward(bool timed) {
  std::vector<const DTensor*> xs;
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    if (timed) CUDA_CHECK(cudaEventRecord(node_events_fwd_[k], ctx_.stream));
    if (nodes_[k]->aliases_input()) continue;
    const PlanNode& node = plan_.nodes[k];
    if (node.op == PlanOp::merge) {
      xs.clear();
      for (const PlanInput& in : node.inputs) xs.push_back(&tensor(in.node));
      static_cast<const MergeNode&>(*nodes_[k]).forward_inputs(ctx_, xs, outputs_[k]);
    } else if (node.op == PlanOp::attention) {
      xs.clear();
      for (const PlanInput& in : node.inputs) xs.push_back(&tensor(in.node));
      static_cast<AttentionNode&>(*nodes_[k]).forward_inputs(ctx_, xs, outputs_[k]);
    } else {
      nodes_[k]->forward(ctx_, node_input(static_cast<int>(k)), outputs_[k]);
    }
  }
  if (timed) CUDA_CHECK(cudaEventRecord(node_events_fwd_[nodes_.size()], ctx_.stream));
}

void CudaExecutor::run_loss(bool compute_gradient) {
  // Fused heads read the logits: the final activation's input.
  const int seed = plan_.loss_node;
  const DTensor& src = outputs_[static_cast<std::size_t>(seed)];
  const int seed_grad = plan_.nodes[static_cast<std::size_t>(seed)].grad;
  // A model without parameters takes no gradient (its nodes run no backward).
  const bool seeded = compute_gradient && seed_grad >= 0;
  DTensor dsrc = seeded ? grad_view(seed_grad, src) : DTensor{};
  kernels::loss(plan_.head, src.data, src.dtype, labels_, plan_.batch,
                static_cast<int>(plan_.positions), static_cast<int>(plan_.classes), params_, state_,
                loss_rows_, seeded ? dsrc.data : nullptr, ctx_.stream);
  if (compute_gradient) backward_from_ = seed;
}

void CudaExecutor::run_backward(bool timed) {
  if (backward_from_ < 0) throw ConfigError("backward() without a seeded output gradient");
  // Events before each node from backward_from_ down and after the last (index 0): a node that
  // runs no backward gets two events together.
  timed_backward_from_ = backward_from_;
  timed_backward_stop_ = 0;
  std::vector<const DTensor*> xs;
  for (int k = backward_from_; k >= 0; --k) {
    if (timed) CUDA_CHECK(cudaEventRecord(node_events_bwd_[k + 1], ctx_.stream));
    const PlanNode& node = plan_.nodes[static_cast<std::size_t>(k)];
    if (!node.backward) continue;
    const DTensor dy = grad_view(node.grad, outputs_[static_cast<std::size_t>(k)]);
    xs.clear();
    for (const PlanInput& in : node.inputs) xs.push_back(&tensor(in.node));
    if (node.aliases_input()) {
      // The same values seen with the input's shape: nothing to compute unless the input's
      // gradient buffer is another one (copied) or holds an earlier reader's (added).
      const PlanInput& in = node.inputs.front();
      const int target = in.node == kPlanInput
                             ? plan_.input_grad
                             : plan_.nodes[static_cast<std::size_t>(in.node)].grad;
      if (in.grad && (in.accumulate || target != node.grad)) {
        const DTensor dst = grad_view(target, *xs.front());
        if (in.accumulate) {
          kernels::accumulate(dy.data, dst.data, dst.dtype, dst.elements(), ctx_.stream);
        } else {
          CUDA_CHECK(cudaMemcpyAsync(dst.data, dy.data, dst.bytes(), cudaMemcpyDeviceToDevice,
                                     ctx_.stream));
        }
      }
    } else {
      const bool several = node.op == PlanOp::merge || node.op == PlanOp::attention;
      const std::size_t count = several ? node.inputs.size() : 1;
      for (std::size_t i = 0; i < count; ++i) {
        if (node.inputs[i].grad || !several) {
          input_gradient(k, static_cast<int>(i), dy, xs);
        }
      }
    }
  }
  if (timed) CUDA_CHECK(cudaEventRecord(node_events_bwd_[0], ctx_.stream));
  if (options_.input_gradient && plan_.input_grad >= 0) {
    input_gradient_ = grad_view(plan_.input_grad, input_);
  }
  backward_from_ = -1;
}

void CudaExecutor::input_gradient(int k, int i, const DTensor& dy,
                                  std::span<const DTensor* const> xs) {
  const PlanNode& node = plan_.nodes[static_cast<std::size_t>(k)];
  const PlanInput& in = node.inputs[static_cast<std::size_t>(i)];
  const DTensor& x = *xs[static_cast<std::size_t>(i)];
  const DTensor& y = outputs_[static_cast<std::size_t>(k)];
  DTensor dx, target;
  if (in.grad) {
    const int buffer = in.node == kPlanInput ? plan_.input_grad
                                             : plan_.nodes[static_cast<std::size_t>(in.node)].grad;
    target = grad_view(buffer, x);
    dx = in.accumulate ? grad_view(plan_.grad_scratch, x) : target;
  }
  if (node.op == PlanOp::merge) {
    static_cast<const MergeNode&>(*nodes_[static_cast<std::size_t>(k)])
        .backward_input(ctx_, xs, y, dy, i, dx);
  } else if (node.op == PlanOp::attention) {
    // Input 0's call computes all three gradients: the plan gives each its own buffer.
    if (!in.grad || in.accumulate) {
      throw BackendError(node.label + ": its projections' gradients must have their own buffers");
    }
    static_cast<AttentionNode&>(*nodes_[static_cast<std::size_t>(k)])
        .backward_input(ctx_, xs, y, dy, i, dx);
  } else {
    nodes_[static_cast<std::size_t>(k)]->backward(ctx_, x, y, dy, in.grad ? &dx : nullptr);
  }
  if (in.grad && in.accumulate) {
    kernels::accumulate(dx.data, target.data, target.dtype, target.elements(), ctx_.stream);
  }
}

void CudaExecutor::read_state() {
  CUDA_CHECK(cudaMemcpyAsync(host_state_, state_, sizeof(DeviceState), cudaMemcpyDeviceToHost,
                             ctx_.stream));
  CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));
}

template <class Edit>
void CudaExecutor::edit_state(Edit edit) {
  read_state();
  edit(*host_state_);
  CUDA_CHECK(cudaMemcpyAsync(state_, host_state_, sizeof(DeviceState), cudaMemcpyHostToDevice,
                             ctx_.stream));
}

void CudaExecutor::set_loss_scaling(const LossScaleConfig& config) {
  no_step_in_flight("set_loss_scaling()");
  CUDA_CHECK(cudaSetDevice(device_));
  scaling_ = config;
  edit_state([&](DeviceState& s) {
    s.scaler = initial_loss_scale<float>(config);  // Adam's step count goes on, as the CPU's
  });
  CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));
  // A captured graph bakes in the configuration: capture again with the new one.
  if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
  if (graph_) cudaGraphDestroy(graph_);
  graph_exec_ = nullptr;
  graph_ = nullptr;
  eager_steps_ = 0;
}

void CudaExecutor::enqueue_train_body() {
  const bool timed_layers = options_.layer_timing;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(ctx_.stream, &capture));
  const bool in_graph = capture != cudaStreamCaptureStatusNone;  // no timing events inside
  kernels::begin_step(state_, scaling_.mode != LossScaleConfig::Mode::none, ctx_.stream);
  run_forward(timed_layers);
  if (!in_graph) CUDA_CHECK(cudaEventRecord(ev_forward_, ctx_.stream));
  run_loss(true);
  run_backward(timed_layers);
  if (!in_graph) CUDA_CHECK(cudaEventRecord(ev_backward_, ctx_.stream));
  for (const GradientRun& run : gradient_runs_) {
    kernels::unscale_and_check(ctx_.grads + run.begin, run.count, run.raw, state_, ctx_.stream);
  }
  kernels::update_loss_scale(state_, scaling_, optimizer_, ctx_.stream);
  kernels::optimizer_update(optimizer_, ctx_.master, ctx_.grads, opt_state_[0], opt_state_[1],
                            ctx_.copy16, ctx_.copy_dtype, plan_.param_floats, state_, ctx_.stream);
}

void CudaExecutor::capture_graph() {
  CUDA_CHECK(cudaStreamBeginCapture(ctx_.stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue_train_body();
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(ctx_.stream, &broken);
    if (broken) cudaGraphDestroy(broken);
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(ctx_.stream, &graph_));
  const cudaError_t status = cudaGraphInstantiate(&graph_exec_, graph_, 0);
  if (status != cudaSuccess) {
    cudaGraphDestroy(graph_);
    graph_ = nullptr;
    graph_exec_ = nullptr;
    CUDA_CHECK(status);
  }
}

void CudaExecutor::launch_step(Phase phase, std::uint64_t step) {
  if (step_in_flight_) throw ConfigError("launch_step() before the previous step was finished");
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaEventRecord(ev_start_, ctx_.stream));
  const bool train = phase == Phase::train;
  prepare_step(step, train);
  step_samples_ = real_samples_;
  step_phase_ = phase;
  if (train) {
    // CUDA graphs: the first step runs eagerly (libraries load their kernels), the second is
    // captured, and every later one replays the capture. Per-layer timing needs the eager path.
    const bool use_graph = options_.cuda_graphs && !options_.layer_timing;
    if (use_graph && !graph_exec_ && eager_steps_ >= 1) {
      try {
        capture_graph();
      } catch (const BackendError& e) {
        // The library's message alone ("operation not permitted when stream is capturing")
        // does not say that the run's CUDA graphs option is what failed, nor what to do.
        throw BackendError(std::string("CUDA graphs: capturing the training step failed; train "
                                       "without CUDA graphs (mixlab-cli: leave out --cuda-graphs; "
                                       "the Run panel: clear CUDA graphs): ") +
                           e.what());
      }
    }
    if (graph_exec_) {
      CUDA_CHECK(cudaGraphLaunch(graph_exec_, ctx_.stream));
    } else {
      enqueue_train_body();
      ++eager_steps_;
    }
  } else {
    kernels::begin_step(state_, scaling_.mode != LossScaleConfig::Mode::none, ctx_.stream);
    run_forward(false);
    CUDA_CHECK(cudaEventRecord(ev_forward_, ctx_.stream));
    run_loss(false);
  }
  CUDA_CHECK(cudaMemcpyAsync(host_state_, state_, sizeof(DeviceState), cudaMemcpyDeviceToHost,
                             ctx_.stream));
  CUDA_CHECK(cudaEventRecord(ev_end_, ctx_.stream));
  step_in_flight_ = true;
}

StepResult CudaExecutor::finish_step() {
  if (!step_in_flight_) throw ConfigError("finish_step() without launch_step()");
  step_in_flight_ = false;
  CUDA_CHECK(cudaEventSynchronize(ev_end_));
  CUDA_CHECK(cudaGetLastError());
  const DeviceState& s = *host_state_;
  StepResult r;
  r.batch.samples = step_samples_;
  // A row per label (per step of a (steps, classes) output): the loss is their mean, and a
  // sample's accuracy the fraction of its steps right, as the CPU executor reports them.
  const auto positions = static_cast<double>(plan_.positions);
  r.batch.loss = static_cast<double>(s.loss_sum) / (step_samples_ * positions);
  r.batch.correct = s.correct / positions;
  r.device_ms = elapsed_ms(ev_start_, ev_end_);
  if (step_phase_ == Phase::eval) {
    r.loss_scale = r.next_loss_scale = s.scaler.scale;
    r.forward_ms = elapsed_ms(ev_start_, ev_forward_);
    return r;
  }
  r.gradients_finite = s.nonfinite == 0;
  if (!r.gradients_finite) r.overflows = layer_overflows();
  r.applied = s.applied != 0;
  if (plan_.policy == Policy::mixed_float8) {
    for (auto& node : nodes_) {
      node->end_training_step(ctx_, r.applied);
      node->append_fp8_steps(r.fp8);
    }
    number_fp8_parts(r.fp8);
  }
  r.loss_scale = s.step_scale;
  r.next_loss_scale = s.scaler.scale;
  if (graph_exec_) {
    r.forward_ms = r.backward_ms = r.optimizer_ms = std::nan("");  // inside the graph
  } else {
    r.forward_ms = elapsed_ms(ev_start_, ev_forward_);
    r.backward_ms = elapsed_ms(ev_forward_, ev_backward_);
    r.optimizer_ms = elapsed_ms(ev_backward_, ev_end_);
  }
  if (options_.layer_timing) collect_layer_timings();
  return r;
}

// On a step whose overflow check failed (rare: the copy is not worth a kernel): the float32
// gradient array as the check left it, rounded and unscaled (a value that overflowed its layer's
// 16-bit type is inf there), counted per layer.
std::vector<LayerOverflow> CudaExecutor::layer_overflows() {
  std::int64_t end = 0;
  for (const ParamSlot* s : slots_) end = std::max(end, s->offset + s->count);
  std::vector<float> grads(static_cast<std::size_t>(end));
  CUDA_CHECK(cudaMemcpyAsync(grads.data(), ctx_.grads, grads.size() * sizeof(float),
                             cudaMemcpyDeviceToHost, ctx_.stream));
  CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));
  std::vector<LayerOverflow> out;
  for (const ParamSlot* s : slots_) {
    if (!is_trainable(s->kind)) continue;
    LayerOverflow o{s->layer, 0, s->count};
    for (std::int64_t i = s->offset; i < s->offset + s->count; ++i) {
      o.nonfinite += !std::isfinite(grads[static_cast<std::size_t>(i)]);
    }
    out.push_back(o);
  }
  return merge_layer_overflows(std::move(out));
}

void CudaExecutor::collect_layer_timings() {
  layer_timings_.assign(plan_.layer_last_node.size(), LayerTiming{});
  for (std::size_t i = 0; i < layer_timings_.size(); ++i) {
    layer_timings_[i].layer = static_cast<int>(i);
  }
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    auto& t = layer_timings_[static_cast<std::size_t>(nodes_[k]->layer)];
    t.forward_ms += elapsed_ms(node_events_fwd_[k], node_events_fwd_[k + 1]);
    const int ki = static_cast<int>(k);
    if (ki >= timed_backward_stop_ && ki <= timed_backward_from_) {
      // Backward runs from backward_from_ down: node k's part lies between the events recorded
      // before it (k + 1) and before the next one below it (k).
      t.backward_ms += elapsed_ms(node_events_bwd_[k + 1], node_events_bwd_[k]);
    }
  }
}

}  // namespace mixlab::cuda
