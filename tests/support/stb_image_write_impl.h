/* stb_image_write with its implementation, for the programs that write test images (the image
 * fixtures, bench_jpeg): include it once per program. Debian's libstb-dev puts it in stb/. */
#ifndef SUITE_TESTS_STB_IMAGE_WRITE_IMPL_H
#define SUITE_TESTS_STB_IMAGE_WRITE_IMPL_H

#define STB_IMAGE_WRITE_IMPLEMENTATION
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#if __has_include(<stb_image_write.h>)
#include <stb_image_write.h>
#else
#include <stb/stb_image_write.h>
#endif
#pragma GCC diagnostic pop

#endif
