// Our bridge from Rust to the prebuilt MLX C++ library: it builds the GRU
// language model of models/FORMAT.md from MLX ops on one MLX stream (GPU or
// CPU), compiles the step, and answers the C ABI of bridge.h. Every entry
// point catches every C++ exception and turns it into an error code.

#include "bridge.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <mlx/mlx.h>

#if defined(__linux__)
#include <dlfcn.h>
#endif

namespace mx = mlx::core;

namespace {

thread_local std::string last_error;

struct Failure {
  int code;
  std::string message;
};

// Runs `body`, turning every exception into an error code and a message.
template <class F> int guarded(F &&body) {
  try {
    last_error.clear();
    return body();
  } catch (const Failure &f) {
    last_error = f.message;
    return f.code;
  } catch (const std::exception &e) {
    last_error = std::string("mlx: ") + e.what();
    return LAYA_MLX_EMLX;
  } catch (...) {
    last_error = "mlx: unknown C++ exception";
    return LAYA_MLX_EMLX;
  }
}

[[noreturn]] void invalid(const std::string &what) {
  throw Failure{LAYA_MLX_EINVAL, what};
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// A weight matrix W [out, in] used as x @ W^T, either plain (in the compute
// dtype) or MLX-affine-quantized along `in`.
struct Linear {
  mx::array w;
  std::optional<mx::array> scales, biases;
  int bits = 0, group = 0;

  mx::array apply(const mx::array &x, mx::Dtype act, mx::Stream s) const {
    mx::array xa = mx::astype(x, act, s);
    if (bits > 0) {
      return mx::quantized_matmul(xa, w, *scales, biases, true, group, bits,
                                  "affine", s);
    }
    return mx::matmul(xa, mx::transpose(w, s), s);
  }

  // Row `tok` of W (the embedding lookup), as [1, in] in dtype `act`.
  mx::array row(const mx::array &tok, mx::Dtype act, mx::Stream s) const {
    if (bits > 0) {
      return mx::dequantize(mx::take(w, tok, 0, s), mx::take(*scales, tok, 0, s),
                            mx::take(*biases, tok, 0, s), group, bits, "affine",
                            std::nullopt, act, s);
    }
    return mx::astype(mx::take(w, tok, 0, s), act, s);
  }
};

mx::array from_buffer(const void *p, mx::Shape shape, int32_t src) {
  if (p == nullptr) {
    invalid("null weight buffer");
  }
  if (src == LAYA_MLX_SRC_F32) {
    return mx::array(static_cast<const float *>(p), std::move(shape),
                     mx::float32);
  }
  if (src == LAYA_MLX_SRC_BF16) {
    return mx::array(static_cast<const mx::bfloat16_t *>(p), std::move(shape),
                     mx::bfloat16);
  }
  invalid("unknown source dtype " + std::to_string(src));
}

Linear make_linear(mx::array w, int32_t compute, int group, mx::Stream s) {
  switch (compute) {
  case LAYA_MLX_COMPUTE_F32:
    return Linear{mx::astype(w, mx::float32, s), std::nullopt, std::nullopt, 0, 0};
  case LAYA_MLX_COMPUTE_BF16:
    return Linear{mx::astype(w, mx::bfloat16, s), std::nullopt, std::nullopt, 0, 0};
  case LAYA_MLX_COMPUTE_F16:
    return Linear{mx::astype(w, mx::float16, s), std::nullopt, std::nullopt, 0, 0};
  case LAYA_MLX_COMPUTE_Q8:
  case LAYA_MLX_COMPUTE_Q4: {
    int bits = compute == LAYA_MLX_COMPUTE_Q8 ? 8 : 4;
    auto q = mx::quantize(mx::astype(w, mx::float32, s), group, bits, "affine",
                          std::nullopt, s);
    return Linear{q[0], q[1], q[2], bits, group};
  }
  default:
    invalid("unknown compute mode " + std::to_string(compute));
  }
}

using Fn = std::function<std::vector<mx::array>(const std::vector<mx::array> &)>;

#if defined(__linux__)
// Our own device-to-host copy on MLX's CUDA backend. There, array::data() on
// a device buffer allocates fresh managed memory (cudaMallocManaged) and
// copies synchronously into it, every call: ~240 us for the 64 KB of logits
// on a datacenter NVIDIA GPU, with millisecond tails. We copy with the CUDA driver API
// (libcuda, present wherever the CUDA backend runs) into pinned memory we
// own, once per call. Any doubt about the buffer means: use data() instead.
namespace cuda_copy {

// The head of MLX's CudaBuffer (mlx/backend/cuda/allocator.h), a private
// structure: its layout was read from MLX 0.32.4's header and holds for that
// version only. Built against or running with any other MLX, this copy is
// off and results come through MLX's public array::data().
#define LAYA_MLX_CUDA_BUFFER_VERSION "0.32.4"
#if MLX_VERSION_NUMERIC == 32004
constexpr bool layout_known_at_build = true;
#else
constexpr bool layout_known_at_build = false;
#endif

// True when both the MLX built against and the one loaded are 0.32.4.
bool layout_known() {
  static const bool known = layout_known_at_build &&
                            std::strcmp(mx::version(),
                                        LAYA_MLX_CUDA_BUFFER_VERSION) == 0;
  return known;
}

struct MlxCudaBuffer {
  void *data;
  size_t size;
  int device; // -1: managed or pinned host memory
};

using CUresult = int;
using CUcontext = void *;
using CUdeviceptr = unsigned long long;

struct Api {
  CUresult (*primary_ctx_retain)(CUcontext *, int) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*memcpy_dtoh)(void *, CUdeviceptr, size_t) = nullptr;
  CUresult (*mem_alloc_host)(void **, size_t) = nullptr;
  CUcontext ctx = nullptr;
  bool ok = false;
};

const Api &api() {
  static Api a = [] {
    Api a;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      return a;
    }
    a.primary_ctx_retain = reinterpret_cast<CUresult (*)(CUcontext *, int)>(
        dlsym(lib, "cuDevicePrimaryCtxRetain"));
    a.ctx_set_current = reinterpret_cast<CUresult (*)(CUcontext)>(
        dlsym(lib, "cuCtxSetCurrent"));
    a.memcpy_dtoh = reinterpret_cast<CUresult (*)(void *, CUdeviceptr, size_t)>(
        dlsym(lib, "cuMemcpyDtoH_v2"));
    a.mem_alloc_host = reinterpret_cast<CUresult (*)(void **, size_t)>(
        dlsym(lib, "cuMemAllocHost_v2"));
    a.ok = a.primary_ctx_retain && a.ctx_set_current && a.memcpy_dtoh &&
           a.mem_alloc_host && a.primary_ctx_retain(&a.ctx, 0) == 0;
    return a;
  }();
  return a;
}

thread_local bool ctx_current = false;

// Pinned staging memory per thread, grown on demand and kept: a result is
// read from it before the same thread copies the next one.
float *staging(size_t bytes) {
  thread_local void *buf = nullptr;
  thread_local size_t cap = 0;
  if (bytes > cap) {
    void *p = nullptr;
    if (api().mem_alloc_host(&p, bytes) != 0) {
      return nullptr;
    }
    buf = p; // the smaller old block is left allocated (rare, tiny)
    cap = bytes;
  }
  return static_cast<float *>(buf);
}

// `a` (evaluated, on the CUDA device) copied to pinned memory; nullptr when
// this path does not apply.
const float *fetch(const mx::array &a) {
  if (!layout_known()) {
    return nullptr;
  }
  const Api &x = api();
  if (!x.ok) {
    return nullptr;
  }
  auto *buf = static_cast<const MlxCudaBuffer *>(a.buffer().ptr());
  size_t need = static_cast<size_t>(a.offset()) + a.nbytes();
  // MLX rounds sizes up to a power of two or a multiple of 16 KB.
  if (buf == nullptr || buf->data == nullptr || buf->size < need ||
      buf->size > 2 * need + 16384) {
    return nullptr;
  }
  if (!ctx_current) {
    if (x.ctx_set_current(x.ctx) != 0) {
      return nullptr;
    }
    ctx_current = true;
  }
  float *dst = staging(a.nbytes());
  auto src = reinterpret_cast<CUdeviceptr>(static_cast<char *>(buf->data) +
                                           a.offset());
  if (dst == nullptr || x.memcpy_dtoh(dst, src, a.nbytes()) != 0) {
    return nullptr;
  }
  return dst;
}

} // namespace cuda_copy
#endif

} // namespace

