# ccache for every compile when it is installed (scripts/install-deps.sh installs it), so that a
# second build of the same sources, in this checkout or another, compiles only what changed:
# CI's runs, the fresh root of scripts/fresh-check.sh (which mounts the host's cache) and the
# fuzz build share one cache. MIXLAB_CCACHE=OFF builds without it; a launcher given on the
# command line or in the environment (CMAKE_CXX_COMPILER_LAUNCHER) is kept as it is.
#
# The cache is ccache's own (its default: ~/.cache/ccache). Two settings make it hit across
# checkouts in different folders, given to ccache by the launcher rather than in a config file:
#   CCACHE_BASEDIR=<this source tree>  paths inside the tree are hashed relative to the build
#                                      folder, so /work/main and /root/mixlab compile alike;
#   CCACHE_NOHASHDIR=true              the build folder's own path is left out of the hash (a
#                                      debug build's debug info then names the folder of the
#                                      build that filled the cache).
# What the cache cannot do is hide a missing package: configure still runs and finds (or fails
# to find) every package, and ccache preprocesses a source again when a header it recorded is
# gone, so the compile fails as it would without it (tests/ci/ccache_missing_header.sh).
set(MIXLAB_CCACHE AUTO CACHE STRING "Compile through ccache: AUTO (when found), ON (required), OFF")
set_property(CACHE MIXLAB_CCACHE PROPERTY STRINGS AUTO ON OFF)
set(MIXLAB_CCACHE_LAUNCHER "")
if(NOT MIXLAB_CCACHE STREQUAL "OFF")
  find_program(MIXLAB_CCACHE_PROGRAM ccache)
  if(MIXLAB_CCACHE_PROGRAM)
    set(MIXLAB_CCACHE_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}
                               CCACHE_NOHASHDIR=true ${MIXLAB_CCACHE_PROGRAM})
    foreach(_lang IN ITEMS C CXX CUDA)
      if(NOT CMAKE_${_lang}_COMPILER_LAUNCHER)
        set(CMAKE_${_lang}_COMPILER_LAUNCHER ${MIXLAB_CCACHE_LAUNCHER})
      endif()
    endforeach()
  elseif(MIXLAB_CCACHE STREQUAL "ON")
    message(FATAL_ERROR "MIXLAB_CCACHE=ON but ccache was not found. Install it (apt-get install "
                        "ccache, or scripts/install-deps.sh as root), or configure with "
                        "-DMIXLAB_CCACHE=AUTO|OFF.")
  endif()
endif()
if(MIXLAB_CCACHE_LAUNCHER)
  set(_mixlab_with_ccache ON)
else()
  set(_mixlab_with_ccache OFF)
endif()
add_feature_info(ccache _mixlab_with_ccache "compiles through ccache (MIXLAB_CCACHE=${MIXLAB_CCACHE}: ${MIXLAB_CCACHE_PROGRAM})")
