// nvcc compiles the kernels that call every device function (all_device_calls.cuh), host pass and
// device pass, through ptxas: the device headers must stand alone under nvcc too.
#include "all_device_calls.cuh"
