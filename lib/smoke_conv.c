/* SPDX-License-Identifier: MIT */
/*
 * The smoke child's convolution (smokeconv.h), the same on Linux and
 * Windows. cuDNN and CUDA are not linked: the few entry points and types
 * used are declared here, as both cuDNN 8 and 9 define them (legacy API),
 * so no CUDA header is needed to build cudnnvm.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "smokeconv.h"

typedef void *handle_t, *desc_t;
typedef struct {
	int algo, status;
	float time;
	size_t memory;
	int determinism, math_type, reserved[3];
} fwd_perf_t;

/* cudnn.h's values (identical in 8.x and 9.x). */
enum { NCHW = 0, FLOAT = 0, CROSS_CORRELATION = 1, FMA_MATH = 3 };
/* cuda_runtime_api.h's values. */
enum { H2D = 1, D2H = 2, CC_MAJOR = 75, CC_MINOR = 76 };

static const char *const algo_names[] = {
	"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
	"FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED",
};

struct api {
	/* cudart */
	int (*get_device_count)(int *);
	int (*set_device)(int);
	int (*attr)(int *, int, int);
	int (*props)(void *, int);
	int (*malloc_)(void **, size_t);
	int (*free_)(void *);
	int (*memcpy_)(void *, const void *, size_t, int);
	int (*sync)(void);
	int (*driver_version)(int *);
	const char *(*cuda_error)(int);
	/* cudnn */
	int (*create)(handle_t *);
	int (*destroy)(handle_t);
	int (*create_tensor)(desc_t *);
	int (*set_tensor)(desc_t, int, int, int, int, int, int);
	int (*create_filter)(desc_t *);
	int (*set_filter)(desc_t, int, int, int, int, int, int);
	int (*create_conv)(desc_t *);
	int (*set_conv)(desc_t, int, int, int, int, int, int, int, int);
	int (*set_math)(desc_t, int);
	int (*out_dim)(desc_t, desc_t, desc_t, int *, int *, int *, int *);
	int (*algo_v7)(handle_t, desc_t, desc_t, desc_t, desc_t, int, int *, fwd_perf_t *);
	int (*ws_size)(handle_t, desc_t, desc_t, desc_t, desc_t, int, size_t *);
	int (*forward)(handle_t, const void *, desc_t, const void *, desc_t, const void *, desc_t,
		       int, void *, size_t, const void *, desc_t, void *);
	const char *(*cudnn_error)(int);
};

#define SYM(h, field, name) (*(void **)&api->field = cvm_smoke_sym(h, name))

static int bind_cudart(struct api *api, void *h)
{
	SYM(h, get_device_count, "cudaGetDeviceCount");
	SYM(h, set_device, "cudaSetDevice");
	SYM(h, attr, "cudaDeviceGetAttribute");
	if (!SYM(h, props, "cudaGetDeviceProperties_v2"))
		SYM(h, props, "cudaGetDeviceProperties");
	SYM(h, malloc_, "cudaMalloc");
	SYM(h, free_, "cudaFree");
	SYM(h, memcpy_, "cudaMemcpy");
	SYM(h, sync, "cudaDeviceSynchronize");
	SYM(h, driver_version, "cudaDriverGetVersion");
	SYM(h, cuda_error, "cudaGetErrorString");
	if (!api->get_device_count || !api->set_device || !api->attr || !api->malloc_ ||
	    !api->free_ || !api->memcpy_ || !api->sync || !api->cuda_error)
		return -1;
	return 0;
}

