#!/usr/bin/env python3
"""A MixLab model (MODEL_NAME below) in Keras 3 (any backend: KERAS_BACKEND=jax|tensorflow|torch),
trained with MixLab's run settings; prints ms/step as Keras does.

Exported by MixLab (mixlab-cli export --to keras) from a model and a run's settings."""
{{SETTINGS}}
import numpy as np  # noqa: E402  (after THREADS is applied)
import keras  # noqa: E402


{{DATA_LOADER}}

class PositionEmbedding(keras.layers.Layer):
    """keras_hub's PositionEmbedding (without the dependency): a learned vector per position,
    the first `steps` rows of a (sequence_length, features) table for every sample."""

    def __init__(self, sequence_length, **kwargs):
        super().__init__(**kwargs)
        self.sequence_length = sequence_length

    def build(self, input_shape):
        self.position_embeddings = self.add_weight(
            name="embeddings", shape=(self.sequence_length, input_shape[-1]),
            initializer="glorot_uniform", trainable=True)

    def call(self, inputs):
        shape = keras.ops.shape(inputs)
        table = keras.ops.convert_to_tensor(self.position_embeddings)
        table = keras.ops.slice(table, (0, 0), (shape[-2], shape[-1]))
        return keras.ops.broadcast_to(keras.ops.cast(table, self.compute_dtype), shape)

    def get_config(self):
        return {**super().get_config(), "sequence_length": self.sequence_length}


def out_of_fp8(layer):
    """A layer MixLab keeps in bfloat16 under mixed_float8 ("dtype": "bfloat16"): quantize_float8
    leaves it (and the layers inside it) unquantized."""
    layer.mixlab_out_of_fp8 = True
    return layer


def quantize_float8(model):
    """model.quantize("float8"), but for the layers out_of_fp8() marks (Keras has no per-layer
    choice): each other leaf layer quantized as Model.quantize does it."""
    kept = set()
    for layer in model._flatten_layers():
        if getattr(layer, "mixlab_out_of_fp8", False):
            kept.update(id(inner) for inner in layer._flatten_layers())
    if not kept:
        model.quantize("float8")
        return
    for layer in model._flatten_layers():
        if id(layer) in kept or len(list(layer._flatten_layers())) != 1:
            continue
        try:
            layer.quantize("float8")
        except (NotImplementedError, AttributeError):
            pass  # a layer Keras does not quantize
    model.train_function = model.test_function = model.predict_function = None


class SelfAttention(keras.layers.MultiHeadAttention):
    """Keras's MultiHeadAttention as self-attention on its one input (query and value), with
    its causal mask as MixLab's layer field."""

    def __init__(self, num_heads, key_dim, use_causal_mask=False, **kwargs):
        super().__init__(num_heads, key_dim, **kwargs)
        self.use_causal_mask = use_causal_mask

    def build(self, input_shape):
        super().build(input_shape, input_shape)

    def call(self, inputs):
        return super().call(inputs, inputs, use_causal_mask=self.use_causal_mask)

    def compute_output_shape(self, input_shape):
        return super().compute_output_shape(input_shape, input_shape)


def build_model():
    # Keras's default initialisers, as MixLab's: glorot_uniform kernels, zero biases (the
    # same distributions; not MixLab's draws, which a .keras export carries).
{{MODEL}}


def make_optimizer():
    if OPTIMIZER == "sgd":
        optimizer = keras.optimizers.SGD(learning_rate=LEARNING_RATE, momentum=MOMENTUM, nesterov=NESTEROV)
    else:
        optimizer = keras.optimizers.Adam(learning_rate=LEARNING_RATE, beta_1=BETA_1, beta_2=BETA_2, epsilon=EPSILON)
    if LOSS_SCALE == "none":
        return optimizer
    # Keras 3's LossScaleOptimizer is dynamic (x2 after dynamic_growth_steps finite steps, x0.5
    # and the update skipped on overflow). MixLab's fixed scale: this initial scale that never
    # grows (Keras still halves it on an overflow, where MixLab keeps the factor).
    growth = GROWTH_INTERVAL if LOSS_SCALE == "dynamic" else 2**31 - 1
    return keras.optimizers.LossScaleOptimizer(optimizer, initial_scale=INITIAL_SCALE, dynamic_growth_steps=growth)


def targets(labels):
    """The loss's targets, made from the class labels as MixLab makes them."""
    if LOSS == "sparse_categorical_crossentropy":
        return labels
    if LOSS == "binary_crossentropy" and OUTPUTS == 1:
        return labels.astype(np.float32).reshape(-1, 1)
    return np.eye(OUTPUTS, dtype=np.float32)[labels]  # one-hot (binary: one positive output)


def accuracy_metric():
    """MixLab's accuracy: the argmax's for the categorical losses, the fraction of outputs on the
    right side of 0.5 for binary crossentropy (Keras's "accuracy" would pick categorical
    accuracy for a binary loss over several outputs)."""
    if LOSS == "binary_crossentropy":
        return keras.metrics.BinaryAccuracy(name="accuracy")
    if LOSS == "categorical_crossentropy":
        return keras.metrics.CategoricalAccuracy(name="accuracy")
    return keras.metrics.SparseCategoricalAccuracy(name="accuracy")


def main():
    keras.utils.set_random_seed(SEED)
    # mixed_float8 is Keras's float8 training: mixed_bfloat16, then every Dense's matmul in FP8
    # with delayed scaling (an amax history of 1024; MixLab's other FP8 settings have no Keras
    # counterpart) but for the layers MixLab keeps out of FP8 (quantize_float8).
    keras.mixed_precision.set_dtype_policy("mixed_bfloat16" if POLICY == "mixed_float8" else POLICY)
    (x_train, y_train), (x_test, y_test) = load_dataset()
    t_train, t_test = targets(y_train), targets(y_test)
    model = build_model()
    if POLICY == "mixed_float8":
        quantize_float8(model)
    compile_args = {}
    if POLICY == "mixed_float16" and LOSS_SCALE == "none":
        compile_args["auto_scale_loss"] = False  # Keras would add a dynamic LossScaleOptimizer
    model.compile(optimizer=make_optimizer(), loss=LOSS, metrics=[accuracy_metric()], **compile_args)
    print(f"{MODEL_NAME}: {model.count_params()} parameters (MixLab: {PARAMS}); Keras {keras.__version__}, "
          f"backend {keras.backend.backend()}; policy {POLICY}, loss scale {LOSS_SCALE}, {OPTIMIZER} "
          f"lr={LEARNING_RATE}, batch {BATCH_SIZE}, {STEPS} steps on {len(y_train)} samples", flush=True)

    rng = np.random.default_rng(SEED)
    step_ms = []
    logs = {}
    # One train_on_batch per step: it returns when the step is done (its logs come back as
    # numbers), so each step is timed whole, as MixLab times its steps. The first steps compile.
    for _, index in zip(range(STEPS), batches(len(y_train), rng)):
        x, t = x_train[index], t_train[index]
        start = time.perf_counter()
        logs = model.train_on_batch(x, t, return_dict=True)
        step_ms.append((time.perf_counter() - start) * 1000.0)
    # Keras's running means since the start, as its progress bar shows them.
    report(step_ms, float(logs["loss"]), float(logs.get("accuracy", float("nan"))))
    if EVALUATE:
        result = model.evaluate(x_test, t_test, batch_size=BATCH_SIZE, verbose=0, return_dict=True)
        print(f"test loss: {result['loss']:.4f} - test accuracy: {result.get('accuracy', float('nan')):.4f}")


if __name__ == "__main__":
    main()
