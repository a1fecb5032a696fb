# --- Data, read as MixLab reads it: raw 0..255 pixels as float32 in HWC order (the model
# rescales), integer labels. -------------------------------------------------------------------


def _read(path):
    with open(path, "rb") as f:
        data = f.read()
    # Plain or gzip-compressed alike, told apart by the first bytes.
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _find(directory, base):
    for name in (base, base + ".gz"):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"{os.path.join(directory, base)}: not found (nor {base}.gz)")


def _idx_images(path):
    data = _read(path)
    magic, count, rows, cols = struct.unpack(">IIII", data[:16])
    if magic != 0x803:
        raise ValueError(f"{path}: not an IDX image file (magic {magic:#x})")
    return np.frombuffer(data, np.uint8, count * rows * cols, 16).reshape(count, rows, cols, 1)


def _idx_labels(path):
    data = _read(path)
    magic, count = struct.unpack(">II", data[:8])
    if magic != 0x801:
        raise ValueError(f"{path}: not an IDX label file (magic {magic:#x})")
    return np.frombuffer(data, np.uint8, count, 8)


def _cifar(directory, files, label_bytes):
    record = label_bytes + 3 * 32 * 32
    raw = np.concatenate([np.frombuffer(_read(os.path.join(directory, f)), np.uint8) for f in files])
    records = raw.reshape(-1, record)
    labels = records[:, label_bytes - 1]  # CIFAR-100: the fine label (the second byte)
    images = records[:, label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)  # planes -> HWC
    return np.ascontiguousarray(images), labels


def _cifar_dir(directory, subdir, probe):
    return directory if os.path.exists(os.path.join(directory, probe)) else os.path.join(directory, subdir)


def load_dataset():
    """(x_train, y_train), (x_test, y_test): float32 (N,) + INPUT_SHAPE and int64 labels."""
    kind = DATASET["kind"]
    if kind in ("fashion-mnist", "mnist"):
        d = DATASET["dir"]
        train = (_idx_images(_find(d, "train-images-idx3-ubyte")), _idx_labels(_find(d, "train-labels-idx1-ubyte")))
        test = (_idx_images(_find(d, "t10k-images-idx3-ubyte")), _idx_labels(_find(d, "t10k-labels-idx1-ubyte")))
    elif kind == "cifar10":
        d = _cifar_dir(DATASET["dir"], "cifar-10-batches-bin", "data_batch_1.bin")
        train = _cifar(d, [f"data_batch_{i}.bin" for i in range(1, 6)], 1)
        test = _cifar(d, ["test_batch.bin"], 1)
    elif kind == "cifar100":
        d = _cifar_dir(DATASET["dir"], "cifar-100-binary", "train.bin")
        train = _cifar(d, ["train.bin"], 2)
        test = _cifar(d, ["test.bin"], 2)
    elif kind == "text":
        # The file's bytes as tokens, sequences of SEQ_LEN one after another, each step labelled
        # with the next byte; the last tenth held out (as MixLab's text:PATH:SEQ_LEN).
        data = np.frombuffer(_read(DATASET["path"]), dtype=np.uint8)
        s, split = DATASET["sequence_length"], len(data) - len(data) // 10

        def windows(part):
            n = (len(part) - 1) // s
            return part[:n * s].reshape(n, s), part[1:n * s + 1].reshape(n, s)
        train, test = windows(data[:split]), windows(data[split:])
    elif kind == "tokens":
        # MixLab's seeded token generator is not reproduced: random ids (and labels: the next
        # id, or a class) of the same shapes stand in; they time the same.
        rng = np.random.default_rng(1)
        s, v, classes = DATASET["sequence_length"], DATASET["vocabulary"], DATASET["classes"]

        def tokens(n):
            ids = rng.integers(0, v, (n, s + 1), dtype=np.uint8)
            if classes:
                return ids[:, :s], rng.integers(0, classes, n)
            return ids[:, :s], ids[:, 1:]
        train, test = tokens(DATASET["train_size"]), tokens(max(1, DATASET["train_size"] // 5))
    else:
        # MixLab's synthetic generator (a seeded, learnable set) is not reproduced here: random
        # pixels and labels of the same shape and sizes stand in for it. They time the same; their
        # losses are not comparable with MixLab's.
        rng = np.random.default_rng(DATASET["seed"])
        n, classes = DATASET["train_size"], DATASET["classes"]
        n_test = max(1, n // 5)
        shape = tuple(DATASET["shape"])
        train = (rng.integers(0, 256, (n,) + shape, dtype=np.uint8), rng.integers(0, classes, n))
        test = (rng.integers(0, 256, (n_test,) + shape, dtype=np.uint8), rng.integers(0, classes, n_test))

    def prepare(images, labels):
        # The model's input shape: an image, or its pixels as features ([H*W*C]).
        return images.astype(np.float32).reshape((len(images),) + INPUT_SHAPE), labels.astype(np.int64)

    return prepare(*train), prepare(*test)


def batches(n, rng):
    """Each step's sample indices: a new shuffle every epoch, an epoch's last batch short (as in
    MixLab; its shuffling order itself is MixLab's own and not reproduced)."""
    while True:
        order = rng.permutation(n)
        for start in range(0, n, BATCH_SIZE):
            yield order[start:start + BATCH_SIZE]


def report(step_ms, loss, accuracy):
    """Keras's end-of-epoch line ("N/N - Xs Yms/step - ...", the time per step over the steps after
    warm-up) and the median step time, MixLab's headline figure."""
    warmup = min(WARMUP_STEPS, len(step_ms) // 2)
    measured = step_ms[warmup:]
    per_step_s = statistics.mean(measured) / 1000.0
    if per_step_s >= 1:
        per_step = f"{per_step_s:.0f}s/step"
    elif per_step_s >= 1e-3:
        per_step = f"{per_step_s * 1e3:.0f}ms/step"
    else:
        per_step = f"{per_step_s * 1e6:.0f}us/step"
    n = len(step_ms)
    print(f"{n}/{n} - {sum(step_ms) / 1000.0:.0f}s {per_step} - accuracy: {accuracy:.4f} - loss: {loss:.4f}")
    print(f"median step ms: {statistics.median(measured):.3f} "
          f"(steps {warmup + 1}..{n}; {warmup} warm-up steps left out)", flush=True)
