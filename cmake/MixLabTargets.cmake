# Compile settings every MixLab target shares: C++20, warnings, optional sanitizers.
function(mixlab_target_defaults target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF)
  # -fno-math-errno: sqrt and friends set no errno, so loops calling them vectorise.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -fno-math-errno>)
  if(MIXLAB_CPU_BASELINE)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-march=${MIXLAB_CPU_BASELINE}>)
  endif()
  if(MIXLAB_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
  if(MIXLAB_SANITIZE)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer>)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
endfunction()
