/* The narrow C ABI between Rust (src/model/mlx/mod.rs) and our MLX bridge
 * (bridge.cpp). Plain C types only; every function returns 0 on success or a
 * negative code, with a message from laya_mlx_last_error(); no C++ exception
 * ever crosses this line. */
#ifndef LAYA_MLX_BRIDGE_H
#define LAYA_MLX_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes. */
#define LAYA_MLX_OK 0
#define LAYA_MLX_EINVAL -1 /* bad argument (null pointer, bad dims, bad token) */
#define LAYA_MLX_EMLX -2   /* MLX threw (message in laya_mlx_last_error) */
#define LAYA_MLX_ENODEV -3 /* asked for a GPU that is not there */

/* Source dtype of the weight buffers handed to laya_mlx_create. */
#define LAYA_MLX_SRC_F32 0
#define LAYA_MLX_SRC_BF16 1 /* raw bfloat16 bits, uint16 per value */

/* Device choice. */
#define LAYA_MLX_DEVICE_AUTO 0 /* GPU when MLX has one, else CPU */
#define LAYA_MLX_DEVICE_CPU 1
#define LAYA_MLX_DEVICE_GPU 2

/* How the weights are held on the device. */
#define LAYA_MLX_COMPUTE_F32 0
#define LAYA_MLX_COMPUTE_BF16 1
#define LAYA_MLX_COMPUTE_F16 2
#define LAYA_MLX_COMPUTE_Q8 3 /* MLX affine quantization, 8 bits */
#define LAYA_MLX_COMPUTE_Q4 4 /* MLX affine quantization, 4 bits */

/* Weights in models/FORMAT.md's layout, row-major, all of one src_dtype.
 * The buffers are copied during create; the caller may free them after. */
typedef struct {
  int32_t vocab, embed, hidden;
  int32_t src_dtype;
  const void *embed_w; /* [vocab, embed] */
  const void *gru_wx;  /* [3*hidden, embed] */
  const void *gru_wh;  /* [3*hidden, hidden] */
  const void *gru_b;   /* [3*hidden] */
  const void *gru_bhn; /* [hidden] */
  const void *proj_w;  /* [embed, hidden] */
  const void *proj_b;  /* [embed] */
  const void *out_b;   /* [vocab] */
} LayaMlxWeights;

typedef struct {
  int32_t device;     /* LAYA_MLX_DEVICE_* */
  int32_t compute;    /* LAYA_MLX_COMPUTE_* */
  int32_t compile;    /* 1: mlx::core::compile the step (fused kernels) */
  int32_t poll;       /* -1: auto (GPU only), 0: blocking wait, 1: poll */
  int32_t group_size; /* quantization group size; 0 = 64 */
  int32_t warmup;     /* steps run at create to build kernels; 0 = none */
  int32_t mlx_copy;   /* 1: read results through MLX's array::data() even on
                         CUDA (0: our pinned driver-API copy, much faster) */
  int32_t matrix_compute[4]; /* LAYA_MLX_COMPUTE_* of embed, gru.wx, gru.wh,
                                proj.w; -1: `compute`. Activations follow
                                `compute` */
} LayaMlxOptions;

typedef struct LayaMlx LayaMlx;

/* Thread-local message of the last failure on this thread ("" if none). */
const char *laya_mlx_last_error(void);

/* MLX version string, e.g. "0.32.4". */
const char *laya_mlx_version(void);

/* 1 when MLX sees a GPU (Metal or CUDA), else 0. Never throws. */
int laya_mlx_gpu_available(void);

/* Where compiled GPU kernels are cached (MLX_PTX_CACHE_DIR on CUDA); call
 * before the first create. NULL or "" leaves MLX's default. */
int laya_mlx_set_kernel_cache_dir(const char *dir);

int laya_mlx_create(const LayaMlxWeights *w, const LayaMlxOptions *opt,
                    LayaMlx **out);
void laya_mlx_destroy(LayaMlx *m);

/* Words for the device, e.g. "gpu (cuda) NVIDIA <name>" or "cpu". */
int laya_mlx_device_name(const LayaMlx *m, char *buf, size_t len);

/* One GRU step. h_in NULL: start from the model's own device-resident state
 * (see laya_mlx_reset); the new state always becomes that state too, and an
 * h_in equal to the last h_out handed back is not uploaded again.
 * h_out NULL: do not copy the state back. */
int laya_mlx_step(LayaMlx *m, const float *h_in, uint32_t token,
                  float *h_out);

/* Logits for state h (NULL: the device-resident state) into out[vocab]. */
int laya_mlx_logits(LayaMlx *m, const float *h, float *out);

/* Step and logits in one evaluation and one device-to-host copy. h_out and
 * logits both NULL: computed but not copied back (measures the copy). */
int laya_mlx_step_logits(LayaMlx *m, const float *h_in, uint32_t token,
                         float *h_out, float *logits);

/* Step, then the k (1..64) largest logits, largest first: a two-stage
 * top-k whose first stage runs on the device, so only h' and k*128
 * candidates come back instead of all logits. */
int laya_mlx_step_topk(LayaMlx *m, const float *h_in, uint32_t token,
                       float *h_out, int32_t k, uint32_t *ids, float *vals);

/* Device-resident state back to zeros (the state before <s>). */
int laya_mlx_reset(LayaMlx *m);

#ifdef __cplusplus
}
#endif

#endif
