// A plugin-shaped library that needs a shared library the dynamic linker cannot find (built
// without a run path, its dependency in a folder nothing searches) - the way the real plugin
// fails on a machine without libcublasLt or libcudnn. The loader must report dlopen's message.
extern "C" int mixlab_test_dependency_value();

extern "C" __attribute__((visibility("default"))) const void* mixlab_cuda_plugin() {
  static const int value = mixlab_test_dependency_value();
  return &value;
}
