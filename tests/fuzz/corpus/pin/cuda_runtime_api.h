#ifndef __CUDA_RUNTIME_API_H__
#define __CUDA_RUNTIME_API_H__

#define CUDART_VERSION  12040

#include "host_defines.h"