struct LayaMlx {
  mx::Device device;
  mx::Stream stream;
  int vocab, embed, hidden;
  bool poll;
  bool compile = true;
  bool fast_copy = true; // our CUDA device-to-host copy (see cuda_copy)
  mx::Dtype act = mx::float32; // dtype of matmul inputs (f32, bf16 or f16)
  std::optional<Linear> emb, wx, wh, proj;
  std::optional<mx::array> gru_b, gru_bhn, proj_b, out_b; // f32
  std::optional<mx::array> state;                          // [1, hidden] f32
  // Host copy of `state` when the caller last received it (valid=true):
  // a caller handing the same numbers back skips the upload.
  std::vector<float> mirror;
  bool mirror_valid = false;
  Fn step_fn, logits_fn, step_logits_fn, step_topk_fn;
  int topk_k = 0;

  LayaMlx(mx::Device d, mx::Stream s) : device(d), stream(s) {}

  // h [1,H] f32, tok [1] uint32 -> h' [1,H] f32 (models/FORMAT.md's step).
  mx::array gru(const mx::array &h, const mx::array &tok) const {
    auto s = stream;
    int H = hidden;
    auto x = emb->row(tok, act, s);
    auto gx = mx::add(mx::astype(wx->apply(x, act, s), mx::float32, s), *gru_b,
                      s);
    auto gh = mx::astype(wh->apply(h, act, s), mx::float32, s);
    auto part = [&](const mx::array &a, int i) {
      return mx::slice(a, {0, i * H}, {1, (i + 1) * H}, s);
    };
    auto r = mx::sigmoid(mx::add(part(gx, 0), part(gh, 0), s), s);
    auto z = mx::sigmoid(mx::add(part(gx, 1), part(gh, 1), s), s);
    auto n = mx::tanh(
        mx::add(part(gx, 2),
                mx::multiply(r, mx::add(part(gh, 2), *gru_bhn, s), s), s),
        s);
    // h' = (1 - z) * n + z * h  ==  n + z * (h - n)
    return mx::add(n, mx::multiply(z, mx::subtract(h, n, s), s), s);
  }

