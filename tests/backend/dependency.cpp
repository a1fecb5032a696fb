// The dependency of missing_dependency.cpp's library, kept where the dynamic linker never looks.
extern "C" __attribute__((visibility("default"))) int mixlab_test_dependency_value() {
  return 7;
}
