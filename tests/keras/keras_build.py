"""A Keras 3 model from a MixLab spec (its JSON as a dict): a Sequential model for a stack, a
functional one for a graph (a spec whose layers name their "inputs"). The parity checks
(parity.py) build the Keras side of every comparison with it."""
import keras

MERGES = ("Add", "Subtract", "Multiply", "Average", "Maximum", "Concatenate")


@keras.saving.register_keras_serializable(package="keras_hub")
class PositionEmbedding(keras.layers.Layer):
    """keras_hub's PositionEmbedding (keras_hub/src/layers/modeling/position_embedding.py) as its
    source computes it, without installing keras_hub: a learned (sequence_length, features)
    table whose first `steps` rows are broadcast over the batch; filed under keras_hub's
    registered name, as keras_hub saves it."""

    def __init__(self, sequence_length, initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.sequence_length = int(sequence_length)
        self.initializer = keras.initializers.get(initializer)

    def build(self, inputs_shape):
        self.position_embeddings = self.add_weight(
            name="embeddings", shape=[self.sequence_length, inputs_shape[-1]],
            initializer=self.initializer, trainable=True)
        self.built = True

    def call(self, inputs, start_index=0):
        shape = keras.ops.shape(inputs)
        position_embeddings = keras.ops.convert_to_tensor(self.position_embeddings)
        position_embeddings = keras.ops.slice(position_embeddings, (start_index, 0),
                                              (shape[-2], shape[-1]))
        return keras.ops.broadcast_to(position_embeddings, shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({"sequence_length": self.sequence_length,
                       "initializer": keras.initializers.serialize(self.initializer)})
        return config


def keras_layer(l, **kw):
    """The Keras layer of one MixLab layer."""
    t = l["type"]
    if t == "Dense":
        return keras.layers.Dense(l["units"], activation=l.get("activation", "linear"),
                                  use_bias=l.get("use_bias", True), **kw)
    if t == "Conv2D":
        return keras.layers.Conv2D(l["filters"], l["kernel_size"], strides=l.get("strides", 1),
                                   padding=l.get("padding", "valid"),
                                   activation=l.get("activation", "linear"),
                                   use_bias=l.get("use_bias", True), **kw)
    if t in ("MaxPooling2D", "AveragePooling2D"):
        return getattr(keras.layers, t)(pool_size=l.get("pool_size", 2), strides=l.get("strides"),
                                        padding=l.get("padding", "valid"), **kw)
    if t in ("GlobalAveragePooling2D", "GlobalMaxPooling2D", "GlobalAveragePooling1D",
             "GlobalMaxPooling1D"):
        return getattr(keras.layers, t)(keepdims=l.get("keepdims", False), **kw)
    if t == "Flatten":
        return keras.layers.Flatten(**kw)
    if t == "Dropout":
        return keras.layers.Dropout(l["rate"], **kw)
    if t == "Activation":
        return keras.layers.Activation(l["activation"], **kw)
    if t == "Rescaling":
        return keras.layers.Rescaling(l["scale"], offset=l.get("offset", 0.0), **kw)
    if t == "Normalization":
        return keras.layers.Normalization(axis=l.get("axis", -1), mean=l.get("mean"),
                                          variance=l.get("variance"), **kw)
    if t == "ReLU":
        return keras.layers.ReLU(max_value=l.get("max_value"), negative_slope=l.get("negative_slope", 0.0),
                                 threshold=l.get("threshold", 0.0), **kw)
    if t == "BatchNormalization":
        return keras.layers.BatchNormalization(axis=l.get("axis", -1), momentum=l.get("momentum", 0.99),
                                               epsilon=l.get("epsilon", 0.001), center=l.get("center", True),
                                               scale=l.get("scale", True), **kw)
    if t == "ZeroPadding2D":
        return keras.layers.ZeroPadding2D(padding=l.get("padding", 1), **kw)
    if t == "DepthwiseConv2D":
        return keras.layers.DepthwiseConv2D(l["kernel_size"], strides=l.get("strides", 1),
                                            padding=l.get("padding", "valid"),
                                            depth_multiplier=l.get("depth_multiplier", 1),
                                            activation=l.get("activation", "linear"),
                                            use_bias=l.get("use_bias", True), **kw)
    if t == "SeparableConv2D":
        return keras.layers.SeparableConv2D(l["filters"], l["kernel_size"], strides=l.get("strides", 1),
                                            padding=l.get("padding", "valid"),
                                            depth_multiplier=l.get("depth_multiplier", 1),
                                            activation=l.get("activation", "linear"),
                                            use_bias=l.get("use_bias", True), **kw)
    if t == "Reshape":
        return keras.layers.Reshape(tuple(l["target_shape"]), **kw)
    if t == "Concatenate":
        return keras.layers.Concatenate(axis=l.get("axis", -1), **kw)
    if t in MERGES:
        return getattr(keras.layers, t)(**kw)
    if t == "Embedding":
        return keras.layers.Embedding(l["input_dim"], l["output_dim"], **kw)
    if t == "LayerNormalization":
        return keras.layers.LayerNormalization(axis=l.get("axis", -1), epsilon=l.get("epsilon", 0.001),
                                               center=l.get("center", True), scale=l.get("scale", True),
                                               **kw)
    if t == "PositionEmbedding":
        return PositionEmbedding(l["sequence_length"], **kw)
    if t == "MultiHeadAttention":
        return keras.layers.MultiHeadAttention(l["num_heads"], l["key_dim"], value_dim=l.get("value_dim"),
                                               use_bias=l.get("use_bias", True),
                                               output_shape=l.get("output_shape"), **kw)
    raise ValueError(f"layer type {t} unknown to the harness")


def build_keras(spec, policy="float32"):
    """The Keras model of `spec` under `policy`. A graph's layers must come in an order where
    each follows those it reads (MixLab's own files need not)."""
    previous = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy(policy)
    try:
        graph = any("inputs" in l or l["type"] == "MultiHeadAttention" for l in spec["layers"])
        # Token ids for an Embedding (Keras models give it int32), float32 otherwise.
        ids = spec["layers"][0]["type"] == "Embedding"
        inputs = keras.Input(shape=tuple(spec["input"]["shape"]), dtype="int32" if ids else "float32")
        layers, tensors, last = [inputs], {"input": inputs}, inputs
        for l in spec["layers"]:
            kw = {}
            if l.get("dtype") == "float32":
                kw["dtype"] = "float32"
            if "name" in l:
                kw["name"] = l["name"]
            layer = keras_layer(l, **kw)
            if not graph:
                layers.append(layer)
                continue
            sources = [tensors[name] for name in l.get("inputs", [])] or [last]
            if l["type"] == "MultiHeadAttention":  # self-attention: query and value
                last = layer(sources[0], sources[0], use_causal_mask=l.get("use_causal_mask", False))
            else:
                last = layer(sources if l["type"] in MERGES else sources[0])
            if "name" in l:
                tensors[l["name"]] = last
        if graph:
            return keras.Model(inputs, last, name=spec["name"])
        return keras.Sequential(layers, name=spec["name"])
    finally:
        keras.mixed_precision.set_dtype_policy(previous)
