/* Shared by the fuzz targets: reading the fuzzer's bytes as choices, and a
   hard check that aborts (libFuzzer then saves the input that broke it). */
#ifndef MMB_FUZZ_INPUT_H
#define MMB_FUZZ_INPUT_H

#include <mmb/mmb.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct input {
  const uint8_t *p;
  size_t n;
} input;

/* The next byte; 0 once the input is spent (so every input is finite). */
static inline uint8_t in_u8(input *in) {
  if (!in->n) return 0;
  in->n--;
  return *in->p++;
}

static inline uint32_t in_u32(input *in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v = v << 8 | in_u8(in);
  return v;
}

/* Mostly small, sometimes an edge: 0, 1, huge, SIZE_MAX. */
static inline size_t in_size(input *in, size_t small) {
  uint8_t k = in_u8(in);
  switch (k >> 5) {
    case 0: return 0;
    case 1: return (size_t)1 << (in_u8(in) % 64);
    case 2: return SIZE_MAX - in_u8(in);
    default: return small ? 1 + (k + (size_t)in_u8(in) * 31) % small : 0;
  }
}

#define CHECK(cond, ...)                                                             \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "fuzz check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                  \
      fprintf(stderr, "\n");                                                         \
      abort();                                                                       \
    }                                                                                \
  } while (0)

/* An error code the API can return at all. */
#define CHECK_ERROR(err) \
  CHECK((unsigned)(err) <= MMB_IO, "unknown error %d", (int)(err))

#endif /* MMB_FUZZ_INPUT_H */
