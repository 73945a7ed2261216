# toolchain-aarch64.cmake -- cross-compile ork for 64-bit Arm Linux (the RK3588's Cortex-A76/A55)
# on a Debian x86-64 host, and run the built tests under QEMU user-mode emulation.
#
# Needs (scripts/setup-deps --aarch64): gcc-aarch64-linux-gnu, qemu-user-static, and the arm64
# multiarch dev packages of ork's libraries (libpcre2-dev:arm64 ...; `dpkg --add-architecture
# arm64` first). Libraries are found in the multiarch directory /usr/lib/aarch64-linux-gnu.
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
#   cmake --build build-aarch64 --target test_kernels_dot && cd build-aarch64 && ctest -R kernels
#
# CTest runs each test executable through CMAKE_CROSSCOMPILING_EMULATOR (QEMU emulating a
# Cortex-A76, so the NEON / dot-product paths the RK3588 takes are the ones exercised).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(ORK_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${ORK_CROSS_TRIPLE}-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE ${ORK_CROSS_TRIPLE})

# pkg-config: only the arm64 .pc files (multiarch), never the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${ORK_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Headers and libraries: the cross toolchain's sysroot plus the multiarch arm64 directories;
# programs (pkg-config, cmake helpers) from the host.
set(CMAKE_FIND_ROOT_PATH /usr/${ORK_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# QEMU CPU model for the tests: the RK3588's big core.
set(ORK_QEMU_CPU cortex-a76 CACHE STRING "QEMU -cpu model for running aarch64 tests")
# Only the static build of QEMU user mode (qemu-user-static): Debian 12's dynamically linked
# qemu-aarch64 (qemu-user 7.2) hangs in the guest's first pthread_create when the guest is a
# dynamically linked program (run with -L /usr/aarch64-linux-gnu; a static guest, or the same
# guest under qemu-aarch64-static, runs), which stalled every test that starts the thread pool.
find_program(ORK_QEMU_AARCH64 NAMES qemu-aarch64-static)
if(ORK_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${ORK_QEMU_AARCH64} -cpu ${ORK_QEMU_CPU})
endif()

# Release at -O2: Debian 12's aarch64-linux-gnu-gcc 12.2 hits an internal compiler error in the
# -O3 loop vectorizer (vect_transform_reduction) on a test's reduction loop. The kernels' NEON
# paths are intrinsics and do not depend on it.
set(CMAKE_C_FLAGS_RELEASE "-O2 -DNDEBUG" CACHE STRING "Release flags (aarch64 cross: -O2)")
