// The subset of the CUDA driver API's C ABI (cuda.h, CUDA 11.3 and later) that the share
// interposer wraps, declared from NVIDIA's driver API reference: types, constants and function
// signatures. Nothing of NVIDIA's is needed to build; the real libcuda.so.1 is found at run time.
// The test double (tests/interpose/fake_cuda.cc) implements the same declarations.
#ifndef TESSERA_INTERPOSE_CUDA_ABI_H_
#define TESSERA_INTERPOSE_CUDA_ABI_H_

#include <cstddef>
#include <cstdint>

extern "C" {

typedef int CUresult;
enum : int {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_UNKNOWN = 999,
};

typedef int CUdevice;
typedef unsigned long long CUdeviceptr;  // CUdeviceptr_v2: 64-bit on every supported platform
typedef uint64_t cuuint64_t;
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
typedef struct CUarray_st* CUarray;
typedef struct CUmipmappedArray_st* CUmipmappedArray;
typedef struct CUmemPoolHandle_st* CUmemoryPool;
typedef struct CUextMemory_st* CUexternalMemory;
typedef struct CUfunc_st* CUfunction;
typedef struct CUgraphExec_st* CUgraphExec;
typedef struct CUlaunchConfig_st CUlaunchConfig;  // read by the driver only
typedef unsigned long long CUmemGenericAllocationHandle;

typedef struct CUipcMemHandle_st {
  char reserved[64];
} CUipcMemHandle;

// CUarray_format: the element formats whose sizes are known here; others count 4 bytes a channel.
enum : int {
  CU_AD_FORMAT_UNSIGNED_INT8 = 0x01,
  CU_AD_FORMAT_UNSIGNED_INT16 = 0x02,
  CU_AD_FORMAT_UNSIGNED_INT32 = 0x03,
  CU_AD_FORMAT_SIGNED_INT8 = 0x08,
  CU_AD_FORMAT_SIGNED_INT16 = 0x09,
  CU_AD_FORMAT_SIGNED_INT32 = 0x0a,
  CU_AD_FORMAT_HALF = 0x10,
  CU_AD_FORMAT_FLOAT = 0x20,
};

typedef struct CUDA_ARRAY_DESCRIPTOR_st {
  size_t Width;
  size_t Height;
  int Format;  // CUarray_format
  unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR;

typedef struct CUDA_ARRAY3D_DESCRIPTOR_st {
  size_t Width;
  size_t Height;
  size_t Depth;
  int Format;  // CUarray_format
  unsigned int NumChannels;
  unsigned int Flags;
} CUDA_ARRAY3D_DESCRIPTOR;

enum : int { CU_MEM_LOCATION_TYPE_DEVICE = 1 };
typedef struct CUmemLocation_st {
  int type;  // CUmemLocationType
  int id;
} CUmemLocation;

typedef struct CUmemAllocationProp_st {
  int type;                  // CUmemAllocationType
  int requestedHandleTypes;  // CUmemAllocationHandleType
  CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} CUmemAllocationProp;

typedef struct CUDA_EXTERNAL_MEMORY_HANDLE_DESC_st {
  int type;  // CUexternalMemoryHandleType
  union {
    int fd;
    struct {
      void* handle;
      const void* name;
    } win32;
    const void* nvSciBufObject;
  } handle;
  unsigned long long size;
  unsigned int flags;
  unsigned int reserved[16];
} CUDA_EXTERNAL_MEMORY_HANDLE_DESC;

typedef int CUdriverProcAddressQueryResult;

// Every entry point the interposer wraps or calls: X(name, return type, parameters, arguments).
// Names are the driver's exported symbols (the versioned ones cuda.h maps the plain names to).
#define TESSERA_CUDA_WRAPPED(X)                                                                  \
  X(cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize))                      \
  X(cuMemAllocPitch_v2,                                                                          \
    (CUdeviceptr * dptr, size_t * pitch, size_t width, size_t height, unsigned int element),     \
    (dptr, pitch, width, height, element))                                                       \
  X(cuMemAllocManaged, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags),                \
    (dptr, bytesize, flags))                                                                     \
  X(cuMemFree_v2, (CUdeviceptr dptr), (dptr))                                                    \
  X(cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytesize, CUstream stream),                     \
    (dptr, bytesize, stream))                                                                    \
  X(cuMemAllocAsync_ptsz, (CUdeviceptr * dptr, size_t bytesize, CUstream stream),                \
    (dptr, bytesize, stream))                                                                    \
  X(cuMemAllocFromPoolAsync,                                                                     \
    (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream stream),                   \
    (dptr, bytesize, pool, stream))                                                              \
  X(cuMemAllocFromPoolAsync_ptsz,                                                                \
    (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream stream),                   \
    (dptr, bytesize, pool, stream))                                                              \
  X(cuMemFreeAsync, (CUdeviceptr dptr, CUstream stream), (dptr, stream))                         \
  X(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream stream), (dptr, stream))                    \
  X(cuMemCreate,                                                                                 \
    (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp* prop,        \
     unsigned long long flags),                                                                  \
    (handle, size, prop, flags))                                                                 \
  X(cuMemRelease, (CUmemGenericAllocationHandle handle), (handle))                               \
  X(cuArrayCreate_v2, (CUarray * array, const CUDA_ARRAY_DESCRIPTOR* desc), (array, desc))       \
  X(cuArray3DCreate_v2, (CUarray * array, const CUDA_ARRAY3D_DESCRIPTOR* desc), (array, desc))   \
  X(cuArrayDestroy, (CUarray array), (array))                                                    \
  X(cuMipmappedArrayCreate,                                                                      \
    (CUmipmappedArray * array, const CUDA_ARRAY3D_DESCRIPTOR* desc, unsigned int levels),        \
    (array, desc, levels))                                                                       \
  X(cuMipmappedArrayDestroy, (CUmipmappedArray array), (array))                                  \
  X(cuIpcGetMemHandle, (CUipcMemHandle * handle, CUdeviceptr dptr), (handle, dptr))              \
  X(cuIpcOpenMemHandle, (CUdeviceptr * dptr, CUipcMemHandle handle, unsigned int flags),         \
    (dptr, handle, flags))                                                                       \
  X(cuIpcOpenMemHandle_v2, (CUdeviceptr * dptr, CUipcMemHandle handle, unsigned int flags),      \
    (dptr, handle, flags))                                                                       \
  X(cuIpcCloseMemHandle, (CUdeviceptr dptr), (dptr))                                             \
  X(cuImportExternalMemory,                                                                      \
    (CUexternalMemory * mem, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* desc), (mem, desc))         \
  X(cuDestroyExternalMemory, (CUexternalMemory mem), (mem))                                      \
  X(cuMemGetInfo_v2, (size_t * free, size_t * total), (free, total))                             \
  X(cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev), (bytes, dev))                           \
  X(cuLaunchKernel,                                                                              \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,           \
     unsigned int by, unsigned int bz, unsigned int shared, CUstream stream, void** params,      \
     void** extra),                                                                              \
    (f, gx, gy, gz, bx, by, bz, shared, stream, params, extra))                                  \
  X(cuLaunchKernel_ptsz,                                                                         \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,           \
     unsigned int by, unsigned int bz, unsigned int shared, CUstream stream, void** params,      \
     void** extra),                                                                              \
    (f, gx, gy, gz, bx, by, bz, shared, stream, params, extra))                                  \
  X(cuLaunchKernelEx, (const CUlaunchConfig* config, CUfunction f, void** params, void** extra), \
    (config, f, params, extra))                                                                  \
  X(cuLaunchKernelEx_ptsz,                                                                       \
    (const CUlaunchConfig* config, CUfunction f, void** params, void** extra),                   \
    (config, f, params, extra))                                                                  \
  X(cuLaunchCooperativeKernel,                                                                   \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,           \
     unsigned int by, unsigned int bz, unsigned int shared, CUstream stream, void** params),     \
    (f, gx, gy, gz, bx, by, bz, shared, stream, params))                                         \
  X(cuLaunchCooperativeKernel_ptsz,                                                              \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,           \
     unsigned int by, unsigned int bz, unsigned int shared, CUstream stream, void** params),     \
    (f, gx, gy, gz, bx, by, bz, shared, stream, params))                                         \
  X(cuGraphLaunch, (CUgraphExec graph, CUstream stream), (graph, stream))                        \
  X(cuGraphLaunch_ptsz, (CUgraphExec graph, CUstream stream), (graph, stream))                   \
  X(cuGetProcAddress, (const char* symbol, void** pfn, int version, cuuint64_t flags),           \
    (symbol, pfn, version, flags))                                                               \
  X(cuGetProcAddress_v2,                                                                         \
    (const char* symbol, void** pfn, int version, cuuint64_t flags,                              \
     CUdriverProcAddressQueryResult* status),                                                    \
    (symbol, pfn, version, flags, status))

// Entry points the interposer calls but does not wrap.
#define TESSERA_CUDA_CALLED(X)                                                      \
  X(cuCtxGetDevice, (CUdevice * dev), (dev))                                        \
  X(cuMemGetAddressRange_v2, (CUdeviceptr * base, size_t * size, CUdeviceptr dptr), \
    (base, size, dptr))                                                             \
  X(cuDeviceGetCount, (int* count), (count))

// Declares an entry point of the lists above as a C function.
#define TESSERA_CUDA_DECLARE(name, params, args) CUresult name params;

}  // extern "C"

#endif  // TESSERA_INTERPOSE_CUDA_ABI_H_
