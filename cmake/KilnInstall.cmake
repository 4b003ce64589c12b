# Installing kiln (docs/embedding.md): the public headers under include/kiln, libkiln and
# libkiln_rt with versioned SONAMEs, the tools, a CMake package exporting kiln::kiln and
# kiln::rt, pkg-config files, and a Debian package through CPack.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# kiln's sources name their headers from the source root ("ir/graph/Graph.h"), so the
# installed tree keeps that layout under include/kiln and a consumer's include path holds
# both include/ (for <kiln/kiln.h>) and include/kiln (for the headers it includes).
set(KILN_INSTALL_HEADER_DIR ${CMAKE_INSTALL_INCLUDEDIR}/kiln)

# The public headers: every header of the layers a program builds against, and everything
# they include (codegen/Target.h, say). What no public header reaches stays private: the LLVM
# glue in codegen/llvm and the driver API tables of runtime/cuda and runtime/cudnn.
set(KILN_PRIVATE_HEADERS runtime/cuda/CudaDriver.h runtime/cuda/CudaTensorMap.h
    runtime/cudnn/CudnnApi.h runtime/dist/NcclApi.h)
# The ONNX importer's public face is frontend/onnx/Import.h; the rest of it speaks protobuf.
file(GLOB_RECURSE KILN_ONNX_PRIVATE_HEADERS RELATIVE ${CMAKE_SOURCE_DIR}
     ${CMAKE_SOURCE_DIR}/frontend/onnx/*.h)
list(REMOVE_ITEM KILN_ONNX_PRIVATE_HEADERS frontend/onnx/Import.h)
list(APPEND KILN_PRIVATE_HEADERS ${KILN_ONNX_PRIVATE_HEADERS})
# A public header may include none of these: a consumer has no LLVM, and CUDA's headers are
# only the runtime's business (it loads the libraries with dlopen).
set(KILN_FORBIDDEN_PUBLIC_INCLUDE
    "#include[ \t]*[<\"](llvm/|llvm-c/|cuda\\.h|cudnn|nccl\\.h|mpi\\.h|nvrtc|sqlite3|onnx/|google/protobuf)")

function(kiln_public_headers out)
  set(queue)
  foreach(layer support ir passes frontend compiler runtime)
    file(GLOB_RECURSE found RELATIVE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/${layer}/*.h)
    list(APPEND queue ${found})
  endforeach()
  list(REMOVE_ITEM queue ${KILN_PRIVATE_HEADERS})
  foreach(umbrella kiln.h rt.h)
    file(STRINGS ${CMAKE_SOURCE_DIR}/include/kiln/${umbrella} lines REGEX "^#include \"")
    foreach(line ${lines})
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" header "${line}")
      list(APPEND queue ${header})
    endforeach()
  endforeach()
  set(seen)
  while(queue)
    list(POP_FRONT queue header)
    if(header IN_LIST seen)
      continue()
    endif()
    if(NOT EXISTS ${CMAKE_SOURCE_DIR}/${header})
      message(FATAL_ERROR "kiln install: a public header includes \"${header}\", which is not in the source tree")
    endif()
    if(header IN_LIST KILN_PRIVATE_HEADERS)
      message(FATAL_ERROR "kiln install: a public header includes the private ${header}")
    endif()
    list(APPEND seen ${header})
    file(STRINGS ${CMAKE_SOURCE_DIR}/${header} forbidden REGEX "${KILN_FORBIDDEN_PUBLIC_INCLUDE}")
    if(forbidden)
      message(FATAL_ERROR "kiln install: public header ${header} has ${forbidden}: "
                          "move it behind a private header or out of the public closure")
    endif()
    file(STRINGS ${CMAKE_SOURCE_DIR}/${header} lines REGEX "^#include \"")
    foreach(line ${lines})
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
      list(APPEND queue ${included})
    endforeach()
  endwhile()
  list(SORT seen)
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

kiln_public_headers(KILN_PUBLIC_HEADERS)
foreach(header ${KILN_PUBLIC_HEADERS})
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${CMAKE_SOURCE_DIR}/${header} DESTINATION ${KILN_INSTALL_HEADER_DIR}/${dir})
endforeach()
install(FILES ${CMAKE_SOURCE_DIR}/include/kiln/kiln.h ${CMAKE_SOURCE_DIR}/include/kiln/rt.h
        DESTINATION ${KILN_INSTALL_HEADER_DIR})

# The libraries: SONAME libkiln.so.0.1 (before 1.0 a minor release may break the ABI). The
# installed libkiln finds libkiln_rt beside it; the tools find both in ../lib.
file(RELATIVE_PATH KILN_BIN_TO_LIB ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}
     ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR})
set_target_properties(kiln kiln_rt kiln_onnx PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  INSTALL_RPATH "$ORIGIN")
set_target_properties(kiln_rt PROPERTIES EXPORT_NAME rt)
set(KILN_INSTALLED_TOOLS kiln_cli kiln-opt kiln-run-bundle)
set_target_properties(${KILN_INSTALLED_TOOLS} PROPERTIES INSTALL_RPATH "$ORIGIN/${KILN_BIN_TO_LIB}")

set_target_properties(kiln_onnx PROPERTIES EXPORT_NAME onnx)
install(TARGETS kiln kiln_rt kiln_onnx EXPORT kilnTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} ${KILN_INSTALL_HEADER_DIR})
install(TARGETS ${KILN_INSTALLED_TOOLS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(KILN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${KILN_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/kilnConfig.cmake.in
  ${CMAKE_BINARY_DIR}/kilnConfig.cmake INSTALL_DESTINATION ${KILN_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/kilnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/kilnConfig.cmake ${CMAKE_BINARY_DIR}/kilnConfigVersion.cmake
        DESTINATION ${KILN_CMAKE_DIR})

# pkg-config files locate the prefix from their own directory, so a prefix moved after
# installing (or a .deb unpacked anywhere) still works.
set(KILN_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH KILN_PKGCONFIG_TO_PREFIX ${CMAKE_INSTALL_PREFIX}/${KILN_PKGCONFIG_DIR}
     ${CMAKE_INSTALL_PREFIX})
foreach(pc kiln kiln-rt)
  configure_file(${CMAKE_SOURCE_DIR}/cmake/${pc}.pc.in ${CMAKE_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/${pc}.pc DESTINATION ${KILN_PKGCONFIG_DIR})
endforeach()

# `cpack -G DEB` in the build directory: kiln_<version>_<arch>.deb, installing under /usr.
# The dependencies are those of the binaries (tests/install/check-install.sh checks that
# every library they need comes from one of them) and fmt's headers for the public ones.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kiln)
set(CPACK_PACKAGE_VENDOR kiln)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "JIT-compiling graph compiler for deep learning (NVIDIA GPUs and the host CPU)")
set(CPACK_PACKAGE_CONTACT "kiln developers <kiln@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libc6 (>= 2.36), libstdc++6 (>= 12), libgcc-s1, zlib1g, libzstd1, libsqlite3-0, libonnx1, libprotobuf32, libfmt-dev (>= 9.1)")
# The MPI plugin (libkiln_mpi.so, runtime/dist) needs Open MPI; a single process does not.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libopenmpi3")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "Graph IR, passes, LLVM-based code generation and the kiln_rt runtime, with the kiln and
 kiln-opt tools, headers, a CMake package (find_package(kiln)) and pkg-config files.")
include(CPack)