  // h [1,H] f32 -> logits [1,V] f32: embed . (proj.w . h + proj.b) + out.b
  mx::array head(const mx::array &h) const {
    auto s = stream;
    auto e = mx::add(mx::astype(proj->apply(h, act, s), mx::float32, s),
                     *proj_b, s);
    return mx::add(mx::astype(emb->apply(e, act, s), mx::float32, s), *out_b,
                   s);
  }

  // Evaluates `outs`; on a GPU, polls for completion instead of MLX's
  // blocking event wait (146 against 163 us p50 measured for a fused
  // step, BENCHMARKS.md). Never spins on the CPU backend: the spinning
  // thread would steal the core MLX's own worker needs (measured 3 x slower).
  void evaluate(std::vector<mx::array> &outs) const {
    if (poll) {
      mx::async_eval(outs);
      for (auto &o : outs) {
        while (!o.is_available()) {
          cpu_relax();
        }
        o.wait();
      }
    } else {
      mx::eval(outs);
    }
  }

  mx::array input_state(const float *h) const {
    if (h == nullptr) {
      return *state;
    }
    if (mirror_valid &&
        std::memcmp(h, mirror.data(), sizeof(float) * hidden) == 0) {
      return *state;
    }
    return mx::array(h, {1, hidden}, mx::float32);
  }

