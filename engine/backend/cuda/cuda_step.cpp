// The CUDA executor's step protocol: a training step is one asynchronous launch (the batch taken
// from staging, forward, loss, backward, the overflow check, the loss-scale state machine and
// the optimizer, all on the device) followed by one readback of the step's state; with
// cuda_graphs the launch replays a captured graph. An evaluation step is forward and loss.
#include <cmath>
#include <string>

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_executor.h"

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
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    if (timed) CUDA_CHECK(cudaEventRecord(node_events_fwd_[k], ctx_.stream));
    if (nodes_[k]->aliases_input()) continue;
    nodes_[k]->forward(ctx_, node_input(static_cast<int>(k)), outputs_[k]);
  }
  if (timed) CUDA_CHECK(cudaEventRecord(node_events_fwd_[nodes_.size()], ctx_.stream));
}

void CudaExecutor::run_loss(bool compute_gradient) {
  const int last = static_cast<int>(nodes_.size()) - 1;
  // Fused heads read the logits: the final activation's input.
  const bool fused = plan_.head == LossHead::softmax_crossentropy ||
                     plan_.head == LossHead::sigmoid_binary;
  const int seed = fused ? last - 1 : last;
  const DTensor& src = outputs_[static_cast<std::size_t>(seed)];
  DTensor dsrc = grad_view(0, src);
  kernels::loss(plan_.head, src.data, src.dtype, labels_, plan_.batch,
                static_cast<int>(plan_.classes), params_, state_, loss_rows_,
                compute_gradient ? dsrc.data : nullptr, ctx_.stream);
  if (compute_gradient) backward_from_ = seed;
}

void CudaExecutor::run_backward(bool timed) {
  if (backward_from_ < 0) throw ConfigError("backward() without a seeded output gradient");
  const int stop = options_.input_gradient ? 0 : plan_.first_param_node;
  int buffer = 0;
  DTensor dy = grad_view(0, outputs_[static_cast<std::size_t>(backward_from_)]);
  timed_backward_from_ = stop >= 0 ? backward_from_ : -1;  // -1: no backward events recorded
  timed_backward_stop_ = std::max(stop, 0);
  for (int k = backward_from_; stop >= 0 && k >= stop; --k) {
    if (timed) CUDA_CHECK(cudaEventRecord(node_events_bwd_[k + 1], ctx_.stream));
    const DTensor& x = node_input(k);
    const bool need_dx = k > stop || options_.input_gradient;
    if (nodes_[k]->aliases_input()) {
      dy.dims = x.dims;
      continue;
    }
    DTensor dx;
    if (need_dx) dx = grad_view(1 - buffer, x);
    nodes_[k]->backward(ctx_, x, outputs_[k], dy, need_dx ? &dx : nullptr);
    if (need_dx) {
      dy = dx;
      buffer = 1 - buffer;
    }
  }
  if (timed) CUDA_CHECK(cudaEventRecord(node_events_bwd_[timed_backward_stop_], ctx_.stream));
  if (options_.input_gradient) input_gradient_ = dy;
  backward_from_ = -1;
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
    s.scaler = initial_loss_scale<float>(config);
    s.iteration = 0;
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
  r.batch.loss = static_cast<double>(s.loss_sum) / step_samples_;
  r.batch.correct = s.correct;
  r.device_ms = elapsed_ms(ev_start_, ev_end_);
  if (step_phase_ == Phase::eval) {
    r.loss_scale = r.next_loss_scale = s.scaler.scale;
    r.forward_ms = elapsed_ms(ev_start_, ev_forward_);
    return r;
  }
  r.gradients_finite = s.nonfinite == 0;
  r.applied = s.applied != 0;
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
      // Backward runs from the last node down: node k's part lies between the events recorded
      // before it (k + 1) and before the next one below it (k).
      t.backward_ms += elapsed_ms(node_events_bwd_[k + 1], node_events_bwd_[k]);
    }
  }
}

}  // namespace mixlab::cuda
