// TETHER_UNDER_ASAN: defined when the test is built with AddressSanitizer
// (GCC's __SANITIZE_ADDRESS__, clang's __has_feature), for the tests that
// cannot run under it (an address-space limit, glibc's heap statistics).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define TETHER_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TETHER_UNDER_ASAN 1
#endif
#endif