  // The new state stays on the device; `host` (if any) is its copy the
  // caller now holds.
  void keep_state(const mx::array &h, const float *host) {
    state = h;
    mirror_valid = host != nullptr;
    if (host != nullptr) {
      std::memcpy(mirror.data(), host, sizeof(float) * hidden);
    }
  }

  // Two-stage top-k on the device: the k blocks of 128 logits with the
  // largest maxima hold the k largest logits; ship only those blocks
  // (k*128 values + k block ids) instead of all V logits.
  mx::array topk_blocks(const mx::array &logits, int k) const {
    auto s = stream;
    constexpr int B = 128;
    int nb = (vocab + B - 1) / B;
    auto x = logits;
    if (nb * B != vocab) {
      x = mx::pad(x, {{0, 0}, {0, nb * B - vocab}},
                  mx::array(-std::numeric_limits<float>::infinity()),
                  "constant", s);
    }
    x = mx::reshape(x, {nb, B}, s);
    auto bmax = mx::max(x, 1, false, s);                         // [nb]
    auto ids = mx::slice(mx::argpartition(mx::negative(bmax, s), k - 1, s),
                         {0}, {k}, s);                           // [k]
    auto cand = mx::reshape(mx::take(x, ids, 0, s), {1, k * B}, s);
    auto fids = mx::reshape(mx::astype(ids, mx::float32, s), {1, k}, s);
    return mx::concatenate({cand, fids}, 1, s);
  }

  mx::array input_token(uint32_t token) const {
    if (token >= static_cast<uint32_t>(vocab)) {
      invalid("token id " + std::to_string(token) + " out of range (vocab " +
              std::to_string(vocab) + ")");
    }
    return mx::array(&token, {1}, mx::uint32);
  }

  // The host view of an evaluated f32 output (on CUDA this is the one
  // device-to-host copy of the call).
  const float *host(const mx::array &a) const {
    if (!a.flags().row_contiguous || a.dtype() != mx::float32) {
      throw std::runtime_error("bridge: unexpected output layout");
    }
#if defined(__linux__)
    if (device == mx::Device::gpu && fast_copy) {
      if (const float *p = cuda_copy::fetch(a)) {
        return p;
      }
    }
#endif
    return a.data<float>();
  }

  void copy_out(const mx::array &a, float *dst) const {
    if (dst != nullptr) {
      std::memcpy(dst, host(a), a.nbytes());
    }
  }
};

