// A shared library that is not a MixLab CUDA backend (no mixlab_cuda_plugin symbol): the
// loader must refuse it by name.
extern "C" __attribute__((visibility("default"))) int mixlab_test_not_a_plugin() {
  return 42;
}