static int bind_cudnn(struct api *api, void *h)
{
	SYM(h, create, "cudnnCreate");
	SYM(h, destroy, "cudnnDestroy");
	SYM(h, create_tensor, "cudnnCreateTensorDescriptor");
	SYM(h, set_tensor, "cudnnSetTensor4dDescriptor");
	SYM(h, create_filter, "cudnnCreateFilterDescriptor");
	SYM(h, set_filter, "cudnnSetFilter4dDescriptor");
	SYM(h, create_conv, "cudnnCreateConvolutionDescriptor");
	SYM(h, set_conv, "cudnnSetConvolution2dDescriptor");
	SYM(h, set_math, "cudnnSetConvolutionMathType");
	SYM(h, out_dim, "cudnnGetConvolution2dForwardOutputDim");
	SYM(h, algo_v7, "cudnnGetConvolutionForwardAlgorithm_v7");
	SYM(h, ws_size, "cudnnGetConvolutionForwardWorkspaceSize");
	SYM(h, forward, "cudnnConvolutionForward");
	SYM(h, cudnn_error, "cudnnGetErrorString");
	if (!api->create || !api->create_tensor || !api->set_tensor || !api->create_filter ||
	    !api->set_filter || !api->create_conv || !api->set_conv || !api->out_dim ||
	    !api->algo_v7 || !api->ws_size || !api->forward)
		return -1;
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

enum { N = 2, C = 3, H = 32, W = 32, K = 8, R = 3, S = 3, PAD = 1 };

/* The reference: direct cross-correlation on the CPU, in double. */
static void reference(const float *x, const float *w, double *y)
{
	for (int n = 0; n < N; n++)
		for (int k = 0; k < K; k++)
			for (int i = 0; i < H; i++)
				for (int j = 0; j < W; j++) {
					double acc = 0;
					for (int c = 0; c < C; c++)
						for (int r = 0; r < R; r++)
							for (int s = 0; s < S; s++) {
								int ii = i + r - PAD, jj = j + s - PAD;
								if (ii < 0 || jj < 0 || ii >= H || jj >= W)
									continue;
								acc += (double)x[((n * C + c) * H + ii) * W + jj] *
								       w[((k * C + c) * R + r) * S + s];
							}
					y[((n * K + k) * H + i) * W + j] = acc;
				}
}

#define CUDA(call) do { int e_ = (call); if (e_) { \
	printf("dev%d_error %s: %s\n", dev, #call, api->cuda_error(e_)); goto out; } } while (0)
#define DNN(call) do { int e_ = (call); if (e_) { \
	printf("dev%d_error %s: %s\n", dev, #call, \
	       api->cudnn_error ? api->cudnn_error(e_) : "failed"); goto out; } } while (0)

/* Runs the convolution on one device; prints dev<N>_* lines; returns 0 when it matched. */
static int conv_on(const struct api *api, int dev, const float *x, const float *w,
		   const double *ref, float *y)
{
	handle_t h = NULL;
	desc_t xd = NULL, wd = NULL, cd = NULL, yd = NULL;
	void *dx = NULL, *dw = NULL, *dy = NULL, *ws = NULL;
	fwd_perf_t perf[8];
	size_t ws_size = 0, ny = (size_t)N * K * H * W;
	int on, oc, oh, ow, got = 0, ok = -1, major = 0, minor = 0;
	float alpha = 1, beta = 0;
	double t0, max_abs = 0, max_ref = 0;
	char props[8192] = "";

	CUDA(api->set_device(dev));
	api->attr(&major, CC_MAJOR, dev);
	api->attr(&minor, CC_MINOR, dev);
	if (api->props && api->props(props, dev) == 0)
		printf("dev%d_name %.256s\n", dev, props);
	printf("dev%d_cc %d.%d\n", dev, major, minor);
	fflush(stdout);
	DNN(api->create(&h));
	DNN(api->create_tensor(&xd));
	DNN(api->create_tensor(&yd));
	DNN(api->create_filter(&wd));
	DNN(api->create_conv(&cd));
	DNN(api->set_tensor(xd, NCHW, FLOAT, N, C, H, W));
	DNN(api->set_filter(wd, FLOAT, NCHW, K, C, R, S));
	DNN(api->set_conv(cd, PAD, PAD, 1, 1, 1, 1, CROSS_CORRELATION, FLOAT));
	/* Plain FMA: TF32 tensor cores would be right for training and wrong for this check. */
	if (api->set_math)
		api->set_math(cd, FMA_MATH);
	DNN(api->out_dim(cd, xd, wd, &on, &oc, &oh, &ow));
	if (on != N || oc != K || oh != H || ow != W) {
		printf("dev%d_error output is %dx%dx%dx%d, expected %dx%dx%dx%d\n", dev, on, oc, oh,
		       ow, N, K, H, W);
		goto out;
	}
	DNN(api->set_tensor(yd, NCHW, FLOAT, N, K, H, W));
	DNN(api->algo_v7(h, xd, wd, cd, yd, 8, &got, perf));
	if (got < 1) {
		printf("dev%d_error no forward algorithm\n", dev);
		goto out;
	}
	DNN(api->ws_size(h, xd, wd, cd, yd, perf[0].algo, &ws_size));
	CUDA(api->malloc_(&dx, sizeof(float) * N * C * H * W));
	CUDA(api->malloc_(&dw, sizeof(float) * K * C * R * S));
	CUDA(api->malloc_(&dy, sizeof(float) * ny));
	if (ws_size)
		CUDA(api->malloc_(&ws, ws_size));
	CUDA(api->memcpy_(dx, x, sizeof(float) * N * C * H * W, H2D));
	CUDA(api->memcpy_(dw, w, sizeof(float) * K * C * R * S, H2D));
	t0 = now_ms();
	DNN(api->forward(h, &alpha, xd, dx, wd, dw, cd, perf[0].algo, ws, ws_size, &beta, yd, dy));
	CUDA(api->sync());
	printf("dev%d_ms %.3f\n", dev, now_ms() - t0);
	CUDA(api->memcpy_(y, dy, sizeof(float) * ny, D2H));
	for (size_t i = 0; i < ny; i++) {
		double d = fabs((double)y[i] - ref[i]);
		if (!(d <= max_abs))
			max_abs = d;	/* NaN sticks */
		if (fabs(ref[i]) > max_ref)
			max_ref = fabs(ref[i]);
	}
	printf("dev%d_algo %s\n", dev, perf[0].algo >= 0 && perf[0].algo < 8 ?
	       algo_names[perf[0].algo] : "unknown");
	printf("dev%d_max_abs_error %.3g\n", dev, max_abs);
	ok = max_abs <= 1e-3 * (max_ref > 1 ? max_ref : 1) ? 0 : -1;
	printf("dev%d_passed %d\n", dev, ok == 0);
out:
	if (ws)
		api->free_(ws);
	if (dy)
		api->free_(dy);
	if (dw)
		api->free_(dw);
	if (dx)
		api->free_(dx);
	if (h && api->destroy)
		api->destroy(h);
	fflush(stdout);
	return ok;
}