extern "C" {

const char *laya_mlx_last_error(void) { return last_error.c_str(); }

const char *laya_mlx_version(void) {
  static std::string v = [] {
    try {
      return std::string(mx::version());
    } catch (...) {
      return std::string("unknown");
    }
  }();
  return v.c_str();
}

int laya_mlx_gpu_available(void) {
  int r = guarded([] { return mx::is_available(mx::Device::gpu) ? 1 : 0; });
  return r == 1 ? 1 : 0;
}

int laya_mlx_set_kernel_cache_dir(const char *dir) {
  return guarded([&] {
    if (dir != nullptr && dir[0] != '\0') {
      // MLX's CUDA backend reads this when it first JIT-compiles a kernel.
      if (setenv("MLX_PTX_CACHE_DIR", dir, 1) != 0) {
        invalid("cannot set MLX_PTX_CACHE_DIR");
      }
    }
    return LAYA_MLX_OK;
  });
}

int laya_mlx_create(const LayaMlxWeights *w, const LayaMlxOptions *opt,
                    LayaMlx **out) {
  return guarded([&] {
    if (w == nullptr || opt == nullptr || out == nullptr) {
      invalid("null argument to laya_mlx_create");
    }
    *out = nullptr;
    int V = w->vocab, E = w->embed, H = w->hidden;
    if (V <= 0 || E <= 0 || H <= 0) {
      invalid("bad dims vocab=" + std::to_string(V) +
              " embed=" + std::to_string(E) + " hidden=" + std::to_string(H));
    }
    bool gpu = mx::is_available(mx::Device::gpu);
    mx::Device dev = mx::Device::cpu;
    if (opt->device == LAYA_MLX_DEVICE_GPU) {
      if (!gpu) {
        throw Failure{LAYA_MLX_ENODEV, "mlx: no GPU (Metal or CUDA) available"};
      }
      dev = mx::Device::gpu;
    } else if (opt->device == LAYA_MLX_DEVICE_AUTO && gpu) {
      dev = mx::Device::gpu;
    } else if (opt->device != LAYA_MLX_DEVICE_AUTO &&
               opt->device != LAYA_MLX_DEVICE_CPU) {
      invalid("unknown device " + std::to_string(opt->device));
    }
    int group = opt->group_size > 0 ? opt->group_size : 64;
    // Each matrix's mode: its own, or -1 for `compute`.
    int32_t modes[4];
    bool quant = false;
    for (int i = 0; i < 4; ++i) {
      int32_t own = opt->matrix_compute[i];
      if (own < -1) {
        invalid("unknown compute mode " + std::to_string(own) + " of matrix " +
                std::to_string(i));
      }
      modes[i] = own == -1 ? opt->compute : own;
      quant = quant || modes[i] == LAYA_MLX_COMPUTE_Q8 ||
              modes[i] == LAYA_MLX_COMPUTE_Q4;
    }
    if (quant && (E % group != 0 || H % group != 0)) {
      invalid("embed and hidden must be multiples of the group size " +
              std::to_string(group));
    }

    auto m = std::make_unique<LayaMlx>(dev, mx::new_thread_unsafe_stream(dev));
    auto s = m->stream;
    m->vocab = V;
    m->embed = E;
    m->hidden = H;
    m->poll = opt->poll < 0 ? dev == mx::Device::gpu : opt->poll != 0;
    m->fast_copy = opt->mlx_copy == 0;
    switch (opt->compute) {
    case LAYA_MLX_COMPUTE_BF16:
      m->act = mx::bfloat16;
      break;
    case LAYA_MLX_COMPUTE_F16:
      m->act = mx::float16;
      break;
    default:
      m->act = mx::float32;
    }
    int src = w->src_dtype;
    m->emb = make_linear(from_buffer(w->embed_w, {V, E}, src), modes[0], group,
                         s);
    m->wx = make_linear(from_buffer(w->gru_wx, {3 * H, E}, src), modes[1],
                        group, s);
    m->wh = make_linear(from_buffer(w->gru_wh, {3 * H, H}, src), modes[2],
                        group, s);
    m->proj = make_linear(from_buffer(w->proj_w, {E, H}, src), modes[3], group,
                          s);
    auto vec = [&](const void *p, int n) {
      return mx::reshape(mx::astype(from_buffer(p, {n}, src), mx::float32, s),
                         {1, n}, s);
    };
    m->gru_b = vec(w->gru_b, 3 * H);
    m->gru_bhn = vec(w->gru_bhn, H);
    m->proj_b = vec(w->proj_b, E);
    m->out_b = vec(w->out_b, V);
    m->state = mx::zeros({1, H}, mx::float32, s);

    std::vector<mx::array> all{*m->gru_b, *m->gru_bhn, *m->proj_b, *m->out_b,
                               *m->state};
    for (auto *l : {&m->emb, &m->wx, &m->wh, &m->proj}) {
      all.push_back((*l)->w);
      if ((*l)->scales) {
        all.push_back(*(*l)->scales);
        all.push_back(*(*l)->biases);
      }
    }
    mx::eval(all);
    // Replace the lazy conversion graphs with their evaluated values.
    for (auto *l : {&m->emb, &m->wx, &m->wh, &m->proj}) {
      (*l)->w.detach();
      if ((*l)->scales) {
        (*l)->scales->detach();
        (*l)->biases->detach();
      }
    }
    for (auto *a : {&m->gru_b, &m->gru_bhn, &m->proj_b, &m->out_b, &m->state}) {
      (*a)->detach();
    }

    LayaMlx *mp = m.get();
    m->step_fn = [mp](const std::vector<mx::array> &in) {
      return std::vector<mx::array>{mp->gru(in[0], in[1])};
    };
    m->logits_fn = [mp](const std::vector<mx::array> &in) {
      return std::vector<mx::array>{mp->head(in[0])};
    };
    // One packed output [h' | logits]: one device-to-host copy, not two.
    m->step_logits_fn = [mp](const std::vector<mx::array> &in) {
      auto h = mp->gru(in[0], in[1]);
      return std::vector<mx::array>{
          h, mx::concatenate({h, mp->head(h)}, 1, mp->stream)};
    };
    m->mirror.assign(H, 0.0f);
    m->compile = opt->compile != 0;
    if (m->compile) {
      m->step_fn = mx::compile(m->step_fn);
      m->logits_fn = mx::compile(m->logits_fn);
      m->step_logits_fn = mx::compile(m->step_logits_fn);
    }

    // Warm-up: the first calls trace, compile and (on a GPU) JIT the kernels.
    for (int i = 0; i < opt->warmup; ++i) {
      auto tok = m->input_token(static_cast<uint32_t>(i % V));
      std::vector<mx::array> a = m->step_fn({*m->state, tok});
      m->evaluate(a);
      std::vector<mx::array> b = m->logits_fn({a[0]});
      m->evaluate(b);
      std::vector<mx::array> c = m->step_logits_fn({a[0], tok});
      m->evaluate(c);
    }
    *out = m.release();
    return LAYA_MLX_OK;
  });
}

void laya_mlx_destroy(LayaMlx *m) {
  guarded([&] {
    delete m;
    return LAYA_MLX_OK;
  });
}

int laya_mlx_device_name(const LayaMlx *m, char *buf, size_t len) {
  return guarded([&] {
    if (m == nullptr || buf == nullptr || len == 0) {
      invalid("null argument to laya_mlx_device_name");
    }
    std::string name = "cpu";
    if (m->device == mx::Device::gpu) {
#ifdef __APPLE__
      name = "gpu (metal)";
#else
      name = "gpu (cuda)";
#if defined(__linux__)
      if (m->fast_copy && !cuda_copy::layout_known()) {
        // Said once, where the backend is described (status, bench).
        name += std::string(" [MLX ") + mx::version() +
                ": results read through array::data(), our faster copy "
                "needs MLX " LAYA_MLX_CUDA_BUFFER_VERSION "]";
      }
#endif
#endif
      const auto &info = mx::device_info(m->device);
      auto it = info.find("device_name");
      if (it != info.end()) {
        if (auto *str = std::get_if<std::string>(&it->second)) {
          name += " " + *str;
        }
      }
    }
    std::snprintf(buf, len, "%s", name.c_str());
    return LAYA_MLX_OK;
  });
}

int laya_mlx_step(LayaMlx *m, const float *h_in, uint32_t token,
                  float *h_out) {
  return guarded([&] {
    if (m == nullptr) {
      invalid("null model");
    }
    std::vector<mx::array> o =
        m->step_fn({m->input_state(h_in), m->input_token(token)});
    m->evaluate(o);
    m->copy_out(o[0], h_out);
    m->keep_state(o[0], h_out);
    return LAYA_MLX_OK;
  });
}

int laya_mlx_logits(LayaMlx *m, const float *h, float *out) {
  return guarded([&] {
    if (m == nullptr || out == nullptr) {
      invalid("null argument to laya_mlx_logits");
    }
    std::vector<mx::array> o = m->logits_fn({m->input_state(h)});
    m->evaluate(o);
    m->copy_out(o[0], out);
    return LAYA_MLX_OK;
  });
}

int laya_mlx_step_logits(LayaMlx *m, const float *h_in, uint32_t token,
                         float *h_out, float *logits) {
  return guarded([&] {
    if (m == nullptr) {
      invalid("null model");
    }
    std::vector<mx::array> o =
        m->step_logits_fn({m->input_state(h_in), m->input_token(token)});
    m->evaluate(o); // both NULL: computed on the device, nothing copied
    if (h_out != nullptr || logits != nullptr) {
      const float *packed = m->host(o[1]);
      if (h_out != nullptr) {
        std::memcpy(h_out, packed, sizeof(float) * m->hidden);
      }
      if (logits != nullptr) {
        std::memcpy(logits, packed + m->hidden, sizeof(float) * m->vocab);
      }
    }
    m->keep_state(o[0], h_out);
    return LAYA_MLX_OK;
  });
}

int laya_mlx_step_topk(LayaMlx *m, const float *h_in, uint32_t token,
                      float *h_out, int32_t k, uint32_t *ids, float *vals) {
  return guarded([&] {
    if (m == nullptr || ids == nullptr || vals == nullptr) {
      invalid("null argument to laya_mlx_step_topk");
    }
    constexpr int B = 128;
    int nb = (m->vocab + B - 1) / B;
    if (k < 1 || k > nb || k > 64) {
      invalid("top-k of " + std::to_string(k) + " is out of range");
    }
    if (m->topk_k != k) {
      LayaMlx *mp = m;
      m->step_topk_fn = [mp, k](const std::vector<mx::array> &in) {
        auto h = mp->gru(in[0], in[1]);
        auto top = mp->topk_blocks(mp->head(h), k);
        return std::vector<mx::array>{
            h, mx::concatenate({h, top}, 1, mp->stream)};
      };
      if (m->compile) {
        m->step_topk_fn = mx::compile(m->step_topk_fn);
      }
      m->topk_k = k;
    }
    std::vector<mx::array> o =
        m->step_topk_fn({m->input_state(h_in), m->input_token(token)});
    m->evaluate(o);
    const float *packed = m->host(o[1]);
    if (h_out != nullptr) {
      std::memcpy(h_out, packed, sizeof(float) * m->hidden);
    }
    // Final selection over the k candidate blocks, on the host.
    const float *cand = packed + m->hidden;
    const float *block = cand + k * B;
    std::vector<std::pair<float, uint32_t>> best;
    best.reserve(static_cast<size_t>(k) * B);
    for (int i = 0; i < k; ++i) {
      auto base = static_cast<uint32_t>(block[i]) * B;
      for (int j = 0; j < B; ++j) {
        if (base + j < static_cast<uint32_t>(m->vocab)) {
          best.emplace_back(cand[i * B + j], base + j);
        }
      }
    }
    std::partial_sort(best.begin(), best.begin() + k, best.end(),
                      [](const auto &a, const auto &b) {
                        return a.first > b.first ||
                               (a.first == b.first && a.second < b.second);
                      });
    for (int i = 0; i < k; ++i) {
      ids[i] = best[i].second;
      vals[i] = best[i].first;
    }
    m->keep_state(o[0], h_out);
    return LAYA_MLX_OK;
  });
}

int laya_mlx_reset(LayaMlx *m) {
  return guarded([&] {
    if (m == nullptr) {
      invalid("null model");
    }
    auto z = mx::zeros({1, m->hidden}, mx::float32, m->stream);
    mx::eval(z);
    m->state = z;
    m->mirror_valid = false;
    return LAYA_MLX_OK;
  });
}

} // extern "C"
