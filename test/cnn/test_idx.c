/* IDX loading: a set made by the test loads byte for byte, from memory and
   from files; every defect of the files is refused with a message (MMB_IO)
   and leaves nothing allocated. */
#include "cnn_test.h"

#include <sys/stat.h>
#include <unistd.h>

enum { N = 12, H = 3, W = 4 };

static idx_bytes small_set(void) {
  unsigned char px[N * H * W], lab[N];
  for (size_t i = 0; i < sizeof px; i++) px[i] = (unsigned char)(i * 7);
  for (size_t i = 0; i < N; i++) lab[i] = (unsigned char)(i % 10);
  return idx_make(N, H, W, px, lab);
}

static mmbMemInterface *host(void) { return test_interface(MMB_PROVIDER_DEFAULT, 0); }

static void assert_loaded(const cnn_dataset *ds, const idx_bytes *b) {
  cr_assert_eq(ds->n, N);
  cr_assert_eq(ds->rows, H);
  cr_assert_eq(ds->cols, W);
  cr_assert_eq(memcmp(mmb_array_ptr(ds->images), b->images + 16, N * H * W), 0);
  cr_assert_eq(memcmp(mmb_array_ptr(ds->labels), b->labels + 8, N), 0);
}

MMB_TEST(idx, a_set_loads_from_memory) {
  idx_bytes b = small_set();
  mmbMemInterface *iface = host();
  cnn_dataset ds;
  char err[256];
  OK(cnn_dataset_from_memory(b.images, b.images_len, b.labels, b.labels_len, 10, iface, &ds, err,
                             sizeof err));
  assert_loaded(&ds, &b);
  OK(cnn_dataset_destroy(&ds));
  OK(mmb_interface_destroy(iface));
  idx_free(&b);
}

/* Writes the set's files under a fresh directory named in dir. */
static void write_files(char *dir, const idx_bytes *b) {
  snprintf(dir, 64, "/tmp/cnn-idx-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  char path[128];
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", dir);
  FILE *f = fopen(path, "wb");
  cr_assert(f && fwrite(b->images, 1, b->images_len, f) == b->images_len);
  fclose(f);
  snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte", dir);
  f = fopen(path, "wb");
  cr_assert(f && fwrite(b->labels, 1, b->labels_len, f) == b->labels_len);
  fclose(f);
}

static void remove_files(const char *dir) {
  char path[128];
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte", dir);
  unlink(path);
  rmdir(dir);
}

MMB_TEST(idx, a_set_loads_from_files) {
  idx_bytes b = small_set();
  char dir[64], err[256];
  write_files(dir, &b);
  mmbMemInterface *iface = host();
  cnn_dataset ds;
  OK(cnn_dataset_load(dir, "train", 10, iface, &ds, err, sizeof err));
  assert_loaded(&ds, &b);
  OK(cnn_dataset_destroy(&ds));
  FAILS(cnn_dataset_load(dir, "t10k", 10, iface, &ds, err, sizeof err), MMB_IO);
  cr_assert(strstr(err, "t10k-images-idx3-ubyte") && strstr(err, "No such file"), "%s", err);
  remove_files(dir);
  OK(mmb_interface_destroy(iface));
  idx_free(&b);
}

/* Each defect, from memory: the error and a word of its message. */
static void refused(idx_bytes *b, size_t images_len, size_t labels_len, size_t classes,
                    const char *word) {
  mmbMemInterface *iface = host();
  cnn_dataset ds = {.n = 77};
  char err[256] = "";
  FAILS(cnn_dataset_from_memory(b->images, images_len, b->labels, labels_len, classes, iface, &ds,
                                err, sizeof err),
        MMB_IO);
  cr_assert(strstr(err, word), "message '%s' lacks '%s'", err, word);
  cr_assert_eq(ds.n, 77, "out-parameter written on failure");
  mmbStats st;
  OK(mmb_interface_get_stats(iface, &st));
  cr_assert_eq(st.used_current, 0, "left allocated on failure");
  OK(mmb_interface_destroy(iface));
}

MMB_TEST(idx, defects_are_refused_with_a_message) {
  idx_bytes b = small_set();
  refused(&b, b.images_len - 1, b.labels_len, 10, "cut short");       /* short images */
  refused(&b, b.images_len, b.labels_len - 1, 10, "cut short");       /* short labels */
  refused(&b, 10, b.labels_len, 10, "header cut short");
  refused(&b, 3, b.labels_len, 10, "shorter than an IDX header");
  be32(b.images, 0x802);
  refused(&b, b.images_len, b.labels_len, 10, "magic");               /* wrong magic */
  be32(b.images, 0x803);
  be32(b.labels, 0x803);
  refused(&b, b.images_len, b.labels_len, 10, "magic");
  be32(b.labels, 0x801);
  be32(b.labels + 4, N - 1);
  refused(&b, b.images_len, b.labels_len - 1, 10, "labels");          /* counts disagree */
  be32(b.labels + 4, N);
  refused(&b, b.images_len, b.labels_len, 9, "not below 9");          /* label 9 of 9 classes */
  be32(b.images + 4, 0);
  refused(&b, 16, b.labels_len, 10, "zero");                          /* zero images */
  be32(b.images + 4, N);
  idx_bytes longer = b;
  longer.images = malloc(b.images_len + 5);
  memcpy(longer.images, b.images, b.images_len);
  refused(&longer, b.images_len + 5, b.labels_len, 10, "after the data");
  free(longer.images);
  idx_free(&b);
}

MMB_TEST(idx, a_file_cut_short_is_refused_before_it_is_read) {
  idx_bytes b = small_set();
  char dir[64], path[128], err[256] = "";
  write_files(dir, &b);
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", dir);
  cr_assert_eq(truncate(path, (off_t)b.images_len - 7), 0);
  mmbMemInterface *iface = host();
  cnn_dataset ds;
  FAILS(cnn_dataset_load(dir, "train", 10, iface, &ds, err, sizeof err), MMB_IO);
  cr_assert(strstr(err, "cut short"), "%s", err);
  remove_files(dir);
  OK(mmb_interface_destroy(iface));
  idx_free(&b);
}