int cvm_smoke_conv(void *cudart, const char *cudart_name, void *cudnn, const char *cudnn_name,
		   int first_dev, bool all, bool *ran)
{
	struct api api_s = { 0 }, *api = &api_s;
	float *x = NULL, *w = NULL, *y = NULL, *first = NULL;
	double *ref = NULL;
	int count = 0, failed = 0;

	*ran = false;
	if (bind_cudart(api, cudart) < 0) {
		printf("gpu_skip %s lacks the runtime entry points\n", cudart_name);
		return 0;
	}
	if (api->driver_version) {
		int dv = 0;
		if (api->driver_version(&dv) == 0)
			printf("driver %d\n", dv);
	}
	if (api->get_device_count(&count) != 0 || count < 1) {
		printf("gpu_skip no CUDA device (%s)\n", count < 1 ? "none visible" : "no driver");
		return 0;
	}
	printf("devices %d\n", count);
	if (bind_cudnn(api, cudnn) < 0) {
		printf("error %s lacks the legacy convolution API\n", cudnn_name);
		return 1;
	}
	size_t nx = (size_t)N * C * H * W, nw = (size_t)K * C * R * S, ny = (size_t)N * K * H * W;
	x = malloc(nx * sizeof(*x));
	w = malloc(nw * sizeof(*w));
	y = malloc(ny * sizeof(*y));
	first = malloc(ny * sizeof(*first));
	ref = malloc(ny * sizeof(*ref));
	if (!x || !w || !y || !first || !ref) {
		failed = 1;
		goto out;
	}
	/* Fixed-seed random data: a failure can be reproduced. */
	srand(12345);
	for (size_t i = 0; i < nx; i++)
		x[i] = (float)rand() / (float)RAND_MAX * 2 - 1;
	for (size_t i = 0; i < nw; i++)
		w[i] = (float)rand() / (float)RAND_MAX * 2 - 1;
	reference(x, w, ref);
	*ran = true;
	for (int dev = all ? 0 : first_dev; dev < (all ? count : first_dev + 1); dev++) {
		if (dev >= count) {
			printf("error no device %d (%d visible)\n", dev, count);
			failed = 1;
			break;
		}
		printf("ran %d\n", dev);
		if (conv_on(api, dev, x, w, ref, y) < 0) {
			failed = 1;
			continue;
		}
		if (dev == (all ? 0 : first_dev)) {
			memcpy(first, y, ny * sizeof(*y));
			continue;
		}
		double diff = 0;
		for (size_t i = 0; i < ny; i++)
			if (fabs((double)y[i] - first[i]) > diff)
				diff = fabs((double)y[i] - first[i]);
		printf("dev%d_diff_from_first %.3g\n", dev, diff);
	}
out:
	fflush(stdout);
	free(x);
	free(w);
	free(y);
	free(first);
	free(ref);
	return failed;
}
